"""zero-sized-hlo-elimination: expected output, and interpreter equivalence on random inputs."""
from pass_testing import PassTester, body

ZERO_SIZED_HLO_ELIMINATION = PassTester("zero-sized-hlo-elimination", exact=True)
optimised, assert_same_outputs = ZERO_SIZED_HLO_ELIMINATION.optimised, ZERO_SIZED_HLO_ELIMINATION.assert_same_outputs


ZERO_SIZED = """HloModule m
ENTRY e {
  p = f32[0,3] parameter(0)
  q = f32[2] parameter(1)
  n = f32[0,3] negate(p)
  e = f32[0,3] exponential(n)
  s = f32[0] slice(q), slice={[0:0]}
  c = f32[0] constant({})
  t = token[] after-all()
  o = token[] outfeed(n, t), outfeed_shape=f32[0,3]{1,0}
  ROOT r = (f32[0,3], f32[2], f32[0]) tuple(e, q, c)
}
"""


def test_replaces_zero_element_values_by_constants():
    module, changed = optimised(ZERO_SIZED)
    assert changed
    # The parameter stays (it is part of the signature) but nobody reads it; the
    # dead slice is left to dce; constants and the outfeed (a side effect) stay.
    assert body(module) == """ENTRY %e (p: f32[0,3], q: f32[2]) -> (f32[0,3], f32[2], f32[0]) {
  %p = f32[0,3]{1,0} parameter(0)
  %constant = f32[0,3]{1,0} constant({ })
  %q = f32[2]{0} parameter(1)
  %constant.1 = f32[0,3]{1,0} constant({ })
  %constant.2 = f32[0,3]{1,0} constant({ })
  %s = f32[0]{0} slice(%q), slice={[0:0]}
  %c = f32[0]{0} constant({})
  %t = token[] after-all()
  %o = token[] outfeed(%constant.1, %t), outfeed_shape=f32[0,3]{1,0}
  ROOT %r = (f32[0,3]{1,0}, f32[2]{0}, f32[0]{0}) tuple(%constant.2, %q, %c)
}
"""


def test_keeps_layouts_and_the_entry_signature():
    text = """HloModule m
ENTRY e {
  p = s32[4,0]{0,1} parameter(0)
  ROOT t = s32[0,4]{0,1} transpose(p), dimensions={1,0}
}
"""
    module, changed = optimised(text, "zero-sized-hlo-elimination,dce")
    assert changed
    assert body(module) == """ENTRY %e (p: s32[4,0]) -> s32[0,4] {
  %p = s32[4,0]{0,1} parameter(0)
  ROOT %constant.1 = s32[0,4]{0,1} constant({ })
}
"""
    assert_same_outputs(text, "zero-sized-hlo-elimination,dce")


def test_nothing_to_do_without_zero_sized_arrays():
    text = """HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  t = token[] after-all()
  ROOT n = f32[2] negate(p)
}
"""
    module, changed = optimised(text)
    assert not changed


def test_inside_loops_and_meaning_is_kept():
    text = """HloModule m
body {
  s = (s32[], f32[0]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[0] get-tuple-element(s), index=1
  w = f32[0] negate(v)
  ROOT r = (s32[], f32[0]) tuple(j, w)
}
cond {
  s = (s32[], f32[0]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
ENTRY e {
  p = f32[0] parameter(0)
  q = f32[5] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[0]) tuple(zero, p)
  w = (s32[], f32[0]) while(init), condition=cond, body=body
  v = f32[0] get-tuple-element(w), index=1
  c = f32[5] concatenate(v, q), dimensions={0}
  ROOT out = (f32[0], f32[5]) tuple(v, c)
}
"""
    module, changed = optimised(text, "zero-sized-hlo-elimination,dce")
    assert changed
    assert "negate" not in body(module)
    assert_same_outputs(text, "zero-sized-hlo-elimination,dce")
