"""while-loop-simplifier: trip counts, and the dead-element analysis on groups of elements (the
expected output per rule is in tests/golden/passes/while_loop_simplifier.hlo)."""
import pytest

from hlo import parse_module
from pass_testing import PassTester, body
from hlo.passes.while_loop_simplifier import dead_state_indices
from hlo.passes.while_loops import known_trip_count

WHILE_LOOP_SIMPLIFIER = PassTester("while-loop-simplifier", rtol=1e-6, atol=0, ints=(-3, 4))
optimised, assert_same_outputs = WHILE_LOOP_SIMPLIFIER.optimised, WHILE_LOOP_SIMPLIFIER.assert_same_outputs


def counted_loop(limit: str, start: str = "0", step: str = "1", direction: str = "LT") -> str:
    return f"""HloModule m
body {{
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  step = s32[] constant({step})
  j = s32[] add(i, step)
  x = f32[4] get-tuple-element(s), index=1
  x2 = f32[4] sine(x)
  ROOT r = (s32[], f32[4]) tuple(j, x2)
}}
cond {{
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({limit})
  ROOT c = pred[] compare(i, n), direction={direction}
}}
ENTRY e {{
  p = f32[4] parameter(0)
  start = s32[] constant({start})
  init = (s32[], f32[4]) tuple(start, p)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}}
"""


def _loop(module):
    return next(i for i in module.entry.instructions if i.opcode == "while")


@pytest.mark.parametrize("kwargs,count", [
    (dict(limit="0"), 0), (dict(limit="1"), 1), (dict(limit="2"), None),
    (dict(limit="10", start="9"), 1), (dict(limit="10", start="12"), 0),
    (dict(limit="0", start="5", step="-3", direction="GT"), None),
    (dict(limit="3", start="5", step="-3", direction="GT"), 1),
    (dict(limit="3", start="2147483647", direction="GT"), 1),  # wraps around after one step
])
def test_known_trip_count(kwargs, count):
    assert known_trip_count(_loop(parse_module(counted_loop(**kwargs))), 1) == count


GROUPS = """HloModule m
body {
  s = (s32[], f32[3], f32[3], f32[3], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  a = f32[3] get-tuple-element(s), index=1
  acc = f32[3] get-tuple-element(s), index=2
  acc2 = f32[3] add(acc, a)
  uu = f32[3] get-tuple-element(s), index=3
  vv = f32[3] get-tuple-element(s), index=4
  un = f32[3] sine(vv)
  vn = f32[3] cosine(uu)
  k = f32[3] get-tuple-element(s), index=5
  t = token[] after-all()
  o = token[] outfeed(k, t), outfeed_shape=f32[3]{0}
  ROOT r = (s32[], f32[3], f32[3], f32[3], f32[3], f32[3]) tuple(j, a, acc2, un, vn, k)
}
cond {
  s = (s32[], f32[3], f32[3], f32[3], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[3] parameter(0)
  q = f32[3] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3], f32[3], f32[3], f32[3]) tuple(zero, p, q, p, q, p)
  w = (s32[], f32[3], f32[3], f32[3], f32[3], f32[3]) while(init), condition=cond, body=body
  i = s32[] get-tuple-element(w), index=0
  a = f32[3] get-tuple-element(w), index=1
  ROOT out = (s32[], f32[3]) tuple(i, a)
}
"""


def test_groups_of_elements_that_only_feed_each_other_are_removed_together():
    module = parse_module(GROUPS)
    # a is passed through (its final value is its initial one) and only feeds acc;
    # uu and vv feed each other; k reaches an outfeed; i is read by the condition.
    assert dead_state_indices(_loop(module)) == [1, 2, 3, 4]
    after, changed = optimised(GROUPS, "while-loop-simplifier,tuple-simplifier,dce")
    assert changed
    loop = _loop(after)
    assert str(loop.shape) == "(s32[], f32[3]{0})"
    assert body(after).split("ENTRY", 1)[1] == """ %e (p: f32[3], q: f32[3]) -> (s32[], f32[3]) {
  %p = f32[3]{0} parameter(0)
  %q = f32[3]{0} parameter(1)
  %zero = s32[] constant(0)
  %tuple = (s32[], f32[3]{0}) tuple(%zero, %p)
  %w.1 = (s32[], f32[3]{0}) while(%tuple), condition=%cond.clone, body=%body.clone
  %get-tuple-element = s32[] get-tuple-element(%w.1), index=0
  ROOT %out = (s32[], f32[3]{0}) tuple(%get-tuple-element, %p)
}
"""
    assert_same_outputs(GROUPS, "while-loop-simplifier,tuple-simplifier,dce")


