"""Ops the compiled backend compiles since issue 11, each against the interpreter.

reduce-precision (every f16/bf16 bit pattern, random f32/f64 bits), stochastic-convert,
ragged-dot (its three modes, property-tested group sizes), scaled-dot, scan, complex
transcendentals and iota, tokens, barriers, asynchronous wrappers and annotation custom
calls. rng is stateful (its values are XLA:CPU's algorithm, not the interpreter's
numpy draws): its Philox stream is compared bit for bit with the interpreter's Philox,
its distributions statistically, its counter with rng-get-and-update-state.
"""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import parse_module
from compiled_cases import BOTH, RAW, check_against_interpreter, compiled, private_cache  # noqa: F401
from hlo.codegen import JitExecutable
from hlo.codegen.rng_kernels import INITIAL_COUNTER, KEY_MIX, split_halves
from hlo.interpreter import run
from hlo.interpreter.rng import _philox_u32

check = check_against_interpreter


def rand(shape, seed=0, low=-1.0, high=1.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


# --------------------------------------------------------------------------- reduce-precision

UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bit_patterns(dtype) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    if size == 2:
        return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    rng = np.random.default_rng(size)
    bits = rng.integers(0, np.iinfo(UINT[size]).max, 20000, dtype=UINT[size], endpoint=True)
    specials = [0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 6.1e-5, 1e-5, 65504.0, 70000.0, 3.14159, 1 + 2 ** -11]
    return np.concatenate([bits.view(dtype), np.array(specials, dtype)])


@pytest.mark.parametrize("t,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16), ("f32", np.float32),
                                     ("f64", np.float64)])
@pytest.mark.parametrize("exponent,mantissa", [(5, 10), (5, 2), (4, 3), (8, 7), (3, 0), (1, 0), (8, 23),
                                               (11, 52)])
def test_reduce_precision_matches_the_interpreter_bit_for_bit(t, dtype, exponent, mantissa):
    x = _bit_patterns(dtype)
    text = (f"HloModule m\nENTRY e {{\n  x = {t}[{x.size}] parameter(0)\n  ROOT y = {t}[{x.size}] "
            f"reduce-precision(x), exponent_bits={exponent}, mantissa_bits={mantissa}\n}}\n")
    want = np.asarray(run(parse_module(text), x)[0])
    got = compiled(text, x)[0]
    size = np.dtype(dtype).itemsize
    with np.errstate(invalid="ignore"):
        nan = np.isnan(want.astype(np.float64))
        assert np.array_equal(nan, np.isnan(got.astype(np.float64)))
    # NaN payloads may differ (bf16 NaNs are quieted differently); every other value is exact
    np.testing.assert_array_equal(got.view(UINT[size])[~nan], want.view(UINT[size])[~nan])


def test_reduce_precision_spec_examples_and_fused():
    text = """HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  r = f32[5] reduce-precision(x), exponent_bits=8, mantissa_bits=10
  h = f32[5] reduce-precision(x), exponent_bits=5, mantissa_bits=10
  ROOT t = (f32[5], f32[5]) tuple(add(r, r), h)
}
"""
    x = np.array([3.14159, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 70000, 1e-5], np.float32)
    for opts in BOTH:
        doubled, half = compiled(text, x, options=opts)
        np.testing.assert_array_equal(doubled[:3] / 2, [3.140625, 1.0, 1.001953125])
        assert half[3] == np.inf and half[4] == 0.0


# --------------------------------------------------------------------------- stochastic-convert

@pytest.mark.parametrize("t,bits_t,to,dtype,bits_dtype", [
    ("f32", "u32", "s32", np.float32, np.uint32), ("f32", "u32", "s8", np.float32, np.uint32),
    ("f64", "u64", "s64", np.float64, np.uint64), ("f16", "u16", "s16", np.float16, np.uint16),
    ("bf16", "u16", "s8", ml_dtypes.bfloat16, np.uint16)])
def test_stochastic_convert_matches_the_interpreter(t, bits_t, to, dtype, bits_dtype):
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        x = np.concatenate([rng.uniform(-300, 300, 500), rng.uniform(-2, 2, 500),
                            [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 127.5, -128.5, 1e30, -1e30]]).astype(dtype)
    r = rng.integers(0, np.iinfo(bits_dtype).max, x.size, dtype=bits_dtype, endpoint=True)
    r[:8] = [0, 1, np.iinfo(bits_dtype).max, 1 << (np.dtype(bits_dtype).itemsize * 8 - 1), 2, 3, 4, 5]
    n = x.size
    check(f"HloModule m\nENTRY e {{\n  x = {t}[{n}] parameter(0)\n  r = {bits_t}[{n}] parameter(1)\n"
          f"  ROOT y = {to}[{n}] stochastic-convert(x, r)\n}}\n", x, r)


# --------------------------------------------------------------------------- ragged-dot and scaled-dot

RAGGED_FREE = """HloModule m
ENTRY e {
  x = f32[9,3] parameter(0)
  w = f32[4,3,5] parameter(1)
  gs = s32[4] parameter(2)
  ROOT r = f32[9,5] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1},
      lhs_ragged_dims={0}, rhs_group_dims={0}
}
"""
RAGGED_CONTRACTING = """HloModule m
ENTRY e {
  x = f32[4,9] parameter(0)
  w = f32[9,5] parameter(1)
  gs = s32[4] parameter(2)
  ROOT r = f32[4,4,5] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
}
"""
RAGGED_BATCH = """HloModule m
ENTRY e {
  x = f32[9,3,6]{0,2,1} parameter(0)
  w = f32[9,6,5] parameter(1)
  gs = u32[4] parameter(2)
  ROOT r = f32[9,3,5] ragged-dot(x, w, gs), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2},
      rhs_contracting_dims={1}, lhs_ragged_dims={0}
}
"""


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=4, max_size=4))
def test_ragged_dot_modes_with_any_group_sizes(sizes):
    """Groups may be empty and may cover fewer or more rows than there are."""
    check(RAGGED_FREE, rand((9, 3), 1), rand((4, 3, 5), 2), np.array(sizes, np.int32), rtol=1e-5, atol=1e-5)
    check(RAGGED_CONTRACTING, rand((4, 9), 3), rand((9, 5), 4), np.array(sizes, np.int32), rtol=1e-5, atol=1e-5)
    check(RAGGED_BATCH, rand((9, 3, 6), 5), rand((9, 6, 5), 6), np.array(sizes, np.uint32), rtol=1e-5,
          atol=1e-5, options=(RAW,))


def test_scaled_dot_f32_and_bf16():
    for t, dtype in (("f32", np.float32), ("bf16", ml_dtypes.bfloat16)):
        text = f"""HloModule m
ENTRY e {{
  l = {t}[3,8] parameter(0)
  r = {t}[8,4]{{0,1}} parameter(1)
  ls = {t}[3,2] parameter(2)
  rs = {t}[2,4] parameter(3)
  ROOT d = {t}[3,4] scaled-dot(l, r, ls, rs), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""
        args = [rand(s, k, dtype=dtype) for k, s in enumerate(((3, 8), (8, 4), (3, 2), (2, 4)))]
        check(text, *args, rtol=1e-2 if t == "bf16" else 1e-5, atol=1e-2 if t == "bf16" else 1e-5)


# --------------------------------------------------------------------------- scan

SCAN_TWO_CARRIES = """HloModule m
step {
  x = f32[3] parameter(0)
  c = f32[3] parameter(1)
  d = f32[3] parameter(2)
  s = f32[3] add(x, c)
  ROOT t = (f32[3], f32[3], f32[3]) tuple(s, d, s)
}
ENTRY e {
  xs = f32[5,3] parameter(0)
  c0 = f32[3] parameter(1)
  d0 = f32[3] parameter(2)
  ROOT r = (f32[5,3], f32[3], f32[3]) scan(xs, c0, d0), dimensions={0}, num_carries=2, to_apply=step
}
"""


def test_scan_with_carries_that_swap_buffers():
    check(SCAN_TWO_CARRIES, rand((5, 3), 1), rand(3, 2), rand(3, 3))


def test_scan_reverse_over_a_minor_dimension_with_layouts():
    check("""HloModule m
step {
  x = f32[4] parameter(0)
  y = s32[4] parameter(1)
  c = f32[4] parameter(2)
  p = f32[4] multiply(x, c)
  ROOT t = (f32[4], s32[4], f32[4]) tuple(p, y, add(p, f32[4] convert(y)))
}
ENTRY e {
  xs = f32[4,6]{0,1} parameter(0)
  ys = s32[4,6] parameter(1)
  c0 = f32[4] parameter(2)
  ROOT r = (f32[4,6]{0,1}, s32[4,6], f32[4]) scan(xs, ys, c0), dimensions={1}, num_carries=1, is_reverse=true,
      to_apply=step
}
""", rand((4, 6), 1), np.arange(24, dtype=np.int32).reshape(4, 6), rand(4, 2))


def test_scan_without_carries_inside_a_while_loop():
    check("""HloModule m
step {
  x = f32[2] parameter(0)
  ROOT y = f32[2] exponential(x)
}
cond {
  s = (s32[], f32[3,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(3)), direction=LT
}
body {
  s = (s32[], f32[3,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3,2] get-tuple-element(s), index=1
  e = f32[3,2] scan(v), dimensions={0}, num_carries=0, to_apply=step
  scale = f32[3,2] constant({{0.1,0.2},{0.3,0.1},{0.2,0.1}})
  ROOT n = (s32[], f32[3,2]) tuple(add(i, s32[] constant(1)), multiply(e, scale))
}
ENTRY e {
  x = f32[3,2] parameter(0)
  w = (s32[], f32[3,2]) while((s32[], f32[3,2]) tuple(s32[] constant(0), x)), condition=cond, body=body
  ROOT r = f32[3,2] get-tuple-element(w), index=1
}
""", rand((3, 2), 4), rtol=1e-5)


# --------------------------------------------------------------------------- complex numbers

COMPLEX_UNARY = ["sqrt", "rsqrt", "log", "log-plus-one", "exponential-minus-one", "sine", "cosine", "tan", "sinh",
                 "cosh", "tanh", "asinh", "asin", "acos", "atanh", "atan", "acosh", "sign", "logistic"]


@pytest.mark.parametrize("t,dtype,tol", [("c64", np.complex64, 2e-6), ("c128", np.complex128, 1e-12)])
def test_complex_transcendentals(t, dtype, tol):
    rng = np.random.default_rng(5)
    z = (rng.uniform(-3, 3, 64) + 1j * rng.uniform(-3, 3, 64)).astype(dtype)
    z[:4] = [0, 1e-3 + 1e-4j, 30 + 1j, -25 - 2j]
    w = (rng.uniform(0.5, 2, 64) + 1j * rng.uniform(-2, 2, 64)).astype(dtype)
    for op in COMPLEX_UNARY:
        check(f"HloModule m\nENTRY e {{\n  x = {t}[64] parameter(0)\n  ROOT r = {t}[64] {op}(x)\n}}\n", z,
              rtol=tol, atol=tol, options=(RAW,))
    for op in ("power", "atan2"):
        check(f"HloModule m\nENTRY e {{\n  x = {t}[64] parameter(0)\n  y = {t}[64] parameter(1)\n"
              f"  ROOT r = {t}[64] {op}(x, y)\n}}\n", w, z, rtol=tol, atol=tol, options=(RAW,))


def test_complex_iota_fused():
    check("""HloModule m
ENTRY e {
  x = c64[4,3] parameter(0)
  i = c64[4,3] iota(), iota_dimension=0
  ROOT y = c64[4,3] add(x, i)
}
""", (rand((4, 3), 1) + 1j * rand((4, 3), 2)).astype(np.complex64))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_maximum_minimum_and_clamp_compare_real_parts_as_xla_cpu(dtype):
    t = "c64" if dtype == np.complex64 else "c128"
    a = np.array([1 + 2j, 3, np.nan + 1j, 2 + 5j, -1 - 1j, 0, 4 + 1j], dtype)
    b = np.array([1 + 3j, 2 + 9j, 0, np.nan, -1 + 7j, 1j, np.nan + 2j], dtype)
    lo = np.zeros(7, dtype)
    check(f"""HloModule m
ENTRY e {{
  a = {t}[7] parameter(0)
  b = {t}[7] parameter(1)
  lo = {t}[7] parameter(2)
  mx = {t}[7] maximum(a, b)
  mn = {t}[7] minimum(a, b)
  cl = {t}[7] clamp(lo, a, b)
  ROOT r = ({t}[7], {t}[7], {t}[7]) tuple(mx, mn, cl)
}}
""", a, b, lo, rtol=0, atol=0)


# --------------------------------------------------------------------------- tokens, barriers, asynchronous wrappers

def test_tokens_barriers_and_asynchronous_wrappers():
    check("""HloModule m
neg {
  p = f32[2,3] parameter(0)
  ROOT n = f32[2,3] negate(p)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  a = token[] after-all()
  d = f32[2,3] add-dependency(x, a)
  size = s32[] get-dimension-size(x), dimensions={1}
  b = (f32[2,3], s32[]) opt-barrier((f32[2,3], s32[]) tuple(d, size))
  b0 = f32[2,3] get-tuple-element(b), index=0
  b1 = s32[] get-tuple-element(b), index=1
  s = ((f32[2,3]), f32[2,3], s32[]) async-start(b0), calls=neg
  u = ((f32[2,3]), f32[2,3], s32[]) async-update(s)
  n = f32[2,3] async-done(u)
  cs = (f32[2,3]{0,1}, f32[2,3], u32[]) copy-start(n)
  c = f32[2,3]{0,1} copy-done(cs)
  dom = f32[2,3]{0,1} domain(c), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
  ROOT t = (f32[2,3]{0,1}, s32[]) tuple(dom, b1)
}
""", rand((2, 3), 1))


@pytest.mark.parametrize("target", ["Sharding", "xla.sdy.FuncResultSharding", "MoveToHost", "MoveToDevice",
                                    "annotate_device_placement", "SPMDFullToShardShape"])
def test_annotation_custom_calls_pass_their_operand(target):
    text = f"""HloModule m
ENTRY e {{
  x = f32[3,4] parameter(0)
  c = f32[3,4]{{0,1}} custom-call(x), custom_call_target="{target}"
  ROOT y = f32[3,4] add(c, c)
}}
"""
    x = rand((3, 4), 2)
    for opts in BOTH:
        np.testing.assert_array_equal(compiled(text, x, options=opts)[0], x + x)


# --------------------------------------------------------------------------- rng

def _op_key(ordinal: int) -> int:
    return ((ordinal * KEY_MIX) & ((1 << 64) - 1)) >> 32


def test_rng_draws_xla_philox_bits_at_the_module_counter():
    """uniform u32 over the empty range [0, 0) returns the raw bits: Philox-4x32 words at
    XLA:CPU's initial counter, under the op's key; the second op starts n words later."""
    text = """HloModule m
ENTRY e {
  z = u32[] constant(0)
  a = u32[3,5] rng(z, z), distribution=rng_uniform
  b = u32[7] rng(z, z), distribution=rng_uniform
  ROOT t = (u32[3,5], u32[7]) tuple(a, b)
}
"""
    executable = JitExecutable(parse_module(text), RAW)
    first, second = executable.run()
    np.testing.assert_array_equal(first, _philox_u32(_op_key(1), INITIAL_COUNTER, (3, 5))[0])
    np.testing.assert_array_equal(second, _philox_u32(_op_key(2), INITIAL_COUNTER + 15, (7,))[0])
    again, _ = executable.run()   # the counter moved on (15 + 7 words), as XLA:CPU's does
    np.testing.assert_array_equal(again, _philox_u32(_op_key(1), INITIAL_COUNTER + 22, (3, 5))[0])


def test_rng_distributions():
    text = """HloModule m
ENTRY e {
  u = f32[4000] rng(f32[] constant(-2), f32[] constant(3)), distribution=rng_uniform
  i = s32[50,80] rng(s32[] constant(-5), s32[] constant(7)), distribution=rng_uniform
  n = f32[101,40] rng(f32[] constant(1), f32[] constant(2)), distribution=rng_normal
  h = bf16[3001] rng(bf16[] constant(0), bf16[] constant(1)), distribution=rng_normal
  d = f64[1000] rng(f64[] constant(0), f64[] constant(1)), distribution=rng_uniform
  ROOT t = (f32[4000], s32[50,80], f32[101,40], bf16[3001], f64[1000]) tuple(u, i, n, h, d)
}
"""
    for opts in BOTH:
        u, i, n, h, d = compiled(text, options=opts)
        assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.1
        assert i.min() == -5 and i.max() == 6 and len(np.unique(i)) == 12
        assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
        h = h.astype(np.float32) if h.dtype == ml_dtypes.bfloat16 else (h.astype(np.uint32) << 16).view(np.float32)
        assert abs(h.mean()) < 0.08 and abs(h.std() - 1) < 0.08
        assert d.min() >= 0 and d.max() < 1 and len(np.unique(d)) == d.size


def test_split_halves_is_xlas():
    assert split_halves(()) == (0, (2,))
    assert split_halves((3, 4, 5)) == (1, (3, 2, 2, 5))
    assert split_halves((3, 7, 5)) == (1, (3, 4, 2, 5))


def test_rng_get_and_update_state_counts_like_the_interpreter():
    text = """HloModule m
ENTRY e {
  a = u64[2] rng-get-and-update-state(), delta=10
  b = u64[2] rng-get-and-update-state(), delta=-1
  c = u64[2] rng-get-and-update-state(), delta=5
  ROOT t = (u64[2], u64[2], u64[2]) tuple(a, b, c)
}
"""
    module = parse_module(text)
    want = run(module)
    got = JitExecutable(module, RAW).run()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
