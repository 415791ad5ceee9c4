"""reshape-mover: expected output per rule, interpreter equivalence on random inputs."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hlo
from hlo import parse_module
from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester, assert_unchanged, body, optimised

optimise = PassTester("reshape-mover,dce", seeds=(0, 1), ints=(-5, 5)).optimise


def test_registered():
    assert available_passes()["reshape-mover"].description


def test_equivalent_transposes_sink_and_cancel_constants_are_rearranged():
    after, _ = optimise("""HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  t0 = f32[3,2] transpose(p0), dimensions={1,0}
  t1 = f32[3,2] transpose(p1), dimensions={1,0}
  a = f32[3,2] add(t0, t1)
  c = f32[3,2] constant({{1,2},{3,4},{5,6}})
  m = f32[3,2] multiply(a, c)
  ROOT r = f32[2,3] transpose(m), dimensions={1,0}
}
""")
    assert body(after) == """ENTRY %e (p0: f32[2,3], p1: f32[2,3]) -> f32[2,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  %p1 = f32[2,3]{1,0} parameter(1)
  %a.1 = f32[2,3]{1,0} add(%p0, %p1)
  %constant = f32[2,3]{1,0} constant({ { 1, 3, 5 }, { 2, 4, 6 } })
  ROOT %m.1 = f32[2,3]{1,0} multiply(%a.1, %constant)
}
"""


def test_reshapes_sink_through_a_chain_with_a_scalar_broadcast():
    after, _ = optimise("""HloModule m
ENTRY e {
  p0 = f32[6] parameter(0)
  p1 = f32[6] parameter(1)
  r0 = f32[2,3] reshape(p0)
  r1 = f32[2,3] reshape(p1)
  s = f32[] constant(2)
  b = f32[2,3] broadcast(s), dimensions={}
  m = f32[2,3] multiply(r0, b)
  ROOT x = f32[2,3] subtract(m, r1)
}
""")
    assert body(after) == """ENTRY %e (p0: f32[6], p1: f32[6]) -> f32[2,3] {
  %p0 = f32[6]{0} parameter(0)
  %p1 = f32[6]{0} parameter(1)
  %s = f32[] constant(2)
  %broadcast = f32[6]{0} broadcast(%s), dimensions={}
  %m.1 = f32[6]{0} multiply(%p0, %broadcast)
  %x.1 = f32[6]{0} subtract(%m.1, %p1)
  ROOT %reshape.1 = f32[2,3]{1,0} reshape(%x.1)
}
"""


def test_vector_broadcast_that_stays_in_order_under_the_transpose():
    after, _ = optimise("""HloModule m
ENTRY e {
  p = f32[2,3,4] parameter(0)
  v = f32[2] parameter(1)
  t = f32[2,4,3] transpose(p), dimensions={0,2,1}
  b = f32[2,4,3] broadcast(v), dimensions={0}
  ROOT a = f32[2,4,3] add(t, b)
}
""")
    assert body(after) == """ENTRY %e (p: f32[2,3,4], v: f32[2]) -> f32[2,4,3] {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %v = f32[2]{0} parameter(1)
  %broadcast = f32[2,3,4]{2,1,0} broadcast(%v), dimensions={0}
  %a.1 = f32[2,3,4]{2,1,0} add(%p, %broadcast)
  ROOT %transpose = f32[2,4,3]{2,1,0} transpose(%a.1), dimensions={0,2,1}
}
"""


def test_a_moved_transpose_meets_its_inverse_in_the_next_candidate():
    # `a` and `m` move in the same round; `back` must not be bypassed before `m` has moved.
    after, _ = optimise("""HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  t0 = f32[3,2] transpose(p0), dimensions={1,0}
  t1 = f32[3,2] transpose(p1), dimensions={1,0}
  a = f32[3,2] add(t0, t1)
  back = f32[2,3] transpose(a), dimensions={1,0}
  c = f32[2,3] constant({{1,2,3},{4,5,6}})
  ROOT m = f32[2,3] multiply(back, c)
}
""")
    assert body(after) == """ENTRY %e (p0: f32[2,3], p1: f32[2,3]) -> f32[2,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  %p1 = f32[2,3]{1,0} parameter(1)
  %a.1 = f32[2,3]{1,0} add(%p0, %p1)
  %constant.1 = f32[2,3]{1,0} constant({ { 1, 2, 3 }, { 4, 5, 6 } })
  ROOT %m.2 = f32[2,3]{1,0} multiply(%a.1, %constant.1)
}
"""


def test_compare_keeps_its_result_type():
    after, _ = optimise("""HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  r0 = f32[2,2] reshape(p0)
  r1 = f32[2,2] reshape(p1)
  ROOT c = pred[2,2] compare(r0, r1), direction=LT
}
""")
    assert body(after) == """ENTRY %e (p0: f32[4], p1: f32[4]) -> pred[2,2] {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[4]{0} parameter(1)
  %c.1 = pred[4]{0} compare(%p0, %p1), direction=LT
  ROOT %reshape = pred[2,2]{1,0} reshape(%c.1)
}
"""


UNCHANGED = {
    "rearrange with a user that does not move": """HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  t0 = f32[3,2] transpose(p0), dimensions={1,0}
  t1 = f32[3,2] transpose(p1), dimensions={1,0}
  a = f32[3,2] add(t0, t1)
  ROOT r = (f32[3,2], f32[3,2]) tuple(a, t0)
}
""",
    "different permutations": """HloModule m
ENTRY e {
  p0 = f32[2,2,2] parameter(0)
  p1 = f32[2,2,2] parameter(1)
  t0 = f32[2,2,2] transpose(p0), dimensions={1,0,2}
  t1 = f32[2,2,2] transpose(p1), dimensions={0,2,1}
  ROOT a = f32[2,2,2] add(t0, t1)
}
""",
    "vector broadcast under a reshape": """HloModule m
ENTRY e {
  p = f32[6] parameter(0)
  v = f32[2] parameter(1)
  r = f32[2,3] reshape(p)
  b = f32[2,3] broadcast(v), dimensions={0}
  ROOT a = f32[2,3] add(r, b)
}
""",
    "only a trivial rearrange of a constant": """HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  c = f32[4] constant({1,2,3,4})
  r = f32[2,2] reshape(c)
  ROOT a = f32[2,2] add(p, r)
}
""",
    "transpose result is also the root's operand through a non-elementwise op": """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  t = f32[3,2] transpose(p), dimensions={1,0}
  ROOT s = f32[3,1] slice(t), slice={[0:3], [0:1]}
}
""",
}


def test_unchanged_cases():
    for why, text in UNCHANGED.items():
        assert_unchanged(text, "reshape-mover", why)


def test_rng_operand_gets_an_explicit_rearrange_and_stays():
    text = """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  u = f32[3,2] rng(lo, hi), distribution=rng_uniform
  t = f32[3,2] transpose(p), dimensions={1,0}
  ROOT a = f32[3,2] add(t, u)
}
"""
    module, changed = optimised(text, "reshape-mover,dce")
    assert changed
    assert body(module) == """ENTRY %e (p: f32[2,3]) -> f32[3,2] {
  %p = f32[2,3]{1,0} parameter(0)
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %u = f32[3,2]{1,0} rng(%lo, %hi), distribution=rng_uniform
  %transpose = f32[2,3]{1,0} transpose(%u), dimensions={1,0}
  %a.1 = f32[2,3]{1,0} add(%p, %transpose)
  ROOT %transpose.1 = f32[3,2]{1,0} transpose(%a.1), dimensions={1,0}
}
"""
    # Same seed, same draws: the rng is neither duplicated nor reshaped.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(hlo.run(parse_module(text), x)[0], hlo.run(module, x)[0])


@settings(max_examples=25, deadline=None)
@given(perm=st.permutations([0, 1, 2]), ops=st.lists(st.sampled_from(["add", "multiply", "maximum"]),
                                                      min_size=1, max_size=3))
def test_random_transpose_chains_keep_their_values(perm, ops):
    dims = (2, 3, 4)
    tdims = tuple(dims[p] for p in perm)
    shape = "f32[" + ",".join(map(str, tdims)) + "]"
    lines = [f"  p{i} = f32[2,3,4] parameter({i})" for i in range(len(ops) + 1)]
    lines += [f"  t{i} = {shape} transpose(p{i}), dimensions={{{','.join(map(str, perm))}}}"
              for i in range(len(ops) + 1)]
    acc = "t0"
    for i, op in enumerate(ops):
        lines.append(f"  e{i} = {shape} {op}({acc}, t{i + 1})")
        acc = f"e{i}"
    lines.append(f"  ROOT n = {shape} negate({acc})")
    text = "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"
    after, _ = optimise(text)
    if list(perm) != [0, 1, 2]:
        # Everything elementwise ran before the single remaining transpose, the root.
        assert after.entry.root.opcode == "transpose"
        assert [i.opcode for i in after.entry.instructions].count("transpose") == 1
