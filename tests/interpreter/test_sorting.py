"""Tests of the sorting kernels: sort with arbitrary comparators, and topk."""
import time

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.interpreter import sorting
from hlo.interpreter.combiner import Combiner
from hlo.interpreter.sorting import sort, topk, total_order_key


def keys_only(less):
    """A comparator for n operands that compares operand 0 only."""
    return lambda *args: (less(args[0], args[1]),)


LT = Combiner(keys_only(np.less), 2, name="lt")
GT = Combiner(keys_only(np.greater), 2, name="gt")
LT2 = Combiner(keys_only(np.less), 4, name="lt_keys")


def _f32_total_order(x):
    """JAX-style TOTALORDER key: bitcast to s32, flip the magnitude of negatives."""
    bits = np.asarray(x, np.float32).view(np.int32)
    return np.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits)


TOTAL_LT = Combiner(lambda a, b: (_f32_total_order(a) < _f32_total_order(b),), 2, name="total_lt")


@pytest.fixture(params=["all_pairs", "merge"])
def path(request, monkeypatch):
    """Run a test through both sorting strategies."""
    monkeypatch.setattr(sorting, "_ALL_PAIRS_LIMIT", 1 << 30 if request.param == "all_pairs" else 0)
    return request.param


# --------------------------------------------------------------------------- sort


def test_sort_multi_operand_spec_example(path):
    keys = np.array([3, 1], np.int32)
    vals = np.array([42, 50], np.int32)
    third = np.array([-3.0, 1.1], np.float32)
    cmp = Combiner(keys_only(np.less), 6)
    a, b, c = sort([keys, vals, third], 0, cmp, is_stable=False)
    np.testing.assert_array_equal(a, [1, 3])
    np.testing.assert_array_equal(b, [50, 42])
    np.testing.assert_array_equal(c, np.array([1.1, -3.0], np.float32))


def test_sort_is_stable_on_equal_keys(path):
    keys = np.array([2, 1, 2, 0, 1, 2, 0], np.int32)
    payload = np.arange(7, dtype=np.int32)
    k, p = sort([keys, payload], 0, LT2, is_stable=True)
    np.testing.assert_array_equal(k, [0, 0, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(p, [3, 6, 1, 4, 0, 2, 5])


def test_sort_descending_comparator_is_stable(path):
    keys = np.array([1, 3, 2, 3, 1], np.int32)
    k, p = sort([keys, np.arange(5, dtype=np.int32)], 0, Combiner(keys_only(np.greater), 4), True)
    np.testing.assert_array_equal(k, [3, 3, 2, 1, 1])
    np.testing.assert_array_equal(p, [1, 3, 2, 0, 4])


def test_sort_multi_key_lexicographic(path):
    def lexicographic(a0, b0, a1, b1):
        return (np.where(a0 == b0, a1 > b1, a0 < b0),)  # primary ascending, secondary descending

    primary = np.array([1, 0, 1, 0, 1], np.int32)
    secondary = np.array([5.0, 2.0, 7.0, 9.0, 6.0], np.float32)
    p, s = sort([primary, secondary], 0, Combiner(lexicographic, 4), True)
    np.testing.assert_array_equal(p, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(s, [9, 2, 7, 6, 5])


def test_sort_rows_and_columns_of_matrix(path):
    x = np.array([[3, 1, 2], [0, 5, 4], [9, 7, 8], [6, 2, 1]], np.int32)
    np.testing.assert_array_equal(sort([x], 1, LT, True)[0], np.sort(x, axis=1))
    np.testing.assert_array_equal(sort([x], 0, LT, True)[0], np.sort(x, axis=0))


def test_sort_total_order_comparator_with_nan_and_signed_zero(path):
    x = np.array([1.0, np.nan, -0.0, -np.inf, 0.0, -np.nan, np.inf, -1.0], np.float32)
    (out,) = sort([x], 0, TOTAL_LT, True)
    expected_bits = np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan],
                             np.float32).view(np.uint32)
    np.testing.assert_array_equal(out.view(np.uint32), expected_bits)


def test_sort_8x16_and_24_elements_fast():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    y = rng.integers(0, 5, 24).astype(np.int32)
    start = time.perf_counter()
    (sx,) = sort([x], 1, TOTAL_LT, True)
    sy, py = sort([y, np.arange(24, dtype=np.int32)], 0, LT2, True)
    assert time.perf_counter() - start < 0.05
    np.testing.assert_array_equal(sx, np.sort(x, axis=1))
    np.testing.assert_array_equal(py, np.argsort(y, kind="stable"))


def test_sort_10000_elements_well_under_a_second():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 10000)).astype(np.float32)
    idx = np.arange(10000, dtype=np.int32).reshape(1, -1)
    cmp = Combiner(lambda a, b, c, d: (np.where(_f32_total_order(a) == _f32_total_order(b), c < d,
                                                _f32_total_order(a) < _f32_total_order(b)),), 4)
    start = time.perf_counter()
    sx, si = sort([x, idx], 1, cmp, True)
    assert time.perf_counter() - start < 0.5
    np.testing.assert_array_equal(sx, np.sort(x, axis=1))
    np.testing.assert_array_equal(si[0], np.argsort(x[0], kind="stable"))


def test_sort_bf16_keys(path):
    x = np.array([0.5, -2.0, 3.0, 0.25, -2.0], np.float32).astype(ml_dtypes.bfloat16)
    (out,) = sort([x], 0, LT, True)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), [-2.0, -2.0, 0.25, 0.5, 3.0])


def test_sort_trivial_shapes():
    assert sort([np.zeros((3, 0), np.float32)], 1, LT, True)[0].shape == (3, 0)
    np.testing.assert_array_equal(sort([np.array([[5], [1]], np.int32)], 1, LT, True)[0], [[5], [1]])
    with pytest.raises(ValueError):
        sort([np.zeros(3), np.zeros(4)], 0, LT2, True)
    with pytest.raises(ValueError):
        sort([np.zeros(3)], 1, LT, True)


def test_sort_with_broken_comparator_still_permutes(path):
    # Plain LT with NaN is not a strict weak order; the result must still be a permutation.
    x = np.array([3.0, np.nan, 1.0, np.nan, 2.0, 0.0, np.nan], np.float32)
    (out,) = sort([x], 0, LT, False)
    np.testing.assert_array_equal(np.sort(out), np.sort(x))
    always = Combiner(lambda a, b: (np.ones(np.shape(a), bool),), 2)
    (out,) = sort([np.arange(9, dtype=np.int32)], 0, always, False)
    np.testing.assert_array_equal(np.sort(out), np.arange(9))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 4), n=st.integers(1, 70), data=st.data())
def test_sort_matches_stable_argsort(rows, n, data):
    keys = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=rows * n, max_size=rows * n)),
                    np.int32).reshape(rows, n)
    payload = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).copy()
    expected = np.argsort(keys, axis=1, kind="stable")
    for limit in (0, 1 << 30):  # merge sort, then rank counting
        sorting._ALL_PAIRS_LIMIT, saved = limit, sorting._ALL_PAIRS_LIMIT
        try:
            k, p = sort([keys, payload], 1, LT2, True)
        finally:
            sorting._ALL_PAIRS_LIMIT = saved
        np.testing.assert_array_equal(p, expected)
        np.testing.assert_array_equal(k, np.take_along_axis(keys, expected, axis=1))


# --------------------------------------------------------------------------- topk


def test_topk_spec_example():
    x = np.array([1, 3, 3, 0, 7], np.float32)
    values, indices = topk(x, 3)
    np.testing.assert_array_equal(values, [7, 3, 3])
    np.testing.assert_array_equal(indices, [4, 1, 2])
    assert indices.dtype == np.int32 and values.dtype == np.float32
    values, indices = topk(x, 2, largest=False)
    np.testing.assert_array_equal(values, [0, 1])
    np.testing.assert_array_equal(indices, [3, 0])


def test_topk_ties_lower_index_first():
    x = np.array([[2, 5, 5, 2, 5]], np.int32)
    np.testing.assert_array_equal(topk(x, 4)[1], [[1, 2, 4, 0]])
    np.testing.assert_array_equal(topk(x, 3, largest=False)[1], [[0, 3, 1]])


def test_topk_nan_and_signed_zero_use_total_order():
    x = np.array([1.0, np.nan, -np.nan, 0.0, -0.0, np.inf], np.float32)
    values, indices = topk(x, 6)
    np.testing.assert_array_equal(indices, [1, 5, 0, 3, 4, 2])
    assert np.signbit(values[4]) and not np.signbit(values[3])
    _, smallest = topk(x, 3, largest=False)
    np.testing.assert_array_equal(smallest, [2, 4, 3])


def test_topk_rank2_bf16_and_unsigned():
    x = np.array([[0.5, 4.0, -1.0], [2.0, 2.0, 8.0]], np.float32).astype(ml_dtypes.bfloat16)
    values, indices = topk(x, 2)
    assert values.dtype == ml_dtypes.bfloat16 and values.shape == (2, 2)
    np.testing.assert_array_equal(values.astype(np.float32), [[4.0, 0.5], [8.0, 2.0]])
    np.testing.assert_array_equal(indices, [[1, 0], [2, 0]])
    u = np.array([0, 2**32 - 1, 7], np.uint32)
    np.testing.assert_array_equal(topk(u, 2)[0], [2**32 - 1, 7])
    np.testing.assert_array_equal(topk(u, 2, largest=False)[0], [0, 7])


def test_topk_k_zero_and_errors():
    values, indices = topk(np.ones((2, 3), np.float32), 0)
    assert values.shape == (2, 0) and indices.shape == (2, 0)
    with pytest.raises(ValueError):
        topk(np.ones(3, np.float32), 4)
    with pytest.raises(ValueError):
        topk(np.ones(3, np.complex64), 1)


def test_total_order_key_orders_floats_like_xla():
    x = np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 1e-45, 1.0, np.inf, np.nan], np.float32)
    keys = total_order_key(x)
    assert np.all(np.diff(keys) > 0)
    halves = np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 6e-8, 1.0, np.inf, np.nan], np.float16)
    assert np.all(np.diff(total_order_key(halves)) > 0)
    assert np.all(np.diff(total_order_key(np.array([-8, -1, 0, 7], ml_dtypes.int4))) > 0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=20), st.data())
def test_topk_agrees_with_descending_stable_sort(items, data):
    x = np.array(items, np.float32)
    k = data.draw(st.integers(0, len(items)))
    _, indices = topk(x, k)
    np.testing.assert_array_equal(indices, np.argsort(-x, kind="stable")[:k])
