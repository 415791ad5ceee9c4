"""Tests of the indexing kernels: gather, scatter, slice, dynamic-slice, dynamic-update-slice."""
import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.interpreter.combiner import Combiner
from hlo.interpreter.indexing import (
    GatherDims, ScatterDims, dynamic_slice, dynamic_update_slice, gather, gather_result_dims,
    scatter, slice_array)

ADD = Combiner(lambda a, b: a + b, 2, ufunc=np.add, name="add")
ADD_NO_UFUNC = Combiner(lambda a, b: a + b, 2, name="add_generic")
OVERWRITE = Combiner(lambda cur, upd: upd, 2, name="overwrite")

M3 = np.arange(1, 10, dtype=np.float32).reshape(3, 3)  # {{1,2,3},{4,5,6},{7,8,9}}
ROWS = GatherDims(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1)


# --------------------------------------------------------------------------- gather


def test_gather_rows_spec_example():
    out = gather(M3, np.array([[2], [0]], np.int32), ROWS, (1, 3))
    np.testing.assert_array_equal(out, [[7, 8, 9], [1, 2, 3]])
    assert out.dtype == np.float32


def test_gather_clamps_start_to_fit_the_slice():
    np.testing.assert_array_equal(gather(M3, np.array([[5]], np.int32), ROWS, (1, 3)), [[7, 8, 9]])
    np.testing.assert_array_equal(gather(M3, np.array([[-4]], np.int32), ROWS, (1, 3)), [[1, 2, 3]])


def test_gather_clamps_huge_unsigned_index_to_the_top():
    idx = np.array([[2**32 - 1]], np.uint32)
    np.testing.assert_array_equal(gather(M3, idx, ROWS, (1, 3)), [[7, 8, 9]])
    idx64 = np.array([[2**64 - 1]], np.uint64)
    np.testing.assert_array_equal(gather(M3, idx64, ROWS, (1, 3)), [[7, 8, 9]])


def test_gather_index_vector_dim_equal_to_rank_is_implicit_trailing_one():
    out = gather(M3, np.array([2, 0], np.int32), ROWS, (1, 3))  # rank 1, index_vector_dim 1
    np.testing.assert_array_equal(out, [[7, 8, 9], [1, 2, 3]])


def test_gather_embedding_lookup():
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    ids = np.array([[4, 0, 2], [1, 1, 3]], np.int32)
    dims = GatherDims(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=2)
    out = gather(table, ids, dims, (1, 3))
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out, table[ids])


def test_gather_nd_style_explicit_index_vector():
    operand = np.arange(12).reshape(3, 4)
    idx = np.array([[[2], [0]], [[1], [2]]], np.int64)  # [2,2,1]
    dims = GatherDims(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=2)
    out = gather(operand, idx, dims, (1, 4))
    np.testing.assert_array_equal(out, operand[idx[..., 0]])


def test_gather_batched_dynamic_slice_with_clamping():
    operand = np.arange(20).reshape(4, 5)
    idx = np.array([[1, 2], [3, 4]], np.int32)
    dims = GatherDims(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1),
                      index_vector_dim=1)
    out = gather(operand, idx, dims, (2, 2))
    np.testing.assert_array_equal(out[0], [[7, 8], [12, 13]])      # operand[1:3, 2:4]
    np.testing.assert_array_equal(out[1], [[13, 14], [18, 19]])    # (3,4) clamped to (2,3)


def test_gather_offset_dim_before_batch_dim():
    # Column gather: the slice (a column) occupies output dim 0, the batch dim 1.
    dims = GatherDims(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,),
                      index_vector_dim=1)
    out = gather(M3, np.array([[2], [0]], np.int32), dims, (3, 1))
    np.testing.assert_array_equal(out, [[3, 1], [6, 4], [9, 7]])


def test_gather_index_vector_dim_zero():
    operand = np.arange(20).reshape(4, 5)
    idx = np.array([[1, 3], [2, 0]], np.int32)  # column j is the index vector (row, col) of batch j
    dims = GatherDims(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1),
                      index_vector_dim=0)
    np.testing.assert_array_equal(gather(operand, idx, dims, (1, 1)), [operand[1, 2], operand[3, 0]])


def test_gather_start_index_map_permuted():
    operand = np.arange(20).reshape(4, 5)
    idx = np.array([[2, 1]], np.int32)  # component 0 -> operand dim 1, component 1 -> dim 0
    dims = GatherDims(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(1, 0),
                      index_vector_dim=1)
    np.testing.assert_array_equal(gather(operand, idx, dims, (1, 1)), [operand[1, 2]])


def test_gather_batching_dims():
    operand = np.array([[10, 11, 12, 13], [20, 21, 22, 23]], np.int32)
    idx = np.array([[3, 0, 1], [2, 2, 0]], np.int32)  # per-batch positions, implicit vector dim
    dims = GatherDims(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                      index_vector_dim=2, operand_batching_dims=(0,),
                      start_indices_batching_dims=(0,))
    out = gather(operand, idx, dims, (1, 1))
    np.testing.assert_array_equal(out, [[13, 10, 11], [22, 22, 20]])


def test_gather_batching_dim_after_index_vector_dim():
    # operand [3(window), 2(batch)]; indices [1(vector), 2(batch)], index_vector_dim 0.
    operand = np.array([[1, 2], [3, 4], [5, 6]], np.int32)
    idx = np.array([[2, 0]], np.int32)
    dims = GatherDims(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=0, operand_batching_dims=(1,),
                      start_indices_batching_dims=(1,))
    np.testing.assert_array_equal(gather(operand, idx, dims, (1, 1)), [5, 2])


def test_gather_result_dims_batching_example_from_spec():
    dims = GatherDims(offset_dims=(4, 5, 6, 7, 8), collapsed_slice_dims=(),
                      start_index_map=(0, 1, 2, 3, 4), index_vector_dim=4,
                      operand_batching_dims=(5,), start_indices_batching_dims=(5,))
    got = gather_result_dims((50, 49, 48, 47, 46, 512), (10, 9, 8, 7, 5, 512), dims,
                             (30, 29, 28, 27, 26, 1))
    assert got == (10, 9, 8, 7, 30, 29, 28, 27, 26, 512)


def test_gather_result_dims_gather_nd_example_from_spec():
    dims = GatherDims(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=2)
    assert gather_result_dims((7, 11), (4, 5, 1), dims, (1, 11)) == (4, 5, 11)


def test_gather_bf16_and_empty_batch():
    table = np.arange(6, dtype=np.float32).reshape(3, 2).astype(ml_dtypes.bfloat16)
    out = gather(table, np.array([[1]], np.int32), ROWS, (1, 2))
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), [[2, 3]])
    empty = gather(M3, np.zeros((0, 1), np.int32), ROWS, (1, 3))
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("dims, sizes", [
    (ROWS, (1, 4)),                                                        # slice too big
    (ROWS, (2, 3)),                                                        # collapsed size > 1
    (GatherDims((1,), (0,), (0, 1), 1), (1, 3)),                           # map length mismatch
    (GatherDims((0, 1), (0,), (0,), 1), (1, 3)),                           # dims do not add up
])
def test_gather_rejects_invalid_dimension_numbers(dims, sizes):
    with pytest.raises(ValueError):
        gather(M3, np.array([[0]], np.int32), dims, sizes)


def test_gather_rejects_wrong_result_dims():
    with pytest.raises(ValueError):
        gather(M3, np.array([[0]], np.int32), ROWS, (1, 3), result_dims=(1, 2))


# --------------------------------------------------------------------------- scatter

POINTS = ScatterDims(update_window_dims=(), inserted_window_dims=(0,),
                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
V5 = np.array([1, 2, 3, 4, 5], np.float32)


def test_scatter_add_spec_example():
    (out,) = scatter([V5], np.array([[1], [3]], np.int32), [np.array([10, 20], np.float32)],
                     POINTS, ADD)
    np.testing.assert_array_equal(out, [1, 12, 3, 24, 5])
    np.testing.assert_array_equal(V5, [1, 2, 3, 4, 5])  # operand untouched


@pytest.mark.parametrize("combiner", [ADD, ADD_NO_UFUNC])
def test_scatter_add_with_duplicates(combiner):
    idx = np.array([[1], [1], [4], [1]], np.int32)
    (out,) = scatter([V5], idx, [np.array([10, 20, 5, 100], np.float32)], POINTS, combiner)
    np.testing.assert_array_equal(out, [1, 132, 3, 4, 10])


def test_scatter_overwrite_last_update_wins():
    (out,) = scatter([V5], np.array([[1], [1]], np.int32), [np.array([10, 20], np.float32)],
                     POINTS, OVERWRITE)
    np.testing.assert_array_equal(out, [1, 20, 3, 4, 5])


def test_scatter_duplicates_combined_sequentially_in_update_order():
    # Non-commutative combiner: cur * 10 + upd shows the order of application.
    shift = Combiner(lambda cur, upd: cur * 10 + upd, 2, name="shift")
    (out,) = scatter([np.zeros(2, np.int32)], np.array([[0], [1], [0], [0]], np.int32),
                     [np.array([1, 7, 2, 3], np.int32)], POINTS, shift)
    np.testing.assert_array_equal(out, [123, 7])


def test_scatter_order_is_scatter_index_major_window_minor():
    # updates [window, scatter]: windows of indices 0 and 1 overlap at operand element 1.
    dims = ScatterDims(update_window_dims=(0,), inserted_window_dims=(),
                       scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    updates = np.array([[10, 20], [30, 40]], np.int32)  # column g is the window of index g
    (out,) = scatter([np.full(4, -1, np.int32)], np.array([[0], [1]], np.int32), [updates],
                     dims, OVERWRITE)
    # index 0 writes {10, 30} at {0, 1}, then index 1 writes {20, 40} at {1, 2}.
    np.testing.assert_array_equal(out, [10, 20, 40, -1])


def test_scatter_out_of_bounds_window_is_skipped_entirely():
    dims = ScatterDims(update_window_dims=(1,), inserted_window_dims=(0,),
                       scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1)
    idx = np.array([[0, 1], [2, 3], [1, -1], [5, 0]], np.int32)
    updates = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int32)
    for combiner in (ADD, ADD_NO_UFUNC):
        (out,) = scatter([np.zeros((3, 4), np.int32)], idx, [updates], dims, combiner)
        # only the window at (0, 1) fits; (2, 3) would half fit and is dropped whole.
        np.testing.assert_array_equal(out, [[0, 1, 2, 0], [0, 0, 0, 0], [0, 0, 0, 0]])


def test_scatter_huge_unsigned_index_is_out_of_bounds():
    idx = np.array([[2**32 - 1], [0]], np.uint32)
    (out,) = scatter([V5], idx, [np.array([10, 20], np.float32)], POINTS, ADD)
    np.testing.assert_array_equal(out, [21, 2, 3, 4, 5])


def test_scatter_index_vector_dim_equal_to_rank():
    dims = ScatterDims(update_window_dims=(), inserted_window_dims=(0,),
                       scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    (out,) = scatter([V5], np.array([4, 0], np.int32), [np.array([1, 1], np.float32)], dims, ADD)
    np.testing.assert_array_equal(out, [2, 2, 3, 4, 6])


def test_scatter_row_windows():
    dims = ScatterDims(update_window_dims=(1,), inserted_window_dims=(0,),
                       scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    (out,) = scatter([np.zeros((3, 3), np.float32)], np.array([[2], [0], [2]], np.int32),
                     [M3], dims, ADD)
    np.testing.assert_array_equal(out, [[4, 5, 6], [0, 0, 0], [8, 10, 12]])


def test_variadic_scatter_argmax_style_combiner():
    def keep_larger(cur_v, cur_i, upd_v, upd_i):
        take = upd_v > cur_v
        return np.where(take, upd_v, cur_v), np.where(take, upd_i, cur_i)

    combiner = Combiner(keep_larger, 4, name="argmax")
    values = np.array([0, 0, 0], np.float32)
    ids = np.array([-1, -1, -1], np.int32)
    idx = np.array([[0], [2], [0], [0], [2]], np.int32)
    upd_v = np.array([5, 1, 7, 6, -3], np.float32)
    upd_i = np.array([10, 11, 12, 13, 14], np.int32)
    out_v, out_i = scatter([values, ids], idx, [upd_v, upd_i], POINTS, combiner)
    np.testing.assert_array_equal(out_v, [7, 0, 1])
    np.testing.assert_array_equal(out_i, [12, -1, 11])
    assert out_v.dtype == np.float32 and out_i.dtype == np.int32


def test_scatter_batching_dims():
    dims = ScatterDims(update_window_dims=(), inserted_window_dims=(1,),
                       scatter_dims_to_operand_dims=(1,), index_vector_dim=2,
                       input_batching_dims=(0,), scatter_indices_batching_dims=(0,))
    idx = np.array([[3, 0, 3], [1, 1, 2]], np.int32)
    upd = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    (out,) = scatter([np.zeros((2, 4), np.int32)], idx, [upd], dims, ADD)
    np.testing.assert_array_equal(out, [[2, 0, 0, 4], [0, 9, 6, 0]])


def test_scatter_bf16_add_matches_f32():
    upd = np.array([0.5, 0.25, 1.0], np.float32)
    idx = np.array([[0], [0], [2]], np.int32)
    for combiner in (ADD, ADD_NO_UFUNC):
        (out,) = scatter([V5.astype(ml_dtypes.bfloat16)], idx, [upd.astype(ml_dtypes.bfloat16)],
                         POINTS, combiner)
        assert out.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(out.astype(np.float32), [1.75, 2, 4, 4, 5])


def test_scatter_with_no_updates_returns_copy():
    (out,) = scatter([V5], np.zeros((0, 1), np.int32), [np.zeros(0, np.float32)], POINTS, ADD)
    np.testing.assert_array_equal(out, V5)
    assert out is not V5


def test_scalar_operand_gather_and_scatter():
    no_index = np.zeros((3, 0), np.int32)
    out = gather(np.float32(5), no_index, GatherDims((), (), (), 1), ())
    np.testing.assert_array_equal(out, [5, 5, 5])
    for combiner in (ADD, ADD_NO_UFUNC):
        (out,) = scatter([np.float32(5)], no_index, [np.ones(3, np.float32)],
                         ScatterDims((), (), (), 1), combiner)
        assert out.shape == () and out == 8


def test_scatter_rejects_mismatched_updates():
    with pytest.raises(ValueError):
        scatter([V5], np.array([[1], [3]], np.int32), [np.zeros(3, np.float32)], POINTS, ADD)
    with pytest.raises(ValueError):
        scatter([V5, V5], np.array([[1]], np.int32), [np.zeros(1, np.float32)], POINTS, ADD)


def _reference_scatter(operand, idx, upd, combine):
    """Naive per-update loop over 1-D windows of length w at idx (whole-window skip)."""
    out = operand.copy()
    w = upd.shape[1]
    for g, start in enumerate(idx[:, 0]):
        if 0 <= start <= len(out) - w:
            for j in range(w):
                out[start + j] = combine(out[start + j], upd[g, j])
    return out


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), w=st.integers(1, 3), data=st.data())
def test_scatter_matches_naive_loop(n, w, data):
    w = min(w, n)
    count = data.draw(st.integers(0, 12))
    idx = np.array(data.draw(st.lists(st.integers(-2, n + 1), min_size=count, max_size=count)),
                   np.int32).reshape(count, 1)
    upd = np.arange(1, count * w + 1, dtype=np.int64).reshape(count, w)
    operand = np.arange(n, dtype=np.int64) * 100
    dims = ScatterDims(update_window_dims=(1,), inserted_window_dims=(),
                       scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    shift = Combiner(lambda cur, u: cur * 3 + u, 2, name="shift")
    (fast,) = scatter([operand], idx, [upd], dims, ADD)
    (slow,) = scatter([operand], idx, [upd], dims, shift)
    np.testing.assert_array_equal(fast, _reference_scatter(operand, idx, upd, lambda a, b: a + b))
    np.testing.assert_array_equal(slow, _reference_scatter(operand, idx, upd, lambda a, b: a * 3 + b))


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 6), cols=st.integers(1, 4), data=st.data())
def test_scatter_add_of_gather_restores_masked_operand(rows, cols, data):
    operand = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1
    picked = data.draw(st.lists(st.integers(0, rows - 1), unique=True, max_size=rows))
    idx = np.array(picked, np.int32).reshape(-1, 1)
    gdims = GatherDims(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
                       index_vector_dim=1)
    sdims = ScatterDims(update_window_dims=(1,), inserted_window_dims=(0,),
                        scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    rows_taken = gather(operand, idx, gdims, (1, cols))
    (back,) = scatter([np.zeros_like(operand)], idx, [rows_taken], sdims, ADD)
    mask = np.zeros(rows, bool)
    mask[picked] = True
    np.testing.assert_array_equal(back, np.where(mask[:, None], operand, 0))


# --------------------------------------------------------------------------- slices

A5 = np.arange(5, dtype=np.int32)
B43 = np.arange(12, dtype=np.int32).reshape(4, 3)


def test_dynamic_slice_spec_examples():
    np.testing.assert_array_equal(dynamic_slice(A5, [2], [2]), [2, 3])
    np.testing.assert_array_equal(dynamic_slice(B43, [2, 1], [2, 2]), [[7, 8], [10, 11]])


def test_dynamic_slice_clamps_every_dimension():
    np.testing.assert_array_equal(dynamic_slice(A5, [4], [2]), [3, 4])
    np.testing.assert_array_equal(dynamic_slice(A5, [np.int32(-3)], [2]), [0, 1])
    np.testing.assert_array_equal(dynamic_slice(B43, [np.int8(-1), np.int8(9)], [2, 2]),
                                  [[1, 2], [4, 5]])


def test_dynamic_slice_unsigned_huge_start_clamps_to_top():
    np.testing.assert_array_equal(dynamic_slice(A5, [np.uint32(2**32 - 1)], [2]), [3, 4])
    np.testing.assert_array_equal(dynamic_slice(A5, [np.uint64(2**64 - 1)], [1]), [4])
    np.testing.assert_array_equal(dynamic_slice(A5, [np.uint8(255)], [0]), np.zeros(0))


def test_dynamic_slice_legacy_vector_starts_and_errors():
    np.testing.assert_array_equal(dynamic_slice(B43, np.array([2, 1], np.int32), [2, 2]),
                                  [[7, 8], [10, 11]])
    with pytest.raises(ValueError):
        dynamic_slice(A5, [0], [6])
    with pytest.raises(ValueError):
        dynamic_slice(A5, [0, 0], [1])


def test_dynamic_update_slice_spec_examples():
    np.testing.assert_array_equal(dynamic_update_slice(A5, np.array([5, 6], np.int32), [2]),
                                  [0, 1, 5, 6, 4])
    upd = np.array([[12, 13], [14, 15], [16, 17]], np.int32)
    np.testing.assert_array_equal(dynamic_update_slice(B43, upd, [1, 1]),
                                  [[0, 1, 2], [3, 12, 13], [6, 14, 15], [9, 16, 17]])
    np.testing.assert_array_equal(A5, np.arange(5))  # operand untouched


def test_dynamic_update_slice_clamps():
    upd = np.array([5, 6], np.int32)
    np.testing.assert_array_equal(dynamic_update_slice(A5, upd, [4]), [0, 1, 2, 5, 6])
    np.testing.assert_array_equal(dynamic_update_slice(A5, upd, [np.uint32(2**31)]), [0, 1, 2, 5, 6])
    np.testing.assert_array_equal(dynamic_update_slice(A5, upd, [-7]), [5, 6, 2, 3, 4])
    with pytest.raises(ValueError):
        dynamic_update_slice(A5, np.zeros(6, np.int32), [0])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), size=st.integers(0, 6), start=st.integers(-10, 10))
def test_dynamic_update_slice_of_dynamic_slice_is_identity(n, size, start):
    size = min(size, n)
    x = np.arange(n, dtype=np.int32)
    np.testing.assert_array_equal(dynamic_update_slice(x, dynamic_slice(x, [start], [size]), [start]), x)


def test_slice_array_examples():
    np.testing.assert_array_equal(slice_array(A5, [2], [4], [1]), [2, 3])
    np.testing.assert_array_equal(slice_array(B43, [2, 1], [4, 3], [1, 1]), [[7, 8], [10, 11]])
    np.testing.assert_array_equal(slice_array(A5, [0], [5], [2]), [0, 2, 4])
    assert slice_array(A5, [3], [3], [1]).shape == (0,)
    assert slice_array(np.float32(3.0), [], [], []).shape == ()
    for bad in ([3], [2], [1]), ([0], [6], [1]), ([0], [5], [0]):
        with pytest.raises(ValueError):
            slice_array(A5, *bad)


def test_all_index_types_agree():
    for dtype in (np.int8, np.uint8, np.int16, np.uint16, np.int64, ml_dtypes.int4, ml_dtypes.uint4):
        idx = np.array([[2], [0]]).astype(dtype)
        np.testing.assert_array_equal(gather(M3, idx, ROWS, (1, 3)), [[7, 8, 9], [1, 2, 3]])


def test_gather_matches_per_element_definition():
    # Cross-check the vectorised gather with the spec's per-output-index pseudo-code.
    rng = np.random.default_rng(0)
    operand = rng.integers(0, 100, (4, 3, 5))
    idx = rng.integers(-2, 7, (2, 2, 3))
    dims = GatherDims(offset_dims=(1, 3), collapsed_slice_dims=(0,), start_index_map=(2, 0),
                      index_vector_dim=1)
    sizes = (1, 2, 3)
    out = gather(operand, idx, dims, sizes)
    window_dims = [1, 2]
    for o in itertools.product(*map(range, out.shape)):
        g = [o[d] for d in range(out.ndim) if d not in dims.offset_dims]
        vec = idx[g[0], :, g[1]]
        start = [0, 0, 0]
        for k, od in enumerate(dims.start_index_map):
            start[od] = vec[k]
        start = [min(max(s, 0), operand.shape[d] - sizes[d]) for d, s in enumerate(start)]
        for k, od in enumerate(window_dims):
            start[od] += o[dims.offset_dims[k]]
        assert out[o] == operand[tuple(start)]
