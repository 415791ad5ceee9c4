"""multi-output-fusion: sibling loop fusions reading one operand become one tuple-rooted fusion."""
import numpy as np

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
from pass_testing import PassTester, assert_unchanged, body

MOF = PassTester("fusion,multi-output-fusion,dce", rtol=1e-6)

SIBLINGS = """HloModule m
ENTRY main {
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  e = f32[64] exponential(x)
  n = f32[64] negate(e)
  t = f32[64] tanh(x)
  s = f32[64] add(t, y)
  m = f32[64] multiply(n, s)
  ROOT r = f32[64] add(m, y)
}
"""


def test_siblings_reading_one_operand_merge_into_a_tuple_rooted_fusion():
    # (in SIBLINGS itself, fusion puts everything into the root's loop; returned apart, n and s stay two)
    apart = SIBLINGS.replace("  m = f32[64] multiply(n, s)\n  ROOT r = f32[64] add(m, y)\n",
                             "  ROOT r = (f32[64], f32[64]) tuple(n, s)\n")
    module, changed = MOF.optimise(apart)
    assert changed
    assert body(module) == """%fused_computation.2 (param_0.2: f32[64], param_1.1: f32[64]) -> (f32[64], f32[64]) {
  %param_0.2 = f32[64]{0} parameter(0)
  %param_1.1 = f32[64]{0} parameter(1)
  %e.1 = f32[64]{0} exponential(%param_0.2)
  %n.1 = f32[64]{0} negate(%e.1)
  %t.1 = f32[64]{0} tanh(%param_0.2)
  %s.1 = f32[64]{0} add(%t.1, %param_1.1)
  ROOT %tuple = (f32[64]{0}, f32[64]{0}) tuple(%n.1, %s.1)
}

ENTRY %main (x: f32[64], y: f32[64]) -> (f32[64], f32[64]) {
  %x = f32[64]{0} parameter(0)
  %y = f32[64]{0} parameter(1)
  %fusion.2 = (f32[64]{0}, f32[64]{0}) fusion(%x, %y), kind=kLoop, calls=%fused_computation.2
  %get-tuple-element = f32[64]{0} get-tuple-element(%fusion.2), index=0
  %get-tuple-element.1 = f32[64]{0} get-tuple-element(%fusion.2), index=1
  ROOT %r = (f32[64]{0}, f32[64]{0}) tuple(%get-tuple-element, %get-tuple-element.1)
}
"""


def test_users_of_the_first_sibling_may_come_before_the_second():
    text = """HloModule m
ENTRY main {
  x = f32[32] parameter(0)
  a = f32[32] exponential(x)
  b = f32[32] sqrt(a)
  c = f32[32] tanh(x)
  d = f32[32] negate(c)
  ROOT r = (f32[32], f32[32], f32[32]) tuple(a, b, d)
}
"""
    MOF.optimise(text, seeds=(0, 1))


def test_a_sibling_that_depends_on_the_other_is_not_merged():
    text = """HloModule m
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY main {
  x = f32[32] parameter(0)
  e = f32[32] exponential(x)
  a = f32[32] negate(e)
  z = f32[] constant(0)
  s = f32[] reduce(a, z), dimensions={0}, to_apply=add
  sb = f32[32] broadcast(s), dimensions={}
  b = f32[32] add(x, sb)
  c = f32[32] tanh(b)
  ROOT r = (f32[32], f32[32]) tuple(a, c)
}
"""
    module, _ = MOF.optimise(text)
    fusions = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert len(fusions) >= 2 and all(not f.shape.is_tuple for f in fusions)


def test_different_output_dimensions_or_in_place_updates_stay_apart():
    assert_unchanged("""HloModule m
ENTRY main {
  x = f32[8,4] parameter(0)
  e = f32[8,4] exponential(x)
  t = f32[4,8] transpose(x), dimensions={1,0}
  n = f32[4,8] negate(t)
  ROOT r = (f32[8,4], f32[4,8]) tuple(e, n)
}
""", "multi-output-fusion")
    assert_unchanged("""HloModule m
fused_dus {
  p0 = f32[16] parameter(0)
  p1 = f32[4] parameter(1)
  i = s32[] constant(2)
  ROOT d = f32[16] dynamic-update-slice(p0, p1, i)
}
fused_exp {
  q0 = f32[16] parameter(0)
  ROOT e = f32[16] exponential(q0)
}
ENTRY main {
  x = f32[16] parameter(0)
  u = f32[4] parameter(1)
  f1 = f32[16] fusion(x, u), kind=kLoop, calls=fused_dus
  f2 = f32[16] fusion(x), kind=kLoop, calls=fused_exp
  ROOT r = (f32[16], f32[16]) tuple(f1, f2)
}
""", "multi-output-fusion")


def test_compiled_multi_output_fusion_matches_the_interpreter():
    apart = SIBLINGS.replace("  m = f32[64] multiply(n, s)\n  ROOT r = f32[64] add(m, y)\n",
                             "  ROOT r = (f32[64], f32[64]) tuple(n, s)\n")
    module = parse_module(apart)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    got = JitExecutable(module, CodegenOptions()).run(x, y)
    np.testing.assert_allclose(got[0], -np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.tanh(x) + y, rtol=1e-5, atol=1e-6)
