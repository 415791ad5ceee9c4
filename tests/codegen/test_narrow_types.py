"""8- and 4-bit floats and sub-byte integers in compiled code (narrow_types.py).

Conversion from f32 to every narrow float format is ml_dtypes' rounding exactly, on
random bit patterns and on every representable value and midpoint with its neighbours;
arithmetic, comparisons, conversions, bitcasts and scaled-dot on those types agree with
the interpreter.
"""
import ml_dtypes
import numpy as np
import pytest

from compiled_cases import RAW, check_against_interpreter, compiled, private_cache  # noqa: F401
from hlo.codegen import CodegenOptions
from hlo.codegen.narrow_types import tables
from hlo.shapes import PRIMITIVE_TYPES

TABLE_FLOATS = [t for t in PRIMITIVE_TYPES.values() if t.is_float and t.bits <= 8]
SUB_BYTE_INTS = [t for t in PRIMITIVE_TYPES.values() if t.is_integral and not t.is_pred and t.bits < 8]


def _hard_f32_values(t) -> np.ndarray:
    """Random bits, ordinary magnitudes, specials, and each value and midpoint of t +- 2 ulp."""
    rng = np.random.default_rng(t.bits)
    values = tables(t)[0]
    finite = np.unique(np.abs(values[np.isfinite(values)]).astype(np.float64))
    middles = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    near = np.concatenate([finite.astype(np.float32), middles]).view(np.uint32).astype(np.int64)
    near = np.concatenate([near + d for d in range(-2, 3)]).clip(0, 0x7F800000).astype(np.uint32).view(np.float32)
    return np.concatenate([
        rng.integers(0, 1 << 32, 40000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        rng.uniform(-600, 600, 5000).astype(np.float32), near, -near,
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, 2.0 ** -127], np.float32)])


@pytest.mark.parametrize("t", TABLE_FLOATS, ids=lambda t: t.name)
def test_f32_to_narrow_float_rounds_exactly_as_ml_dtypes(t):
    x = _hard_f32_values(t)
    text = f"HloModule m\nENTRY e {{\n  x = f32[{x.size}] parameter(0)\n  ROOT y = {t.name}[{x.size}] convert(x)\n}}\n"
    got = compiled(text, x)[0]
    with np.errstate(all="ignore"):
        want = x.astype(t.dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# e8m0's smallest code, 2^-127, is an f32 subnormal, which compiled code flushes to 0 as XLA:CPU
# does (float_mode.py); the codes are compared with IEEE subnormals kept.
IEEE_SUBNORMALS = (CodegenOptions(run_pipeline=False, flush_denormals=False), CodegenOptions(flush_denormals=False))


@pytest.mark.parametrize("t", TABLE_FLOATS, ids=lambda t: t.name)
def test_narrow_float_arithmetic_over_every_code(t):
    codes = (np.arange(1 << t.bits, dtype=np.uint8)).view(t.dtype)
    n = codes.size
    bits = f"u{t.bits}"   # a same-width bitcast keeps every code, NaNs included
    check_against_interpreter(f"""HloModule m
ENTRY e {{
  x = {t.name}[{n}] parameter(0)
  y = {t.name}[{n}] parameter(1)
  m = {t.name}[{n}] multiply(x, y)
  s = {t.name}[{n}] subtract(m, x)
  c = pred[{n}] compare(x, y), direction=LT
  w = f64[{n}] convert(x)
  b = {bits}[{n}] bitcast-convert(x)
  ROOT r = ({t.name}[{n}], pred[{n}], f64[{n}], {bits}[{n}]) tuple(s, c, w, b)
}}
""", codes, np.roll(codes, 5), rtol=0, atol=0, options=IEEE_SUBNORMALS)


@pytest.mark.parametrize("t", SUB_BYTE_INTS, ids=lambda t: t.name)
def test_sub_byte_integers_wrap_like_the_interpreter(t):
    rng = np.random.default_rng(t.bits)
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1))) if t.is_signed_int else (0, 1 << t.bits)
    x = rng.integers(lo, hi, 64).astype(t.dtype)
    y = rng.integers(lo, hi, 64).astype(t.dtype)
    name = t.name
    check_against_interpreter(f"""HloModule m
ENTRY e {{
  x = {name}[64] parameter(0)
  y = {name}[64] parameter(1)
  a = {name}[64] add(x, y)
  m = {name}[64] multiply(a, y)
  d = {name}[64] divide(m, y)
  s = {name}[64] shift-right-arithmetic(m, y)
  f = f32[64] convert(d)
  back = {name}[64] convert(f32[64] multiply(f, f))
  ROOT r = ({name}[64], {name}[64], f32[64], {name}[64], s32[64]) tuple(m, s, f, back, s32[64] convert(x))
}}
""", x, y)


def test_scaled_dot_of_f8_data_with_e8m0_scales_and_int4_bitcasts():
    rng = np.random.default_rng(1)
    check_against_interpreter("""HloModule m
ENTRY e {
  l8 = f8e4m3fn[2,32] parameter(0)
  r8 = f8e4m3fn[32,4] parameter(1)
  ls = f8e8m0fnu[2,1] parameter(2)
  rs = f8e8m0fnu[1,4] parameter(3)
  d = f32[2,4] scaled-dot(l8, r8, ls, rs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  q = s4[2,4,2] parameter(4)
  wide = s8[2,4] bitcast-convert(q)
  ROOT t = (f32[2,4], s8[2,4], f8e5m2[2,4]) tuple(d, wide, f8e5m2[2,4] convert(d))
}
""", rng.uniform(-2, 2, (2, 32)).astype(ml_dtypes.float8_e4m3fn),
        rng.uniform(-2, 2, (32, 4)).astype(ml_dtypes.float8_e4m3fn),
        np.array([[0.5], [4]], np.float32).astype(ml_dtypes.float8_e8m0fnu),
        np.array([[1, 2, 0.25, 8]], np.float32).astype(ml_dtypes.float8_e8m0fnu),
        rng.integers(-8, 8, (2, 4, 2)).astype(ml_dtypes.int4), rtol=1e-6, atol=1e-6)
