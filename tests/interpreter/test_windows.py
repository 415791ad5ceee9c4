"""Tests of hlo.interpreter.windows: pad, reduce, reduce-window, select-and-scatter."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.interpreter.combiner import Combiner
from hlo.attributes import Window, WindowDim
from hlo.interpreter.windows import pad, reduce, reduce_window, select_and_scatter
from hlo.shape_inference import window_output_dims


def window(size, stride=None, pad=None, lhs_dilate=None, rhs_dilate=None):
    n = len(size)
    stride = stride or (1,) * n
    pad = pad or ((0, 0),) * n
    lhs_dilate = lhs_dilate or (1,) * n
    rhs_dilate = rhs_dilate or (1,) * n
    return Window(tuple(WindowDim(s, st_, p[0], p[1], rd, ld)
                        for s, st_, p, ld, rd in zip(size, stride, pad, lhs_dilate, rhs_dilate)))


def binary(fn, ufunc=None, name="f"):
    return Combiner(lambda a, b: (fn(a, b),), 2, ufunc, name)


ADD = binary(np.add, np.add, "add")
ADD_SLOW = binary(np.add, None, "add_no_hint")
MAX = binary(np.maximum, np.maximum, "max")
MIN = binary(np.minimum, np.minimum, "min")
GE = binary(np.greater_equal, None, "ge")


def argmax_combiner():
    """(m, i, v, j) -> (v, j) if v >= m else (m, i): later ties win."""
    def fn(m, i, v, j):
        take = v >= m
        return np.where(take, v, m), np.where(take, j, i)
    return Combiner(fn, 4, None, "max_argmax")


def s32(x):
    return np.array(x, np.int32)


# --------------------------------------------------------------------------- window_output_dims


def test_window_output_dims_examples():
    assert window_output_dims((5,), window((3,), stride=(2,))) == (2,)
    assert window_output_dims((5,), window((3,), stride=(2,), pad=((1, 1),))) == (3,)
    # Spec dilation example: 3 rows -> 5 dilated -> 8 padded, window span 4, stride 4.
    w = window((2, 1), stride=(4, 1), pad=((2, 1), (0, 0)), lhs_dilate=(2, 1), rhs_dilate=(3, 1))
    assert window_output_dims((3, 2), w) == (2, 2)
    assert window_output_dims((13, 12, 8, 15), window(
        (1, 1, 7, 1), stride=(1, 4, 1, 1), pad=((0, 0), (0, 0), (3, 3), (0, 0)))) == (13, 3, 8, 15)


def test_window_output_dims_window_too_big_and_empty_input():
    assert window_output_dims((2,), window((3,))) == (0,)
    assert window_output_dims((0,), window((1,))) == (0,)
    assert window_output_dims((0,), window((1,), pad=((1, 0),))) == (1,)
    assert window_output_dims((), Window(())) == ()


@pytest.mark.parametrize("w, message", [
    (Window((WindowDim(0),)), "size"),
    (Window((WindowDim(1, stride=0),)), "stride"),
    (Window((WindowDim(1, base_dilation=0),)), "dilations"),
    (Window((WindowDim(1, window_dilation=0),)), "dilations"),
    (window((1,), pad=((-3, 0),)), "removes more"),
    (window((1, 1)), "dimensions"),
])
def test_window_output_dims_invalid(w, message):
    with pytest.raises(ValueError, match=message):
        window_output_dims((2,), w)


# --------------------------------------------------------------------------- pad


def test_pad_spec_examples():
    out = pad(np.array([1, 2, 3], np.float32), np.float32(0.1), ((3, 1, 0),))
    np.testing.assert_array_equal(out, np.array([0.1, 0.1, 0.1, 1, 2, 3, 0.1], np.float32))
    assert pad(s32([1, 2, 3]), 0, ((-1, 1, 1),)).tolist() == [0, 2, 0, 3, 0]
    assert pad(s32([1, 2, 3]), 9, ((1, -2, 2),)).tolist() == [9, 1, 9, 9, 2, 9]


def test_pad_negative_edge_beyond_data():
    assert pad(s32([1, 2, 3]), 7, ((-5, 3, 0),)).tolist() == [7]
    assert pad(s32([1, 2, 3]), 7, ((-3, 0, 0),)).tolist() == []
    assert pad(s32([1, 2, 3]), 7, ((2, -4, 0),)).tolist() == [7]


def test_pad_xla_shape_and_2d_values():
    out = pad(np.zeros((1, 25, 7, 7), np.float32), np.float32(1),
              ((0, 0, 0), (0, 0, 0), (2, 2, 1), (2, 2, 0)))
    assert out.shape == (1, 25, 17, 11)
    out = pad(s32([[1, 2], [3, 4]]), 0, ((1, 0, 0), (0, 1, 1)))
    assert out.tolist() == [[0, 0, 0, 0], [1, 0, 2, 0], [3, 0, 4, 0]]


def test_pad_identity_scalar_and_empty():
    x = s32([[1, 2], [3, 4]])
    np.testing.assert_array_equal(pad(x, 0, ((0, 0, 0), (0, 0, 0))), x)
    assert pad(np.array(5, np.int32), 0, ()).tolist() == 5
    assert pad(np.zeros((0,), np.int32), 4, ((1, 1, 3),)).tolist() == [4, 4]
    assert pad(s32([1]), 0, ((0, 0, 5),)).tolist() == [1]


def test_pad_keeps_dtype():
    out = pad(np.array([1.5], ml_dtypes.bfloat16), np.array(2, ml_dtypes.bfloat16), ((1, 0, 0),))
    assert out.dtype == ml_dtypes.bfloat16 and out.astype(np.float32).tolist() == [2, 1.5]


@pytest.mark.parametrize("config, message", [(((0, 0, -1),), "interior"),
                                             (((-2, -2, 0),), "negative size"),
                                             (((0, 0, 0), (0, 0, 0)), "dimensions")])
def test_pad_invalid(config, message):
    with pytest.raises(ValueError, match=message):
        pad(s32([1, 2, 3]), 0, config)


def reference_pad(x, value, config):
    """Element-wise definition: out[j] = x[i] where j = lo + i*(interior+1)."""
    out_shape = [lo + hi + n + max(n - 1, 0) * it for (lo, hi, it), n in zip(config, x.shape)]
    out = np.full(out_shape, value, x.dtype)
    for i in itertools.product(*(range(n) for n in x.shape)):
        j = tuple(lo + k * (it + 1) for k, (lo, _, it) in zip(i, config))
        if all(0 <= a < b for a, b in zip(j, out_shape)):
            out[j] = x[i]
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-4, 3), st.integers(-4, 3),
                          st.integers(0, 2)), min_size=0, max_size=3))
def test_pad_matches_elementwise_definition(dims):
    shape = [d[0] for d in dims]
    config = []
    for n, lo, hi, it in dims:
        full = n + max(n - 1, 0) * it
        hi = max(hi, -(full + lo))  # keep the output size >= 0
        config.append((lo, hi, it))
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(pad(x, -1, config), reference_pad(x, -1, config))


# --------------------------------------------------------------------------- reduce


@pytest.mark.parametrize("combiner", [ADD, ADD_SLOW], ids=["ufunc", "generic"])
def test_reduce_spec_examples(combiner):
    x = s32([[1, 2, 3], [4, 5, 6]])
    assert reduce([x], [s32(0)], (0,), combiner)[0].tolist() == [5, 7, 9]
    assert reduce([x], [s32(0)], (1,), combiner)[0].tolist() == [6, 15]
    x3 = np.stack([x] * 4)
    assert reduce([x3], [s32(0)], (0,), combiner)[0].tolist() == [[4, 8, 12], [16, 20, 24]]
    assert reduce([x3], [s32(0)], (2,), combiner)[0].tolist() == [[6, 15]] * 4
    assert reduce([x3], [s32(0)], (1, 0), combiner)[0].tolist() == [20, 28, 36]
    total = reduce([x3], [s32(0)], (0, 1, 2), combiner)[0]
    assert isinstance(total, np.ndarray) and total.dtype == np.int32 and int(total) == 84
    assert total.shape == ()


@pytest.mark.parametrize("combiner", [ADD, ADD_SLOW], ids=["ufunc", "generic"])
def test_reduce_init_joins_once_per_output(combiner):
    x = s32([[1, 2, 3], [4, 5, 6]])
    assert reduce([x], [s32(10)], (1,), combiner)[0].tolist() == [16, 25]


@pytest.mark.parametrize("combiner", [ADD, ADD_SLOW], ids=["ufunc", "generic"])
def test_reduce_empty_reduced_dim_gives_init(combiner):
    out = reduce([np.zeros((3, 0), np.float32)], [np.float32(7)], (1,), combiner)[0]
    assert out.tolist() == [7, 7, 7]
    assert reduce([np.zeros((0, 2), np.float32)], [np.float32(7)], (1,), combiner)[0].shape == (0,)


def test_reduce_max_with_nan_and_no_dims():
    x = np.array([[1, np.nan], [3, 2]], np.float32)
    out = reduce([x], [np.float32(-np.inf)], (1,), MAX)[0]
    assert np.isnan(out[0]) and out[1] == 3
    np.testing.assert_array_equal(reduce([x], [np.float32(-np.inf)], (), MAX)[0], x)


def test_reduce_integer_sum_wraps():
    x = np.array([100, 100, 100], np.int8)
    for combiner in (ADD, ADD_SLOW):
        out = reduce([x], [np.int8(0)], (0,), combiner)[0]
        assert out.dtype == np.int8 and int(out) == 300 - 256


def test_reduce_bf16_sum_accumulates_in_f32():
    x = np.array([1.0] + [2.0 ** -9] * 256, ml_dtypes.bfloat16)
    out = reduce([x], [np.array(0, ml_dtypes.bfloat16)], (0,), ADD)[0]
    assert out.dtype == ml_dtypes.bfloat16 and float(out) == 1.5


def test_reduce_pred_or():
    x = np.array([[True, False], [False, False]])
    out = reduce([x], [np.bool_(False)], (1,), binary(np.logical_or, np.logical_or))[0]
    assert out.tolist() == [True, False]


def test_variadic_argmax_later_ties_win():
    values = np.array([[3, 7, 7, 1], [2, 2, 2, 2], [0, 9, 1, 9]], np.float32)
    index = np.broadcast_to(np.arange(4, dtype=np.int32), values.shape)
    m, i = reduce([values, index], [np.float32(-np.inf), s32(-1)], (1,), argmax_combiner())
    assert m.tolist() == [7, 2, 9] and i.tolist() == [2, 3, 3]
    assert m.dtype == np.float32 and i.dtype == np.int32


def test_variadic_reduce_keeps_order_of_a_non_commutative_combiner():
    # Composition of affine maps x -> a*x + b is associative, not commutative.
    def compose(a1, b1, a2, b2):
        return a1 * a2, b1 * a2 + b2
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (5, 7)).astype(np.int64)
    b = rng.integers(-3, 4, (5, 7)).astype(np.int64)
    out_a, out_b = reduce([a, b], [np.int64(1), np.int64(0)], (1,), Combiner(compose, 4))
    for row in range(5):
        ea, eb = 1, 0
        for k in range(7):
            ea, eb = compose(ea, eb, a[row, k], b[row, k])
        assert (out_a[row], out_b[row]) == (ea, eb)


def test_reduce_with_input_type_differing_from_accumulator():
    # bf16 inputs summed into an f32 accumulator: the fold stays sequential.
    seen = []

    def add(acc, x):
        seen.append((acc.dtype, x.dtype))
        return acc + x.astype(np.float32)
    x = np.array([[1, 2, 3]], ml_dtypes.bfloat16)
    out = reduce([x], [np.float32(0.5)], (1,), Combiner(add, 2))[0]
    assert out.dtype == np.float32 and out.tolist() == [6.5]
    assert all(s == (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)) for s in seen)


def test_reduce_invalid():
    with pytest.raises(ValueError, match="distinct"):
        reduce([s32([1])], [s32(0)], (0, 0), ADD)
    with pytest.raises(ValueError, match="distinct"):
        reduce([s32([1])], [s32(0)], (1,), ADD)
    with pytest.raises(ValueError, match="init"):
        reduce([s32([1])], [], (0,), ADD)
    with pytest.raises(ValueError, match="shape"):
        reduce([s32([1]), s32([1, 2])], [s32(0), s32(0)], (0,), argmax_combiner())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=3), st.data())
def test_reduce_paths_agree_with_numpy(shape, data):
    dims = data.draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True,
                              max_size=len(shape))) if shape else []
    x = np.random.default_rng(len(shape)).integers(-100, 100, shape).astype(np.int32)
    expected = x.sum(axis=tuple(dims), dtype=np.int32) + 3
    if x.size and all(shape[d] == 1 for d in dims):
        expected = x.reshape(expected.shape)  # XLA:CPU: a reduce that keeps every element ignores init
    for combiner in (ADD, ADD_SLOW):
        np.testing.assert_array_equal(reduce([x], [s32(3)], tuple(dims), combiner)[0], expected)


# --------------------------------------------------------------------------- reduce-window


def test_reduce_window_spec_1d_min():
    x = np.array([10000, 1000, 100, 10, 1], np.float32)
    big = np.float32(np.finfo(np.float32).max)
    assert reduce_window([x], [big], window((3,), stride=(2,)), MIN)[0].tolist() == [100, 1]
    same = window((3,), stride=(2,), pad=((1, 1),))
    assert reduce_window([x], [big], same, MIN)[0].tolist() == [1000, 10, 1]


def test_reduce_window_2d_tiles():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = reduce_window([x], [np.float32(-np.inf)], window((2, 3), stride=(2, 3)), MAX)[0]
    assert out.tolist() == [[8, 11], [20, 23]]


@pytest.mark.parametrize("combiner", [ADD, ADD_SLOW], ids=["ufunc", "generic"])
def test_reduce_window_spec_dilation_example(combiner):
    x = s32([[1, 2], [3, 4], [5, 6]])
    w = window((2, 1), stride=(4, 1), pad=((2, 1), (0, 0)), lhs_dilate=(2, 1), rhs_dilate=(3, 1))
    assert reduce_window([x], [s32(0)], w, combiner)[0].tolist() == [[0, 0], [3, 4]]


@pytest.mark.parametrize("combiner", [ADD, ADD_SLOW], ids=["ufunc", "generic"])
def test_reduce_window_skips_padding_and_holes(combiner):
    # Init 100 is not neutral: it is added once per window, padding adds nothing.
    x = s32([1, 2, 3])
    out = reduce_window([x], [s32(100)], window((2,), pad=((1, 1),)), combiner)[0]
    assert out.tolist() == [101, 103, 105, 103]
    # Base dilation: {1,_,2,_,3}; windows of 2 see one real element each.
    out = reduce_window([x], [s32(100)], window((2,), lhs_dilate=(2,)), combiner)[0]
    assert out.tolist() == [101, 102, 102, 103]


def test_reduce_window_cumulative_sum():
    x = np.arange(1, 11, dtype=np.float32)
    out = reduce_window([x], [np.float32(0)], window((10,), pad=((9, 0),)), ADD)[0]
    np.testing.assert_array_equal(out, np.cumsum(x))


def test_reduce_window_negative_padding():
    x = s32([1, 2, 3, 4, 5])
    out = reduce_window([x], [s32(0)], window((2,), pad=((-1, -1),)), ADD)[0]
    assert out.tolist() == [5, 7]


def test_reduce_window_rank0():
    # XLA:CPU: a reduce-window of a scalar is the scalar (init taken as the identity)
    out = reduce_window([np.float32(2.5)], [np.float32(1)], Window(()), ADD)[0]
    assert out.shape == () and float(out) == 2.5


def test_reduce_window_variadic_argmax():
    x = np.array([4, 1, 4, 6, 6, 0], np.float32)
    idx = np.arange(6, dtype=np.int32)
    m, i = reduce_window([x, idx], [np.float32(-np.inf), s32(-1)], window((3,), stride=(3,)),
                         argmax_combiner())
    assert m.tolist() == [4, 6] and i.tolist() == [2, 4]


def test_reduce_window_empty_output():
    out = reduce_window([s32([1, 2])], [s32(9)], window((3,)), ADD)[0]
    assert out.shape == (0,) and out.dtype == np.int32


def test_reduce_window_bf16_max():
    x = np.array([1, 3, 2, 5], ml_dtypes.bfloat16)
    out = reduce_window([x], [np.array(-np.inf, ml_dtypes.bfloat16)], window((2,), stride=(2,)),
                        MAX)[0]
    assert out.dtype == ml_dtypes.bfloat16 and out.astype(np.float32).tolist() == [3, 5]


def naive_reduce_window(x, init, w: Window, fn):
    out_dims = window_output_dims(x.shape, w)
    out = np.full(out_dims, init, x.dtype)
    for o in itertools.product(*(range(n) for n in out_dims)):
        acc = init
        for tap in itertools.product(*(range(wd.size) for wd in w.dims)):
            index = []
            for d, wd in enumerate(w.dims):
                p = o[d] * wd.stride - wd.padding_low + tap[d] * wd.window_dilation
                if p < 0 or p % wd.base_dilation or p // wd.base_dilation >= x.shape[d]:
                    break
                index.append(p // wd.base_dilation)
            else:
                acc = fn(acc, x[tuple(index)])
        out[o] = acc
    return out


@st.composite
def windowed_operands(draw, max_rank=2):
    rank = draw(st.integers(1, max_rank))
    shape, dims = [], []
    for _ in range(rank):
        n = draw(st.integers(1, 5))
        base_dilation = draw(st.integers(1, 2))
        base = (n - 1) * base_dilation + 1
        low = draw(st.integers(-min(2, base - 1), 2))
        high = draw(st.integers(-min(2, base - 1 + min(low, 0)), 2))
        dims.append(WindowDim(draw(st.integers(1, 3)), draw(st.integers(1, 3)), low, high,
                              draw(st.integers(1, 2)), base_dilation))
        shape.append(n)
    seed = draw(st.integers(0, 10_000))
    x = np.random.default_rng(seed).integers(-9, 10, shape).astype(np.int32)
    return x, Window(tuple(dims))


@settings(max_examples=80, deadline=None)
@given(windowed_operands())
def test_reduce_window_matches_naive_loops(case):
    x, w = case
    expected = naive_reduce_window(x, np.int32(5), w, lambda a, b: a + b)
    for combiner in (ADD, ADD_SLOW):
        np.testing.assert_array_equal(reduce_window([x], [s32(5)], w, combiner)[0], expected)
    expected = naive_reduce_window(x, np.int32(-100), w, max)
    np.testing.assert_array_equal(reduce_window([x], [s32(-100)], w, MAX)[0], expected)


# --------------------------------------------------------------------------- select-and-scatter


def test_select_and_scatter_spec_example():
    operand = np.array([[7, 2, 5, 3, 8], [3, 8, 9, 3, 4], [1, 5, 7, 5, 6], [0, 6, 2, 10, 2]],
                       np.float32)
    source = np.array([[2, 6], [3, 1]], np.float32)
    out = select_and_scatter(operand, source, np.float32(0), window((2, 3), stride=(2, 2)), GE, ADD)
    assert out.tolist() == [[0, 0, 0, 0, 0], [0, 0, 8, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 1, 0]]


def test_select_and_scatter_max_pool_gradient_with_padding():
    # All values negative: a padding cell (never selectable) would otherwise win.
    operand = np.array([[-5, -1, -7], [-2, -8, -3], [-9, -4, -6]], np.float32)
    source = np.array([[1, 2], [3, 4]], np.float32)
    w = window((2, 2), stride=(2, 2), pad=((1, 0), (1, 0)))
    out = select_and_scatter(operand, source, np.float32(0), w, GE, ADD)
    # Windows: {-5} | {-1,-7} / {-2,-9} | {-8,-3,-4,-6}
    assert out.tolist() == [[1, 2, 0], [3, 0, 4], [0, 0, 0]]


def test_select_and_scatter_ties_keep_first_with_ge():
    operand = np.array([5, 5, 5, 5], np.float32)
    out = select_and_scatter(operand, np.array([1, 10], np.float32), np.float32(0),
                             window((2,), stride=(2,)), GE, ADD)
    assert out.tolist() == [1, 0, 10, 0]
    # A strict comparison replaces the pick on ties: the last one wins.
    gt = binary(np.greater, None, "gt")
    out = select_and_scatter(operand, np.array([1, 10], np.float32), np.float32(0),
                             window((2,), stride=(2,)), gt, ADD)
    assert out.tolist() == [0, 1, 0, 10]


def test_select_and_scatter_overlapping_windows_combine_in_source_order():
    # scatter(current, source) = current * 10 + source records the order.
    operand = s32([0, 9, 0, 0])
    record = binary(lambda cur, src: cur * 10 + src, None, "record")
    out = select_and_scatter(operand, s32([1, 2, 3]), s32(0), window((2,)), GE, record)
    assert out.tolist() == [0, 12, 3, 0]


def test_select_and_scatter_all_padding_window_scatters_nothing():
    out = select_and_scatter(s32([4]), s32([7, 8]), s32(1), window((1,), pad=((1, 0),)), GE, ADD)
    assert out.tolist() == [9]


def test_select_and_scatter_base_dilation_skips_holes():
    operand = np.array([-3, -1], np.float32)  # dilated {-3, _, -1}; a hole must not be picked
    out = select_and_scatter(operand, np.array([5, 6], np.float32), np.float32(0),
                             window((2,), lhs_dilate=(2,)), GE, ADD)
    assert out.tolist() == [5, 6]


def test_select_and_scatter_invalid_source_shape():
    with pytest.raises(ValueError, match="source shape"):
        select_and_scatter(s32([1, 2, 3]), s32([1]), s32(0), window((2,)), GE, ADD)


def naive_select_and_scatter(operand, source, init, w: Window):
    out = np.full(operand.shape, init, operand.dtype)
    for o in itertools.product(*(range(n) for n in source.shape)):
        pick = None
        for tap in itertools.product(*(range(wd.size) for wd in w.dims)):
            index = []
            for d, wd in enumerate(w.dims):
                p = o[d] * wd.stride - wd.padding_low + tap[d] * wd.window_dilation
                if p < 0 or p % wd.base_dilation or p // wd.base_dilation >= operand.shape[d]:
                    break
                index.append(p // wd.base_dilation)
            else:
                if pick is None or not operand[pick] >= operand[tuple(index)]:
                    pick = tuple(index)
        if pick is not None:
            out[pick] = out[pick] * 3 + source[o]
    return out


@settings(max_examples=80, deadline=None)
@given(windowed_operands())
def test_select_and_scatter_matches_naive_loops(case):
    operand, w = case
    out_dims = window_output_dims(operand.shape, w)
    source = np.arange(1, int(np.prod(out_dims)) + 1, dtype=np.int32).reshape(out_dims)
    # A non-commutative scatter checks the combination order too.
    scatter = binary(lambda cur, src: cur * 3 + src, None, "ordered")
    expected = naive_select_and_scatter(operand, source, 1, w)
    np.testing.assert_array_equal(select_and_scatter(operand, source, s32(1), w, GE, scatter),
                                  expected)


ZERO_REDUCER = """HloModule m
r {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ROOT m = T[] OP(a, b)
}
ENTRY e {
  x = T[4] parameter(0)
  c = T[] constant(0)
  whole = T[] reduce(x, c), dimensions={0}, to_apply=r
  pairs = T[2] reduce-window(x, c), window={size=2 stride=2}, to_apply=r
  ROOT t = (T[], T[2]) tuple(whole, pairs)
}
"""


@pytest.mark.parametrize("t, dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16), ("f32", np.float32)])
@pytest.mark.parametrize("op", ["minimum", "maximum"])
def test_reductions_order_zeros_as_xla(t, dtype, op):
    # found by the fuzzer: numpy's minimum leaves +0 against -0, XLA (and the compiled code) give -0
    from hlo import parse_module
    from hlo.interpreter import run
    x = np.array([-0.0, 0.0, 0.0, -0.0], dtype)
    whole, pairs = run(parse_module(ZERO_REDUCER.replace("T[", f"{t}[").replace("OP", op), "z.hlo"), x)
    negative = op == "minimum"
    assert bool(np.signbit(np.float32(whole))) is negative
    assert np.signbit(np.asarray(pairs).astype(np.float32)).tolist() == [negative, negative]
