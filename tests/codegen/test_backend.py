"""The compiled cpu backend agrees with the interpreter, op family by op family.

Every module is compiled with JitExecutable and run on random inputs; the result
must equal hlo.interpreter.run's (exactly for integers/pred, within a few ulps
for floats, whose transcendentals are approximations).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import HloError, parse_module
from hlo.codegen import EMITTERS, CodegenOptions, JitExecutable, LoweredModule, lower_module
from hlo.interpreter import run
from hlo.opcodes import Op

RAW = CodegenOptions(run_pipeline=False)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def check(text: str, *arrays, rtol=2e-6, atol=1e-6, options=None):
    module = parse_module(text, "test.hlo")
    want = run(module, *arrays)
    for opts in ([options] if options else [RAW, CodegenOptions()]):
        got = JitExecutable(module, opts).run(*arrays)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            if w.dtype.kind in "biu":
                np.testing.assert_array_equal(g, w)
            else:
                wide = np.complex128 if w.dtype.kind == "c" else np.float64
                g64, w64 = g.astype(wide), w.astype(wide)
                np.testing.assert_allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    return want


def rand(dtype, *dims, seed=0, low=-4, high=4):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, dims, dtype=dtype)
    return rng.uniform(low, high, dims).astype(dtype)


def unary_module(op, t, dims="8,16"):
    return f"""HloModule m
ENTRY e {{
  x = {t}[{dims}] parameter(0)
  ROOT y = {t}[{dims}] {op}(x)
}}
"""


def binary_module(op, t, dims="8,16", out=None):
    out = out or t
    return f"""HloModule m
ENTRY e {{
  x = {t}[{dims}] parameter(0)
  y = {t}[{dims}] parameter(1)
  ROOT z = {out}[{dims}] {op}(x, y)
}}
"""


# --------------------------------------------------------------------------- elementwise

FLOAT_UNARY = ["abs", "ceil", "floor", "negate", "round-nearest-afz", "round-nearest-even", "sign", "sqrt",
               "rsqrt", "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
               "sine", "cosine", "tan", "erf", "cbrt", "atan", "sinh", "cosh"]


@pytest.mark.parametrize("op", FLOAT_UNARY)
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_unary(op, t):
    x = rand({"f32": np.float32, "f64": np.float64}[t], 8, 16)
    if op in ("sqrt", "rsqrt", "log"):
        x = np.abs(x) + 0.01
    if op == "log-plus-one":
        x = np.abs(x)
    check(unary_module(op, t), x, rtol=2e-5, atol=1e-6, options=RAW)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                                "power", "atan2"])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_binary(op, t):
    dtype = {"f32": np.float32, "f64": np.float64}[t]
    x, y = rand(dtype, 8, 16, seed=1), rand(dtype, 8, 16, seed=2)
    if op == "power":
        x = np.abs(x)
    check(binary_module(op, t), x, y, rtol=2e-5, atol=1e-6, options=RAW)


def test_float_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 0.5, -0.5, 2.5], dtype=np.float32)
    y = np.array([-0.0, 0.0, np.nan, 1.0, 2.0, np.inf, -np.inf, -0.0, 0.5, 3.0], dtype=np.float32)
    for op in ["maximum", "minimum"]:
        check(binary_module(op, "f32", "10"), x, y)
    for op in ["sign", "round-nearest-afz", "round-nearest-even", "is-finite", "abs"]:
        out = "pred" if op == "is-finite" else "f32"
        check(f"HloModule m\nENTRY e {{\n  x = f32[10] parameter(0)\n  ROOT y = {out}[10] {op}(x)\n}}\n", x)


INT_TYPES = {"s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
             "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


@pytest.mark.parametrize("t", sorted(INT_TYPES))
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                                "and", "or", "xor", "shift-left", "shift-right-logical",
                                "shift-right-arithmetic", "power"])
def test_integer_binary(op, t):
    dtype = INT_TYPES[t]
    x, y = rand(dtype, 4, 16, seed=3), rand(dtype, 4, 16, seed=4)
    info = np.iinfo(dtype)
    # Corner cases: division by zero and by -1, INT_MIN, out-of-range shift amounts.
    y[0, :4] = [0, 1, 2, info.bits + 1]
    x[0, 4:6] = info.min
    if info.min < 0:
        y[0, 4:6] = -1
    if op == "power":
        y = y % 9
    check(binary_module(op, t, "4,16"), x, y, options=RAW)


# abs and sign of unsigned integers: XLA refuses them (the checker's tests cover it)
@pytest.mark.parametrize("op, t", [(op, t) for op in ["abs", "negate", "not", "sign", "popcnt", "count-leading-zeros"]
                                   for t in sorted(INT_TYPES) if not (op in ("abs", "sign") and t.startswith("u"))])
def test_integer_unary(op, t):
    check(unary_module(op, t, "64"), rand(INT_TYPES[t], 64, seed=5), options=RAW)


@pytest.mark.parametrize("op", ["and", "or", "xor", "add", "multiply", "maximum", "minimum"])
def test_pred_binary(op):
    check(binary_module(op, "pred", "32"), rand(np.bool_, 32, seed=1), rand(np.bool_, 32, seed=2), options=RAW)


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
@pytest.mark.parametrize("t,kind", [("f32", ""), ("f32", ", type=TOTALORDER"), ("s32", ""), ("u8", ""),
                                    ("s8", ", type=SIGNED"), ("f64", "")])
def test_compare(direction, t, kind):
    dtype = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u8": np.uint8, "s8": np.int8}[t]
    x, y = rand(dtype, 64, seed=1), rand(dtype, 64, seed=2)
    y[:8] = x[:8]
    if dtype.__name__.startswith("float"):
        x[8:12] = [np.nan, -0.0, np.inf, -np.nan]
        y[8:12] = [1.0, 0.0, np.inf, np.nan]
    text = f"""HloModule m
ENTRY e {{
  x = {t}[64] parameter(0)
  y = {t}[64] parameter(1)
  ROOT c = pred[64] compare(x, y), direction={direction}{kind}
}}
"""
    check(text, x, y, options=RAW)


def test_select_clamp():
    text = """HloModule m
ENTRY e {
  p = pred[32] parameter(0)
  x = f32[32] parameter(1)
  y = f32[32] parameter(2)
  lo = f32[] constant(-1)
  hi = f32[] constant(1.5)
  s = f32[32] select(p, x, y)
  ROOT c = f32[32] clamp(lo, s, hi)
}
"""
    check(text, rand(np.bool_, 32), rand(np.float32, 32, seed=1), rand(np.float32, 32, seed=2))


CONVERT_TYPES = ["pred", "s8", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64"]


@pytest.mark.parametrize("frm", CONVERT_TYPES)
@pytest.mark.parametrize("to", CONVERT_TYPES)
def test_convert(frm, to):
    from hlo.shapes import primitive_type
    values = np.array([0, 1, -1, 2.5, -2.5, 300, -300, 1e10, -1e10, np.nan, np.inf, -np.inf, 65504, 0.1,
                       7, 255], dtype=np.float64)
    t = primitive_type(frm)
    if t.is_float:
        with np.errstate(over="ignore"):
            x = values.astype(t.dtype)
    elif t.is_pred:
        x = values != 0
    else:
        x = np.nan_to_num(values, posinf=0, neginf=0).astype(np.int64).astype(t.dtype)
    text = f"HloModule m\nENTRY e {{\n  x = {frm}[16] parameter(0)\n  ROOT y = {to}[16] convert(x)\n}}\n"
    check(text, x, options=RAW)


@pytest.mark.parametrize("t", ["bf16", "f16"])
def test_narrow_float_arithmetic(t):
    from hlo.shapes import primitive_type
    dtype = primitive_type(t).dtype
    x, y = rand(np.float32, 64, seed=1).astype(dtype), rand(np.float32, 64, seed=2).astype(dtype)
    text = f"""HloModule m
ENTRY e {{
  x = {t}[64] parameter(0)
  y = {t}[64] parameter(1)
  a = {t}[64] multiply(x, y)
  b = {t}[64] add(a, x)
  c = {t}[64] divide(b, y)
  ROOT d = {t}[64] exponential(c)
}}
"""
    check(text, x, y, rtol=2e-2, atol=1e-3)


def test_bitcast_convert_same_and_other_widths():
    text = """HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  i = s32[8] bitcast-convert(x)
  w = u32[4,2] parameter(1)
  wide = u64[4] bitcast-convert(w)
  narrow = u16[4,4] bitcast-convert(wide)
  ROOT t = (s32[8], u64[4], u16[4,4]) tuple(i, wide, narrow)
}
"""
    check(text, rand(np.float32, 8), rand(np.uint32, 4, 2))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["add", "multiply", "divide", "remainder", "shift-right-arithmetic", "maximum"]),
       st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8),
       st.lists(st.integers(-2**31, 2**31 - 1), min_size=8, max_size=8))
def test_integer_ops_property(op, xs, ys):
    """Compiled integer arithmetic equals the interpreter's on arbitrary s32 values."""
    check(binary_module(op, "s32", "8"), np.array(xs, np.int32), np.array(ys, np.int32), options=RAW)


# --------------------------------------------------------------------------- data movement

def test_data_movement_ops():
    text = """HloModule m
ENTRY e {
  x = f32[4,6] parameter(0)
  b = f32[3,4,6] broadcast(x), dimensions={1,2}
  t = f32[6,4] transpose(x), dimensions={1,0}
  r = f32[2,12] reshape(x)
  s = f32[2,2] slice(x), slice={[1:4:2], [0:6:3]}
  zero = f32[] constant(0)
  p = f32[10,12] pad(x, zero), padding=1_2_1x0_1_1
  c = f32[4,18] concatenate(x, x, x), dimensions={1}
  v = f32[4,6] reverse(x), dimensions={0,1}
  i = s32[4,6] iota(), iota_dimension=1
  ROOT out = (f32[3,4,6], f32[6,4], f32[2,12], f32[2,2], f32[10,12], f32[4,18], f32[4,6], s32[4,6]) tuple(b, t, r, s, p, c, v, i)
}
"""
    check(text, rand(np.float32, 4, 6))


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2), st.integers(0, 2), st.integers(0, 1),
       st.integers(1, 2), st.booleans())
def test_pad_slice_reverse_property(rows, cols, lo, hi, interior, stride, reverse):
    """Index arithmetic of pad, strided slice and reverse agrees with the interpreter."""
    padded = (rows + lo + hi + max(rows - 1, 0) * interior, cols + lo + hi + max(cols - 1, 0) * interior)
    sliced = ((padded[0] + stride - 1) // stride, (padded[1] + stride - 1) // stride)
    dims = "{0,1}" if reverse else "{1}"
    text = f"""HloModule m
ENTRY e {{
  x = s32[{rows},{cols}] parameter(0)
  z = s32[] constant(-7)
  p = s32[{padded[0]},{padded[1]}] pad(x, z), padding={lo}_{hi}_{interior}x{lo}_{hi}_{interior}
  s = s32[{sliced[0]},{sliced[1]}] slice(p), slice={{[0:{padded[0]}:{stride}], [0:{padded[1]}:{stride}]}}
  ROOT r = s32[{sliced[0]},{sliced[1]}] reverse(s), dimensions={dims}
}}
"""
    check(text, np.arange(rows * cols, dtype=np.int32).reshape(rows, cols), options=RAW)


def test_layouts_and_bitcast():
    text = """HloModule m
ENTRY e {
  x = f32[4,6]{0,1} parameter(0)
  y = f32[4,6]{1,0} copy(x)
  z = f32[6,4]{1,0} transpose(y), dimensions={1,0}
  ROOT w = f32[24]{0} bitcast(z)
}
"""
    check(text, rand(np.float32, 4, 6), options=RAW)


def test_dynamic_slice_and_update():
    text = """HloModule m
ENTRY e {
  x = f32[8,6] parameter(0)
  u = f32[3,2] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  d = f32[3,2] dynamic-slice(x, i, j), dynamic_slice_sizes={3,2}
  a = f32[8,6] add(x, x)
  up = f32[8,6] dynamic-update-slice(a, u, i, j)
  ROOT t = (f32[3,2], f32[8,6]) tuple(d, up)
}
"""
    for i, j in [(0, 0), (2, 3), (7, 5), (-3, 9)]:  # out-of-range starts are clamped
        check(text, rand(np.float32, 8, 6), rand(np.float32, 3, 2, seed=1), np.int32(i), np.int32(j))


def test_gather_and_scatter():
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[5,4] parameter(0)
  idx = s32[6,1] parameter(1)
  upd = f32[6,4] parameter(2)
  g = f32[6,4] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  s = f32[5,4] scatter(x, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT t = (f32[6,4], f32[5,4]) tuple(g, s)
}
"""
    idx = np.array([[0], [4], [2], [2], [7], [-1]], dtype=np.int32)  # duplicates and out-of-range
    check(text, rand(np.float32, 5, 4), idx, rand(np.float32, 6, 4, seed=1))


# --------------------------------------------------------------------------- reductions, dot, conv

def test_reduce_and_variadic_argmax():
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(gt, tie)
  v = f32[] select(pick, v0, v1)
  i = s32[] select(pick, i0, i1)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[6,40] parameter(0)
  zero = f32[] constant(0)
  rows = f32[6] reduce(x, zero), dimensions={1}, to_apply=add
  cols = f32[40] reduce(x, zero), dimensions={0}, to_apply=add
  all = f32[] reduce(x, zero), dimensions={0,1}, to_apply=add
  iota = s32[6,40] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  am = (f32[6], s32[6]) reduce(x, iota, ninf, m1), dimensions={1}, to_apply=argmax
  ROOT t = (f32[6], f32[40], f32[], (f32[6], s32[6])) tuple(rows, cols, all, am)
}
"""
    check(text, rand(np.float32, 6, 40), rtol=1e-5)


def test_reduce_window():
    text = """HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT r = f32[2,5,5,3] reduce-window(x, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
}
"""
    check(text, rand(np.float32, 2, 9, 9, 3))


def test_select_and_scatter():
    text = """HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[6,6] parameter(0)
  src = f32[3,3] parameter(1)
  zero = f32[] constant(0)
  ROOT r = f32[6,6] select-and-scatter(x, src, zero), window={size=2x2 stride=2x2}, select=ge, scatter=add
}
"""
    check(text, rand(np.float32, 6, 6), rand(np.float32, 3, 3, seed=1))


def test_dot_batched_and_matmul():
    text = """HloModule m
ENTRY e {
  a = f32[3,5,7] parameter(0)
  b = f32[3,7,4] parameter(1)
  c = f32[3,5,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  m = f32[16,32] parameter(2)
  n = f32[32,8] parameter(3)
  d = f32[16,8] dot(m, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3,5,4], f32[16,8]) tuple(c, d)
}
"""
    check(text, rand(np.float32, 3, 5, 7), rand(np.float32, 3, 7, 4, seed=1), rand(np.float32, 16, 32, seed=2),
          rand(np.float32, 32, 8, seed=3), rtol=1e-5, atol=1e-5)


def test_integer_and_bf16_dot():
    import ml_dtypes
    text = """HloModule m
ENTRY e {
  a = s32[4,6] parameter(0)
  b = s32[6,3] parameter(1)
  c = s32[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = bf16[4,6] parameter(2)
  y = bf16[6,3] parameter(3)
  z = bf16[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[4,3], bf16[4,3]) tuple(c, z)
}
"""
    ints = [np.random.default_rng(s).integers(-50, 50, d).astype(np.int32) for s, d in ((1, (4, 6)), (2, (6, 3)))]
    bf = [rand(np.float32, *d, seed=s).astype(ml_dtypes.bfloat16) for s, d in ((3, (4, 6)), (4, (6, 3)))]
    check(text, *ints, *bf, rtol=1e-2, atol=1e-2)


def test_convolution_padding_stride_groups():
    text = """HloModule m
ENTRY e {
  x = f32[2,9,9,4] parameter(0)
  k = f32[3,3,2,6] parameter(1)
  ROOT c = f32[2,5,5,6] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
}
"""
    check(text, rand(np.float32, 2, 9, 9, 4), rand(np.float32, 3, 3, 2, 6, seed=1), rtol=1e-5, atol=1e-5)


def test_convolution_dilated_nchw():
    text = """HloModule m
ENTRY e {
  x = f32[1,3,8,8] parameter(0)
  k = f32[4,3,3,3] parameter(1)
  ROOT c = f32[1,4,8,8] convolution(x, k), window={size=3x3 pad=2_2x2_2 lhs_dilate=1x1 rhs_dilate=2x2}, dim_labels=bf01_oi01->bf01
}
"""
    check(text, rand(np.float32, 1, 3, 8, 8), rand(np.float32, 4, 3, 3, 3, seed=1), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- sort, control flow

def test_sort_stable_multi_operand_and_topk():
    text = """HloModule m
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[3,37] parameter(0)
  i = s32[3,37] iota(), iota_dimension=1
  s = (f32[3,37], s32[3,37]) sort(x, i), dimensions={1}, is_stable=true, to_apply=less
  k = (f32[3,5], s32[3,5]) topk(x), k=5, largest=true
  ROOT t = ((f32[3,37], s32[3,37]), (f32[3,5], s32[3,5])) tuple(s, k)
}
"""
    x = np.round(rand(np.float32, 3, 37), 0)  # many ties: stability matters
    check(text, x)


WHILE_MODULE = """HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] multiply(x, x)
  half = f32[4] constant({0.5, 0.5, 0.5, 0.5})
  z = f32[4] add(y, half)
  ROOT t = (s32[], f32[4]) tuple(j, z)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}
"""


def test_while_loop():
    check(WHILE_MODULE, np.array([0.1, 0.2, -0.3, 0.4], np.float32))


def test_while_swapping_state():
    text = """HloModule m
cond {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[3] get-tuple-element(s), index=1
  b = f32[3] get-tuple-element(s), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[3], f32[3]) tuple(j, b, a)
}
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(zero, a, b)
  ROOT w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
}
"""
    check(text, rand(np.float32, 3), rand(np.float32, 3, seed=1))


def test_conditional_pred_and_index_and_call():
    text = """HloModule m
neg {
  x = f32[4] parameter(0)
  ROOT y = f32[4] negate(x)
}
dbl {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
sq {
  x = f32[4] parameter(0)
  ROOT y = f32[4] multiply(x, x)
}
helper {
  x = f32[4] parameter(0)
  ROOT y = f32[4] exponential(x)
}
ENTRY e {
  p = pred[] parameter(0)
  k = s32[] parameter(1)
  x = f32[4] parameter(2)
  a = f32[4] conditional(p, x, x), true_computation=neg, false_computation=dbl
  b = f32[4] conditional(k, x, x, x), branch_computations={neg, dbl, sq}
  c = f32[4] call(x), to_apply=helper
  ROOT t = (f32[4], f32[4], f32[4]) tuple(a, b, c)
}
"""
    x = rand(np.float32, 4)
    for p, k in [(True, 0), (False, 1), (True, 2), (False, 7), (True, -1)]:
        check(text, np.bool_(p), np.int32(k), x, rtol=2e-5)


# --------------------------------------------------------------------------- linear algebra, rng

def test_cholesky_and_triangular_solve():
    text = """HloModule m
ENTRY e {
  a = f32[2,5,5] parameter(0)
  b = f32[2,5,3] parameter(1)
  l = f32[2,5,5] cholesky(a), lower=true
  u = f32[2,5,5] cholesky(a), lower=false
  x = f32[2,5,3] triangular-solve(l, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  y = f32[2,5,3] triangular-solve(l, x), left_side=true, lower=true, transpose_a=TRANSPOSE
  c = f32[2,3,5] parameter(2)
  z = f32[2,3,5] triangular-solve(u, c), left_side=false, lower=false, transpose_a=NO_TRANSPOSE, unit_diagonal=true
  ROOT t = (f32[2,5,5], f32[2,5,5], f32[2,5,3], f32[2,3,5]) tuple(l, u, y, z)
}
"""
    m = rand(np.float32, 2, 5, 5)
    spd = (m @ np.swapaxes(m, 1, 2) + 5 * np.eye(5, dtype=np.float32)).astype(np.float32)
    spd[1, 0, 0] = -100  # not positive definite: NaN
    check(text, spd, rand(np.float32, 2, 5, 3, seed=1), rand(np.float32, 2, 3, 5, seed=2), rtol=1e-4, atol=1e-4)


def test_lapack_custom_calls():
    text = """HloModule m
ENTRY e {
  a = f32[2,4,4]{1,2,0} parameter(0)
  b = f32[2,4,2]{1,2,0} parameter(1)
  f = (f32[2,4,4]{1,2,0}, s32[2]) custom-call(a), custom_call_target="lapack_spotrf_ffi", backend_config={uplo = 76 : ui8}
  l = f32[2,4,4]{1,2,0} get-tuple-element(f), index=0
  x = f32[2,4,2]{1,2,0} custom-call(l, b), custom_call_target="lapack_strsm_ffi", backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}
  ROOT t = (f32[2,4,4]{1,2,0}, s32[2], f32[2,4,2]{1,2,0}) tuple(l, get-tuple-element(f), x)
}
""".replace("tuple(l, get-tuple-element(f), x)", "tuple(l, info, x)").replace(
        "  l = f32", "  info = s32[2] get-tuple-element(f), index=1\n  l = f32")
    m = rand(np.float32, 2, 4, 4)
    spd = (m @ np.swapaxes(m, 1, 2) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)
    check(text, spd, rand(np.float32, 2, 4, 2, seed=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox", "rng_default"])
def test_rng_bit_generator_bit_exact(algorithm):
    text = f"""HloModule m
ENTRY e {{
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u32[3,7]) rng-bit-generator(s), algorithm={algorithm}
}}
"""
    check(text, np.array([42, 7], np.uint64))  # expanded with and without the default pipeline


def test_batch_norm_inference():
    text = """HloModule m
ENTRY e {
  x = f32[2,3,4] parameter(0)
  s = f32[4] parameter(1)
  o = f32[4] parameter(2)
  m = f32[4] parameter(3)
  v = f32[4] parameter(4)
  ROOT y = f32[2,3,4] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=2
}
"""
    check(text, rand(np.float32, 2, 3, 4), rand(np.float32, 4, seed=1), rand(np.float32, 4, seed=2),
          rand(np.float32, 4, seed=3), np.abs(rand(np.float32, 4, seed=4)) + 0.5, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- complex, fft

def test_complex_arithmetic():
    text = """HloModule m
ENTRY e {
  x = f32[16] parameter(0)
  y = f32[16] parameter(1)
  z = c64[16] complex(x, y)
  w = c64[16] parameter(2)
  p = c64[16] multiply(z, w)
  q = c64[16] divide(p, w)
  s = c64[16] subtract(q, z)
  a = f32[16] abs(w)
  e = c64[16] exponential(z)
  n = c64[16] negate(e)
  c = c64[16] convert(x)
  r = f32[16] real(p)
  i = f32[16] imag(p)
  eq = pred[16] compare(z, w), direction=NE
  ROOT t = (c64[16], f32[16], c64[16], c64[16], f32[16], f32[16], pred[16]) tuple(s, a, n, c, r, i, eq)
}
"""
    w = (rand(np.float32, 16, seed=3) + 1j * rand(np.float32, 16, seed=4)).astype(np.complex64)
    check(text, rand(np.float32, 16, seed=1), rand(np.float32, 16, seed=2), w, rtol=1e-5, atol=1e-5)


def test_fft_kinds():
    text = """HloModule m
ENTRY e {
  x = f32[3,16] parameter(0)
  z = c64[3,8] parameter(1)
  f = c64[3,8] fft(z), fft_type=FFT, fft_length={8}
  i = c64[3,8] fft(z), fft_type=IFFT, fft_length={8}
  r = c64[3,9] fft(x), fft_type=RFFT, fft_length={16}
  b = f32[3,16] fft(r), fft_type=IRFFT, fft_length={16}
  two = c64[3,8] fft(z), fft_type=FFT, fft_length={3,8}
  ROOT t = (c64[3,8], c64[3,8], c64[3,9], f32[3,16], c64[3,8]) tuple(f, i, r, b, two)
}
"""
    z = (rand(np.float32, 3, 8, seed=3) + 1j * rand(np.float32, 3, 8, seed=4)).astype(np.complex64)
    check(text, rand(np.float32, 3, 16), z, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- errors, cache, API

def test_unsupported_op_is_a_located_compile_error():
    text = ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  t = token[] after-all()\n"
            "  ROOT y = (f32[4], token[]) infeed(t)\n}\n")
    with pytest.raises(HloError) as info:
        JitExecutable(parse_module(text, "bad.hlo"), RAW)
    message = str(info.value)
    assert "infeed" in message and "bad.hlo:5:" in message


def test_an_opcode_the_backend_does_not_compile_says_why():
    text = ("HloModule m\nENTRY e {\n  t = token[] after-all()\n"
            "  ROOT r = token[] outfeed(f32[] constant(1), t), outfeed_shape=f32[]\n}\n")
    with pytest.raises(HloError) as info:
        lower_module(parse_module(text, "bad.hlo"), RAW)
    message = str(info.value)
    assert "'outfeed'" in message and "bad.hlo:4:" in message and EMITTERS.reason(Op.OUTFEED) in message


def test_sub_byte_element_types_compile():
    """s4 and the other narrow types compile now (tests/codegen/test_narrow_types.py)."""
    text = "HloModule m\nENTRY e {\n  x = s4[4] parameter(0)\n  ROOT y = s4[4] negate(x)\n}\n"
    assert "define" in lower_module(parse_module(text, "ok.hlo"), RAW).llvm_ir


def test_second_compile_hits_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    module = parse_module(WHILE_MODULE, "w.hlo")
    x = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    first = JitExecutable(module)
    assert not first.from_cache
    second = JitExecutable(module)
    assert second.from_cache
    assert [f for f in (tmp_path / "hlo-toolchain" / "parts").rglob("*") if f.is_file()]
    for a, b in zip(first.run(x), second.run(x)):
        np.testing.assert_array_equal(a, b)


def test_lowered_module_api():
    lowered = lower_module(parse_module(WHILE_MODULE, "w.hlo"))
    assert isinstance(lowered, LoweredModule)
    assert lowered.entry_name == "hlo_entry" and "define void @\"hlo_entry\"" in lowered.parts[0].llvm_ir
    assert "define void @hlo_entry(" in lowered.llvm_ir   # every part linked into one module
    assert [str(s.element_type) for s in lowered.params] == ["f32"]
    assert [str(s.element_type) for s in lowered.results] == ["s32", "f32"]
    assert lowered.temp_bytes % 64 == 0


def test_arena_reuses_dead_temporaries():
    chain = "\n".join(f"  v{i + 1} = f32[1024] exponential(v{i})" for i in range(6))
    text = f"HloModule m\nENTRY e {{\n  v0 = f32[1024] parameter(0)\n{chain}\n  ROOT r = f32[1024] negate(v6)\n}}\n"
    lowered = lower_module(parse_module(text, "chain.hlo"), RAW)
    assert lowered.temp_bytes <= 2 * 4096  # six temporaries, at most two live at once
    check(text, rand(np.float32, 1024) / 8, options=RAW, rtol=1e-5)


def test_compile_object_for_host_and_cross_target():
    from hlo.codegen import compile_object
    module = parse_module(WHILE_MODULE, "w.hlo")
    host = compile_object(lower_module(module))
    assert host[:4] == b"\x7fELF"
    arm = CodegenOptions(triple="aarch64-unknown-linux-gnu")
    obj = compile_object(lower_module(module, arm), arm)
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == 183  # EM_AARCH64


def test_run_takes_lists_for_arrays_and_tuples_for_tuple_parameters():
    text = """HloModule m
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  t = (f32[2], s32[]) parameter(0)
  v = f32[3] parameter(1)
  a = f32[2] get-tuple-element(t), index=0
  z = f32[] constant(0)
  s = f32[] reduce(v, z), dimensions={0}, to_apply=add
  sb = f32[2] broadcast(s), dimensions={}
  ROOT r = f32[2] add(a, sb)
}
"""
    executable = JitExecutable(parse_module(text, "t.hlo"), RAW)
    (got,) = executable.run(([1.0, 2.0], 7), [1, 2, 3])
    np.testing.assert_array_equal(got, np.array([7.0, 8.0], np.float32))
    with pytest.raises(ValueError, match="expected a tuple of 2 values"):
        executable.run(np.zeros(2, np.float32), [1, 2, 3])
    with pytest.raises(ValueError, match=r"argument leaf 0: expected f32\[2\]\{0\}, got float32\[\]"):
        executable.run((1.0, 7), [1, 2, 3])
    with pytest.raises(ValueError, match="expected 2 arguments"):
        executable.run([1.0, 2.0])
