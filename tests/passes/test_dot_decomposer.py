"""dot-decomposer: expected output per rule, interpreter equivalence on random inputs."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.passes.dot_decomposer import is_canonical
from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester, assert_unchanged, body

optimise = PassTester("dot-decomposer", seeds=(0, 1), rtol=1e-5, atol=1e-5).optimise


def all_dots_canonical(module) -> bool:
    for inst in module.instructions():
        if inst.opcode == "dot":
            lhs, rhs = inst.operands
            a = inst.attrs
            if not (is_canonical(lhs.shape, a.get("lhs_contracting_dims", ()), a.get("lhs_batch_dims", ()))
                    and is_canonical(rhs.shape, a.get("rhs_contracting_dims", ()), a.get("rhs_batch_dims", ()))):
                return False
    return True


def test_registered():
    assert available_passes()["dot-decomposer"].description


def test_canonical_dots_are_left_alone():
    for text in ["""HloModule m
ENTRY e {
  a = f32[3,4] parameter(0)
  b = f32[4,5] parameter(1)
  ROOT d = f32[3,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", """HloModule m
ENTRY e {
  a = f32[2,4,3] parameter(0)
  b = f32[2,5,4] parameter(1)
  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}
}
""", """HloModule m
ENTRY e {
  a = f32[3,4] parameter(0)
  b = f32[4] parameter(1)
  ROOT d = f32[3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""]:
        assert_unchanged(text, "dot-decomposer")


def test_batch_dims_moved_first_and_free_dims_merged():
    after, changed = optimise("""HloModule m
ENTRY e {
  a = f32[3,2,4,6] parameter(0)
  b = f32[4,2,5,7] parameter(1)
  ROOT d = f32[2,3,6,5,7] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}
}
""")
    assert changed
    assert body(after) == """ENTRY %e (a: f32[3,2,4,6], b: f32[4,2,5,7]) -> f32[2,3,6,5,7] {
  %a = f32[3,2,4,6]{3,2,1,0} parameter(0)
  %b = f32[4,2,5,7]{3,2,1,0} parameter(1)
  %transpose = f32[2,3,6,4]{3,2,1,0} transpose(%a), dimensions={1,0,3,2}
  %reshape = f32[2,18,4]{2,1,0} reshape(%transpose)
  %transpose.1 = f32[2,4,5,7]{3,2,1,0} transpose(%b), dimensions={1,0,2,3}
  %reshape.1 = f32[2,4,35]{2,1,0} reshape(%transpose.1)
  %dot = f32[2,18,35]{2,1,0} dot(%reshape, %reshape.1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={highest,default}
  ROOT %reshape.2 = f32[2,3,6,5,7]{4,3,2,1,0} reshape(%dot)
}
"""


def test_several_contracting_dims_are_merged_without_needless_transposes():
    after, _ = optimise("""HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[3,4,5] parameter(1)
  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
}
""")
    assert body(after) == """ENTRY %e (a: f32[2,3,4], b: f32[3,4,5]) -> f32[2,5] {
  %a = f32[2,3,4]{2,1,0} parameter(0)
  %b = f32[3,4,5]{2,1,0} parameter(1)
  %reshape = f32[2,12]{1,0} reshape(%a)
  %reshape.1 = f32[12,5]{1,0} reshape(%b)
  ROOT %dot = f32[2,5]{1,0} dot(%reshape, %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_outer_product_gets_a_unit_contracting_dim():
    after, _ = optimise("""HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[4] parameter(1)
  ROOT d = f32[3,4] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}
}
""")
    assert body(after) == """ENTRY %e (a: f32[3], b: f32[4]) -> f32[3,4] {
  %a = f32[3]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %reshape = f32[3,1]{1,0} reshape(%a)
  %reshape.1 = f32[1,4]{1,0} reshape(%b)
  ROOT %dot = f32[3,4]{1,0} dot(%reshape, %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_unit_free_dims_are_dropped_and_restored():
    after, _ = optimise("""HloModule m
ENTRY e {
  a = f32[1,4,2] parameter(0)
  b = f32[2,4,5] parameter(1)
  ROOT d = f32[1,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}
}
""")
    assert all_dots_canonical(after)
    assert body(after) == """ENTRY %e (a: f32[1,4,2], b: f32[2,4,5]) -> f32[1,5] {
  %a = f32[1,4,2]{2,1,0} parameter(0)
  %b = f32[2,4,5]{2,1,0} parameter(1)
  %reshape = f32[8]{0} reshape(%a)
  %transpose = f32[4,2,5]{2,1,0} transpose(%b), dimensions={1,0,2}
  %reshape.1 = f32[8,5]{1,0} reshape(%transpose)
  %dot = f32[5]{0} dot(%reshape, %reshape.1), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %reshape.2 = f32[1,5]{1,0} reshape(%dot)
}
"""


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_dots_become_canonical_with_the_same_values(data):
    sizes = {"b": 2, "c": 3, "k": 2, "m": 3, "n": 2}
    batch = data.draw(st.integers(0, 2))
    contracting = data.draw(st.integers(0, 2))
    lhs_free = data.draw(st.integers(0, 2))
    rhs_free = data.draw(st.integers(0, 2))
    b_names = [f"b{i}" for i in range(batch)]
    k_names = [f"k{i}" for i in range(contracting)]
    lhs_names = data.draw(st.permutations(b_names + k_names + [f"m{i}" for i in range(lhs_free)]))
    rhs_names = data.draw(st.permutations(b_names + k_names + [f"n{i}" for i in range(rhs_free)]))

    def size(name):
        return sizes[name[0]] + int(name[1:])

    def shape(names):
        return "f32[" + ",".join(str(size(n)) for n in names) + "]"

    def dims(names, wanted):
        return "{" + ",".join(str(names.index(w)) for w in wanted) + "}"

    result = b_names + [n for n in lhs_names if n[0] == "m"] + [n for n in rhs_names if n[0] == "n"]
    text = f"""HloModule m
ENTRY e {{
  a = {shape(lhs_names)} parameter(0)
  b = {shape(rhs_names)} parameter(1)
  ROOT d = {shape(result)} dot(a, b), lhs_batch_dims={dims(lhs_names, b_names)}, lhs_contracting_dims={dims(lhs_names, k_names)}, rhs_batch_dims={dims(rhs_names, b_names)}, rhs_contracting_dims={dims(rhs_names, k_names)}
}}
"""
    after, _ = optimise(text)
    assert all_dots_canonical(after)
