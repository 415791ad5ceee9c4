"""sort-simplifier: expected output, and interpreter equivalence on random inputs."""
import pytest

from pass_testing import PassTester, body

# Few distinct integer keys, so that stability matters.
SORT_SIMPLIFIER = PassTester("sort-simplifier", exact=True, ints=(0, 3))
optimised, assert_same_outputs = SORT_SIMPLIFIER.optimised, SORT_SIMPLIFIER.assert_same_outputs
assert_unchanged = SORT_SIMPLIFIER.assert_unchanged


THREE_OPERANDS = """HloModule m
cmp {
  k0 = f32[] parameter(0)
  k1 = f32[] parameter(1)
  a0 = s32[] parameter(2)
  a1 = s32[] parameter(3)
  b0 = f32[] parameter(4)
  b1 = f32[] parameter(5)
  ROOT lt = pred[] compare(k0, k1), direction=LT
}
ENTRY e {
  keys = f32[6] parameter(0)
  a = s32[6] parameter(1)
  b = f32[6] parameter(2)
  s = (f32[6], s32[6], f32[6]) sort(keys, a, b), dimensions={0}, is_stable=true, to_apply=cmp
  g1 = s32[6] get-tuple-element(s), index=1
  g1b = s32[6] get-tuple-element(s), index=1
  ROOT r = (s32[6], s32[6]) tuple(g1, g1b)
}
"""


def test_removes_unread_operands_and_their_comparator_parameters():
    module, changed = optimised(THREE_OPERANDS)
    assert changed
    # keys stay (the comparator reads them), a stays (read after the sort), b goes.
    assert body(module) == """%cmp.clone (k0.clone: f32[], k1.clone: f32[], a0.clone: s32[], a1.clone: s32[]) -> pred[] {
  %k0.clone = f32[] parameter(0)
  %k1.clone = f32[] parameter(1)
  %a0.clone = s32[] parameter(2)
  %a1.clone = s32[] parameter(3)
  ROOT %lt.clone = pred[] compare(%k0.clone, %k1.clone), direction=LT
}

ENTRY %e (keys: f32[6], a: s32[6], b: f32[6]) -> (s32[6], s32[6]) {
  %keys = f32[6]{0} parameter(0)
  %a = s32[6]{0} parameter(1)
  %b = f32[6]{0} parameter(2)
  %s.1 = (f32[6]{0}, s32[6]{0}) sort(%keys, %a), dimensions={0}, is_stable=true, to_apply=%cmp.clone
  %g1 = s32[6]{0} get-tuple-element(%s.1), index=1
  %g1b = s32[6]{0} get-tuple-element(%s.1), index=1
  ROOT %r = (s32[6]{0}, s32[6]{0}) tuple(%g1, %g1b)
}
"""
    assert_same_outputs(THREE_OPERANDS)


def test_a_single_remaining_operand_gives_an_array_sort():
    text = """HloModule m
cmp {
  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  k0 = s32[] parameter(2)
  k1 = s32[] parameter(3)
  ROOT gt = pred[] compare(k0, k1), direction=GT
}
ENTRY e {
  a = s32[2,5] parameter(0)
  k = s32[2,5] parameter(1)
  s = (s32[2,5], s32[2,5]) sort(a, k), dimensions={1}, to_apply=cmp
  ROOT g = s32[2,5] get-tuple-element(s), index=1
}
"""
    module, changed = optimised(text)
    assert changed
    assert body(module) == """%cmp.clone (k0.clone: s32[], k1.clone: s32[]) -> pred[] {
  %k0.clone = s32[] parameter(0)
  %k1.clone = s32[] parameter(1)
  ROOT %gt.clone = pred[] compare(%k0.clone, %k1.clone), direction=GT
}

ENTRY %e (a: s32[2,5], k: s32[2,5]) -> s32[2,5] {
  %a = s32[2,5]{1,0} parameter(0)
  %k = s32[2,5]{1,0} parameter(1)
  ROOT %s.1 = s32[2,5]{1,0} sort(%k), dimensions={1}, to_apply=%cmp.clone
}
"""
    assert_same_outputs(text)


@pytest.mark.parametrize("entry", [
    # the sort is the root: its users cannot be analysed
    """  ROOT s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp""",
    # a user that is not a get-tuple-element
    """  s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp
  ROOT t = ((f32[4], s32[4])) tuple(s)""",
    # every result is read
    """  s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp
  g0 = f32[4] get-tuple-element(s), index=0
  g1 = s32[4] get-tuple-element(s), index=1
  ROOT t = (s32[4], f32[4]) tuple(g1, g0)""",
])
def test_leaves_sorts_it_cannot_narrow(entry):
    text = f"""HloModule m
cmp {{
  k0 = f32[] parameter(0)
  k1 = f32[] parameter(1)
  v0 = s32[] parameter(2)
  v1 = s32[] parameter(3)
  ROOT lt = pred[] compare(k0, k1), direction=LT
}}
ENTRY e {{
  k = f32[4] parameter(0)
  v = s32[4] parameter(1)
{entry}
}}
"""
    assert_unchanged(text)


def test_values_the_comparator_reads_are_kept_even_when_unused():
    text = """HloModule m
cmp {
  k0 = s32[] parameter(0)
  k1 = s32[] parameter(1)
  t0 = f32[] parameter(2)
  t1 = f32[] parameter(3)
  w0 = f32[] parameter(4)
  w1 = f32[] parameter(5)
  eq = pred[] compare(k0, k1), direction=EQ
  lt = pred[] compare(k0, k1), direction=LT
  tie = pred[] compare(t0, t1), direction=LT
  ROOT r = pred[] select(eq, tie, lt)
}
ENTRY e {
  k = s32[8] parameter(0)
  t = f32[8] parameter(1)
  u = f32[8] parameter(2)
  s = (s32[8], f32[8], f32[8]) sort(k, t, u), dimensions={0}, to_apply=cmp
  ROOT g = s32[8] get-tuple-element(s), index=0
}
"""
    module, changed = optimised(text, "sort-simplifier,dce")
    assert changed
    sort = module.entry.root.operands[0]
    assert [o.name for o in sort.operands] == ["k", "t"]
    assert [p.name for p in sort.attrs["to_apply"].parameters] == ["k0.clone", "k1.clone", "t0.clone", "t1.clone"]
    assert_same_outputs(text, "sort-simplifier,dce")
