"""multi-output-fusion: sibling loop fusions reading one operand become one tuple-rooted fusion
(expected outputs in tests/golden/passes/multi_output_fusion.hlo); here, the compiled backend
runs such a fusion as the interpreter does."""
import numpy as np

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
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


def test_compiled_multi_output_fusion_matches_the_interpreter():
    apart = SIBLINGS.replace("  m = f32[64] multiply(n, s)\n  ROOT r = f32[64] add(m, y)\n",
                             "  ROOT r = (f32[64], f32[64]) tuple(n, s)\n")
    module = parse_module(apart)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    got = JitExecutable(module, CodegenOptions()).run(x, y)
    np.testing.assert_allclose(got[0], -np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.tanh(x) + y, rtol=1e-5, atol=1e-6)
