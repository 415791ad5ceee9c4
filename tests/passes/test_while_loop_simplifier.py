"""while-loop-simplifier: expected output per rule, and interpreter equivalence on random inputs."""
import pytest

from hlo import parse_module
from pass_testing import PassTester, body
from hlo.passes.while_loop_simplifier import dead_state_indices
from hlo.passes.while_loops import known_trip_count

WHILE_LOOP_SIMPLIFIER = PassTester("while-loop-simplifier", rtol=1e-6, atol=0, ints=(-3, 4))
optimised, assert_same_outputs = WHILE_LOOP_SIMPLIFIER.optimised, WHILE_LOOP_SIMPLIFIER.assert_same_outputs
assert_unchanged = WHILE_LOOP_SIMPLIFIER.assert_unchanged


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


def test_trip_count_zero_loop_becomes_its_init():
    text = counted_loop("0")
    module, changed = optimised(text)
    assert changed
    assert body(module) == """ENTRY %e (p: f32[4]) -> (s32[], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %start = s32[] constant(0)
  ROOT %init = (s32[], f32[4]{0}) tuple(%start, %p)
}
"""
    assert_same_outputs(text)


def test_trip_count_one_loop_becomes_its_body():
    text = counted_loop("1")
    module, changed = optimised(text)
    assert changed
    assert body(module) == """ENTRY %e (p: f32[4]) -> (s32[], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %start = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%start, %p)
  %i.2 = s32[] get-tuple-element(%init), index=0
  %step.1 = s32[] constant(1)
  %j.1 = s32[] add(%i.2, %step.1)
  %x.1 = f32[4]{0} get-tuple-element(%init), index=1
  %x2.1 = f32[4]{0} sine(%x.1)
  ROOT %r.1 = (s32[], f32[4]{0}) tuple(%j.1, %x2.1)
}
"""
    assert_same_outputs(text)


def test_longer_or_unknown_loops_stay():
    for text in (counted_loop("2"), counted_loop("1").replace("start = s32[] constant(0)",
                                                             "start = s32[] parameter(1)")):
        assert_unchanged(text)


def test_side_effects_keep_short_loops():
    # An outfeed in the body: a trip-count-1 loop is kept (its body is not inlined).
    text = counted_loop("1").replace("  ROOT r = (s32[], f32[4]) tuple(j, x2)", """  t = token[] after-all()
  o = token[] outfeed(x2, t), outfeed_shape=f32[4]{0}
  ROOT r = (s32[], f32[4]) tuple(j, x2)""")
    assert not optimised(text)[1]
    # An outfeed in the condition: not even a trip-count-0 loop is removed.
    text = counted_loop("0").replace("  ROOT c = pred[] compare(i, n), direction=LT", """  t = token[] after-all()
  o = token[] outfeed(n, t), outfeed_shape=s32[]
  ROOT c = pred[] compare(i, n), direction=LT""")
    assert not optimised(text)[1]


DEAD_ELEMENTS = """HloModule m
body {
  s = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[4] get-tuple-element(s), index=1
  y = f32[4] get-tuple-element(s), index=2
  z = f32[4] get-tuple-element(s), index=3
  x2 = f32[4] sine(x)
  y2 = f32[4] add(y, x)
  z2 = f32[4] multiply(z, z)
  ROOT r = (s32[], f32[4], f32[4], f32[4]) tuple(j, x2, y2, z2)
}
cond {
  s = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4], f32[4]) tuple(zero, p, p, p)
  w = (s32[], f32[4], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT g = f32[4] get-tuple-element(w), index=1
}
"""


def test_removes_dead_loop_carried_elements():
    module, changed = optimised(DEAD_ELEMENTS, "while-loop-simplifier,tuple-simplifier,dce")
    assert changed
    # y reads x but nothing reads y; z only updates itself; neither is used after the loop.
    assert body(module) == """%body.clone (s.clone: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s.clone = (s32[], f32[4]{0}) parameter(0)
  %i.clone = s32[] get-tuple-element(%s.clone), index=0
  %one.clone = s32[] constant(1)
  %j.clone = s32[] add(%i.clone, %one.clone)
  %x.clone = f32[4]{0} get-tuple-element(%s.clone), index=1
  %x2.clone = f32[4]{0} sine(%x.clone)
  ROOT %r.clone = (s32[], f32[4]{0}) tuple(%j.clone, %x2.clone)
}

%cond.clone (s.1.clone: (s32[], f32[4])) -> pred[] {
  %s.1.clone = (s32[], f32[4]{0}) parameter(0)
  %i.1.clone = s32[] get-tuple-element(%s.1.clone), index=0
  %n.clone = s32[] constant(5)
  ROOT %lt.clone = pred[] compare(%i.1.clone, %n.clone), direction=LT
}

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %tuple = (s32[], f32[4]{0}) tuple(%zero, %p)
  %w.1 = (s32[], f32[4]{0}) while(%tuple), condition=%cond.clone, body=%body.clone
  ROOT %get-tuple-element.1 = f32[4]{0} get-tuple-element(%w.1), index=1
}
"""
    assert_same_outputs(DEAD_ELEMENTS, "while-loop-simplifier,tuple-simplifier,dce")


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


def test_elements_used_after_the_loop_or_by_the_condition_stay():
    text = DEAD_ELEMENTS.replace("ROOT g = f32[4] get-tuple-element(w), index=1", "ROOT g = (s32[], f32[4], f32[4], f32[4]) copy(w)")
    module, changed = optimised(text)
    assert not changed


def test_loops_in_called_computations_and_nested_loops_keep_their_meaning():
    text = """HloModule m
inner_body {
  s = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[2] get-tuple-element(s), index=1
  d = f32[2] get-tuple-element(s), index=2
  x2 = f32[2] multiply(x, x)
  d2 = f32[2] add(d, x)
  ROOT r = (s32[], f32[2], f32[2]) tuple(j, x2, d2)
}
inner_cond {
  s = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(1)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[2] get-tuple-element(s), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[2], f32[2]) tuple(zero, x, x)
  w = (s32[], f32[2], f32[2]) while(init), condition=inner_cond, body=inner_body
  y = f32[2] get-tuple-element(w), index=1
  ROOT r = (s32[], f32[2]) tuple(j, y)
}
outer_cond {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[2]) tuple(zero, p)
  w = (s32[], f32[2]) while(init), condition=outer_cond, body=outer_body
  ROOT g = f32[2] get-tuple-element(w), index=1
}
"""
    module, changed = optimised(text, "while-loop-simplifier,tuple-simplifier,dce")
    assert changed
    # the inner loop runs once: inlined into the outer body
    assert [i.opcode for i in module.instructions()].count("while") == 1
    assert_same_outputs(text, "while-loop-simplifier,tuple-simplifier,dce")
