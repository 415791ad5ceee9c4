"""dot-decomposer: the expected output per rule is in tests/golden/passes/dot_decomposer.hlo;
here, random dots become canonical and keep their values."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.passes.dot_decomposer import is_canonical
from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester

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
