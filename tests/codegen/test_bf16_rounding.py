"""bf16 results are rounded once (types.round_to); storing a rounded value gives its bits back
without rounding again (types.f32_to_bf16). The stored bits equal the interpreter's bit for bit,
for ties, overflow to infinity, infinities, NaNs, zeros of either sign and subnormals (IEEE
subnormals: with them flushed, as by default, compiled code gives 0 where the interpreter does not)."""
import ml_dtypes
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.interpreter import run

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def _special_values(n: int) -> np.ndarray:
    bits = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81,
                     0x3F81, 0x3F83, 0x4001, 0x0080, 0x8080, 0x0001], np.uint16)
    rng = np.random.default_rng(5)
    fill = rng.integers(0, 1 << 16, n - len(bits), dtype=np.uint16)
    return np.concatenate([bits, fill]).view(BF16)


TEXT = """HloModule m
ENTRY e {
  x = bf16[64]{0} parameter(0)
  y = bf16[64]{0} parameter(1)
  f = f32[64]{0} parameter(2)
  p = bf16[64]{0} multiply(x, y)
  s = bf16[64]{0} add(p, x)
  c = bf16[64]{0} convert(f)
  d = bf16[64]{0} divide(s, c)
  ROOT t = (bf16[64]{0}, bf16[64]{0}, bf16[64]{0}, bf16[64]{0}) tuple(p, s, c, d)
}
"""


@pytest.mark.parametrize("pipeline", [False, True])
def test_stored_bf16_results_equal_the_interpreters_bit_for_bit(pipeline):
    x = _special_values(64)
    y = np.roll(x, 7)
    f = np.concatenate([np.array([np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1.00390625, 1.01171875, -0.0],
                                 np.float32), np.linspace(-70000, 70000, 56, dtype=np.float32)])
    f[20] = np.uint32(0x7FFFFFFF).view(np.float32)   # a NaN whose rounding would carry into the sign
    module = parse_module(TEXT, "t.hlo")
    want = run(module, x, y, f)
    got = JitExecutable(module, CodegenOptions(run_pipeline=pipeline, flush_denormals=False)).run(x, y, f)
    for g, w in zip(got, want):
        g16, w16 = np.asarray(g).view(np.uint16), np.asarray(w).view(np.uint16)
        nan = np.isnan(np.asarray(w, np.float32))
        np.testing.assert_array_equal(np.isnan(np.asarray(g, np.float32)), nan)
        np.testing.assert_array_equal(g16[~nan], w16[~nan])
        np.testing.assert_array_equal(g16[nan] & 0x7FC0, w16[nan] & 0x7FC0)   # quiet NaNs both


ARITHMETIC = """HloModule m
ENTRY e {
  x = bf16[65536]{0} parameter(0)
  y = bf16[65536]{0} parameter(1)
  a = bf16[65536]{0} add(x, y)
  s = bf16[65536]{0} subtract(x, y)
  p = bf16[65536]{0} multiply(x, y)
  d = bf16[65536]{0} divide(x, y)
  q = bf16[65536]{0} multiply(p, d)
  ROOT t = (bf16[65536]{0}, bf16[65536]{0}, bf16[65536]{0}, bf16[65536]{0}, bf16[65536]{0}) tuple(a, s, p, d, q)
}
"""


def test_arithmetic_on_every_bf16_value_equals_the_interpreters():
    """add/subtract/multiply/divide round without a NaN test (types.round_bf16_arithmetic): every
    bf16 bit pattern (each NaN, signalling ones included) against shuffled partners, and one op
    on those results, bit for bit but for the payload of NaNs, which must stay quiet NaNs."""
    x = np.arange(1 << 16, dtype=np.uint16).view(BF16)
    y = np.random.default_rng(11).permutation(x.view(np.uint16)).view(BF16)
    module = parse_module(ARITHMETIC, "arith.hlo")
    want = run(module, x, y)
    got = JitExecutable(module, CodegenOptions(flush_denormals=False)).run(x, y)
    for g, w in zip(got, want):
        g16, w16 = np.asarray(g).view(np.uint16), np.asarray(w).view(np.uint16)
        nan = np.isnan(np.asarray(w, np.float32))
        np.testing.assert_array_equal(np.isnan(np.asarray(g, np.float32)), nan)
        np.testing.assert_array_equal(g16[~nan], w16[~nan])
        assert np.all(g16[nan] & 0x7FC0 == 0x7FC0)
