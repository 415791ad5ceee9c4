"""Compiled code flushes subnormal floats to zero as XLA:CPU does (float_mode.py): exp(-100) is 0
in f32, subnormal inputs count as 0; the caller's float mode is restored after every run; with
flush_denormals=False results keep IEEE subnormals, as the interpreter computes."""
import numpy as np
from target_cases import ARM, private_cache  # noqa: F401

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen import compile_assembly
from hlo.interpreter import run

IEEE = CodegenOptions(flush_denormals=False)

UNDERFLOW = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  e = f32[4] exponential(x)
  k = f32[] constant(1.5)
  ks = f32[4] broadcast(k), dimensions={}
  same = f32[4] multiply(y, ks)
  ROOT t = (f32[4], f32[4]) tuple(e, same)
}
"""
X = np.array([-100.0, -90.0, -87.0, 0.5], np.float32)
Y = np.array([1e-40, -3e-39, 2e-38, 1.0], np.float32)     # two subnormals, two normals


def test_subnormal_results_and_inputs_are_zero_as_in_xla():
    e, same = JitExecutable(parse_module(UNDERFLOW, "m.hlo"), CodegenOptions()).run(X, Y)
    assert list(e[:2]) == [0.0, 0.0] and e[2] == np.float32(np.exp(np.float32(-87.0)))
    np.testing.assert_allclose(e[3], np.exp(np.float32(0.5)), rtol=1e-6)
    assert list(same) == [0.0, 0.0, np.float32(2e-38) * np.float32(1.5), 1.5]


def test_ieee_subnormals_when_asked_as_the_interpreter_computes():
    module = parse_module(UNDERFLOW, "m.hlo")
    e, same = JitExecutable(module, IEEE).run(X, Y)
    want_e, want_same = run(module, X, Y)
    assert e[0] > 0 and e[1] > 0
    np.testing.assert_allclose(e, want_e, rtol=3e-6, atol=0)
    np.testing.assert_array_equal(same, want_same)


def test_the_callers_float_mode_is_restored():
    JitExecutable(parse_module(UNDERFLOW, "m.hlo"), CodegenOptions()).run(X, Y)
    tiny = np.float32(1e-20)
    assert tiny * tiny > 0            # numpy still computes the subnormal 1e-40


def test_gemm_worker_threads_flush_too():
    text = """HloModule m
ENTRY e {
  a = f32[256,256] parameter(0)
  b = f32[256,512] parameter(1)
  ROOT d = f32[256,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    a = np.full((256, 256), 1e-20, np.float32)
    b = np.full((256, 512), 1e-20, np.float32)     # every product 1e-40: subnormal
    out = JitExecutable(parse_module(text, "m.hlo"), CodegenOptions(), threads=2).run(a, b)[0]
    assert not out.any()
    ieee = JitExecutable(parse_module(text, "m.hlo"), IEEE, threads=2).run(a, b)[0]
    np.testing.assert_allclose(ieee, 256e-40, rtol=1e-3)


def test_aarch64_sets_fpcr_and_x86_mxcsr():
    module = parse_module(UNDERFLOW, "m.hlo")
    assert "fpcr" in compile_assembly(lower_module(module, ARM), ARM).lower()
    assert "ldmxcsr" in compile_assembly(lower_module(module, CodegenOptions()), CodegenOptions())
    assert "mxcsr" not in compile_assembly(lower_module(module, IEEE), IEEE)
