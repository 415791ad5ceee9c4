"""The indexing family: gather, scatter, dynamic-slice and dynamic-update-slice (kernels
and handlers, with XLA's exact semantics), and the slice kernel.

* gather: start indices are clamped so every slice lies inside the operand
  (like dynamic-slice); batching dims pair operand dims with index dims.
* scatter: an update window that would be even partly out of bounds is skipped
  entirely (no clamping); updates hitting the same element are combined one after
  the other in XLA's evaluator order (scatter index major, window index minor).
* dynamic-slice / dynamic-update-slice: starts clamped to [0, dim - size] in every
  dimension, reading each index with its own signedness.

Everything is whole-array numpy: index grids are built by broadcasting and used for
one fancy-indexing operation; scatter conflicts are resolved in vectorised rounds.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..attributes import GatherDims, ScatterDims
from ..opcodes import Op
from .combiner import Combiner
from .handlers import HANDLERS
from .values import as_tuple_if

_INDEX_CAP = np.int64(2**62)  # larger than any dimension; keeps huge unsigned values huge


# --------------------------------------------------------------------------- helpers


def _indices_as_int64(indices: np.ndarray) -> np.ndarray:
    """Index values as int64, read with their own signedness (huge unsigned stay huge)."""
    indices = np.asarray(indices)
    if indices.dtype.kind == "u" and indices.dtype.itemsize >= 8:
        return np.minimum(indices, np.uint64(_INDEX_CAP)).astype(np.int64)
    if indices.dtype.kind not in "iu":
        try:  # ml_dtypes sub-byte integers report kind 'V'
            return indices.astype(np.int64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"indices must be integers, got {indices.dtype}") from e
    return indices.astype(np.int64)


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices reshaped to (batch dims in order..., vector): the index vector moved last.

    index_vector_dim == rank means an implicit trailing dimension of size 1.
    """
    rank = indices.ndim
    if not 0 <= index_vector_dim <= rank:
        raise ValueError(f"index_vector_dim {index_vector_dim} out of range for rank-{rank} indices")
    idx = _indices_as_int64(indices)
    if index_vector_dim == rank:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _batch_axis(indices_dim: int, index_vector_dim: int) -> int:
    """Position of an indices dim among the batch dims (the index vector dim removed)."""
    return indices_dim if indices_dim < index_vector_dim else indices_dim - 1


def _full_starts(vectors: np.ndarray, operand_rank: int, index_map: Sequence[int],
                 operand_batching: Sequence[int], indices_batching: Sequence[int],
                 index_vector_dim: int) -> np.ndarray:
    """Per batch position, the full operand start index (batch shape + (operand_rank,)).

    Index vector components go to the operand dims of `index_map`; an operand batching
    dim takes the coordinate of its paired indices dim; every other entry is 0.
    """
    batch_shape = vectors.shape[:-1]
    starts = np.zeros(batch_shape + (operand_rank,), dtype=np.int64)
    for k, od in enumerate(index_map):
        starts[..., od] = vectors[..., k]
    for od, sd in zip(operand_batching, indices_batching):
        axis = _batch_axis(sd, index_vector_dim)
        coord_shape = [1] * len(batch_shape)
        coord_shape[axis] = batch_shape[axis]
        starts[..., od] = np.arange(batch_shape[axis]).reshape(coord_shape)
    return starts


def _check_unique_in_range(name: str, dims: Sequence[int], bound: int) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < bound for d in dims):
        raise ValueError(f"{name}={list(dims)} must be unique and in [0, {bound})")


# --------------------------------------------------------------------------- gather


def gather_result_dims(operand_dims: Sequence[int], indices_dims: Sequence[int],
                       dims: GatherDims, slice_sizes: Sequence[int]) -> tuple[int, ...]:
    """The result dimensions of a gather (XLA's shape inference), ValueError if invalid."""
    operand_dims, indices_dims = tuple(operand_dims), tuple(indices_dims)
    rank = len(operand_dims)
    ivd = dims.index_vector_dim
    if not 0 <= ivd <= len(indices_dims):
        raise ValueError(f"gather index_vector_dim {ivd} out of range for indices rank {len(indices_dims)}")
    expanded = indices_dims + (1,) if ivd == len(indices_dims) else indices_dims
    if len(slice_sizes) != rank:
        raise ValueError(f"gather needs {rank} slice_sizes, got {len(slice_sizes)}")
    for d, (s, n) in enumerate(zip(slice_sizes, operand_dims)):
        if not 0 <= s <= n:
            raise ValueError(f"gather slice size {s} out of [0, {n}] in dimension {d}")
    collapsed, obd = dims.collapsed_slice_dims, dims.operand_batching_dims
    if len(dims.offset_dims) + len(collapsed) + len(obd) != rank:
        raise ValueError("gather: offset_dims + collapsed_slice_dims + operand_batching_dims "
                         f"must cover the {rank} operand dims")
    _check_unique_in_range("collapsed_slice_dims", collapsed, rank)
    _check_unique_in_range("operand_batching_dims", obd, rank)
    _check_unique_in_range("start_index_map", dims.start_index_map, rank)
    if set(collapsed) & set(obd):
        raise ValueError("gather: collapsed_slice_dims and operand_batching_dims overlap")
    if any(slice_sizes[d] > 1 for d in collapsed + obd):
        raise ValueError("gather: collapsed and batching dims need slice size <= 1")
    if len(dims.start_index_map) != expanded[ivd]:
        raise ValueError(f"gather: start_index_map has {len(dims.start_index_map)} entries, "
                         f"index vectors have {expanded[ivd]}")
    if len(dims.start_indices_batching_dims) != len(obd):
        raise ValueError("gather: operand_batching_dims and start_indices_batching_dims differ in length")
    for od, sd in zip(obd, dims.start_indices_batching_dims):
        if sd == ivd or not 0 <= sd < len(expanded) or expanded[sd] != operand_dims[od]:
            raise ValueError(f"gather: batching dims operand {od} / indices {sd} do not match")
    batch_sizes = [n for d, n in enumerate(expanded) if d != ivd]
    window_sizes = [slice_sizes[d] for d in range(rank) if d not in collapsed and d not in obd]
    out_rank = len(dims.offset_dims) + len(batch_sizes)
    if list(dims.offset_dims) != sorted(set(dims.offset_dims)) or any(
            not 0 <= d < out_rank for d in dims.offset_dims):
        raise ValueError(f"gather offset_dims={list(dims.offset_dims)} must be sorted, unique, "
                         f"in [0, {out_rank})")
    offset_iter, batch_iter = iter(window_sizes), iter(batch_sizes)
    return tuple(next(offset_iter) if d in dims.offset_dims else next(batch_iter)
                 for d in range(out_rank))


def gather(operand: np.ndarray, start_indices: np.ndarray, dims: GatherDims,
           slice_sizes: tuple[int, ...], result_dims: Optional[tuple[int, ...]] = None) -> np.ndarray:
    """XLA gather: cut a slice at every (clamped) start index; one fancy-indexing pass."""
    operand = np.asarray(operand)
    start_indices = np.asarray(start_indices)
    out_dims = gather_result_dims(operand.shape, start_indices.shape, dims, slice_sizes)
    if result_dims is not None and tuple(result_dims) != out_dims:
        raise ValueError(f"gather result dims {tuple(result_dims)} do not match inferred {out_dims}")
    if 0 in out_dims:
        return np.empty(out_dims, dtype=operand.dtype)
    rank = operand.ndim
    vectors = _index_vectors(start_indices, dims.index_vector_dim)
    starts = _full_starts(vectors, rank, dims.start_index_map, dims.operand_batching_dims,
                          dims.start_indices_batching_dims, dims.index_vector_dim)
    starts = np.clip(starts, 0, np.subtract(operand.shape, slice_sizes))

    out_rank = len(out_dims)
    batch_out_shape = [1] * out_rank  # starts' batch axes spread over the output batch dims
    batch_out_dims = [d for d in range(out_rank) if d not in dims.offset_dims]
    for axis, d in enumerate(batch_out_dims):
        batch_out_shape[d] = starts.shape[axis]
    window_dims = [d for d in range(rank)
                   if d not in dims.collapsed_slice_dims and d not in dims.operand_batching_dims]
    index_grid = []
    for od in range(rank):
        coord = starts[..., od].reshape(batch_out_shape)
        if od in window_dims:
            out_dim = dims.offset_dims[window_dims.index(od)]
            offset_shape = [1] * out_rank
            offset_shape[out_dim] = slice_sizes[od]
            coord = coord + np.arange(slice_sizes[od]).reshape(offset_shape)
        index_grid.append(coord)
    return np.broadcast_to(operand[tuple(index_grid)], out_dims).copy()


# --------------------------------------------------------------------------- scatter


def _scatter_geometry(operand_shape: tuple[int, ...], indices: np.ndarray,
                      updates_shape: tuple[int, ...], dims: ScatterDims):
    """Validate a scatter and return (update_scatter_dims, operand window dims, index vectors)."""
    rank = len(operand_shape)
    uwd = tuple(dims.update_window_dims)
    if list(uwd) != sorted(set(uwd)) or any(not 0 <= d < len(updates_shape) for d in uwd):
        raise ValueError(f"scatter update_window_dims={list(uwd)} must be sorted, unique, in range")
    _check_unique_in_range("inserted_window_dims", dims.inserted_window_dims, rank)
    _check_unique_in_range("input_batching_dims", dims.input_batching_dims, rank)
    _check_unique_in_range("scatter_dims_to_operand_dims", dims.scatter_dims_to_operand_dims, rank)
    if set(dims.inserted_window_dims) & set(dims.input_batching_dims):
        raise ValueError("scatter: inserted_window_dims and input_batching_dims overlap")
    if len(uwd) + len(dims.inserted_window_dims) + len(dims.input_batching_dims) != rank:
        raise ValueError("scatter: update_window_dims + inserted_window_dims + input_batching_dims "
                         f"must cover the {rank} operand dims")
    if len(dims.input_batching_dims) != len(dims.scatter_indices_batching_dims):
        raise ValueError("scatter: input_batching_dims and scatter_indices_batching_dims differ in length")
    vectors = _index_vectors(indices, dims.index_vector_dim)
    if vectors.shape[-1] != len(dims.scatter_dims_to_operand_dims):
        raise ValueError(f"scatter: index vectors have {vectors.shape[-1]} components, "
                         f"scatter_dims_to_operand_dims has {len(dims.scatter_dims_to_operand_dims)}")
    update_scatter_dims = tuple(d for d in range(len(updates_shape)) if d not in uwd)
    if tuple(updates_shape[d] for d in update_scatter_dims) != vectors.shape[:-1]:
        raise ValueError(f"scatter: updates {updates_shape} do not match the scatter index "
                         f"batch shape {vectors.shape[:-1]}")
    window_operand_dims = tuple(d for d in range(rank) if d not in dims.inserted_window_dims
                                and d not in dims.input_batching_dims)
    for k, od in enumerate(window_operand_dims):
        if updates_shape[uwd[k]] > operand_shape[od]:
            raise ValueError(f"scatter: update window dim {uwd[k]} larger than operand dim {od}")
    return update_scatter_dims, window_operand_dims, vectors


def _scatter_targets(operand_shape, updates_shape, dims: ScatterDims, window_operand_dims,
                     vectors):
    """Flat operand targets of the applied updates, and which scatter indices are applied.

    Returns (targets of shape (valid scatter indices, window elements), valid mask over
    all scatter indices in row-major order).
    """
    rank = len(operand_shape)
    starts = _full_starts(vectors, rank, dims.scatter_dims_to_operand_dims,
                          dims.input_batching_dims, dims.scatter_indices_batching_dims,
                          dims.index_vector_dim)
    starts = starts.reshape(int(np.prod(vectors.shape[:-1], dtype=np.int64)), rank)
    window_shape = tuple(updates_shape[d] for d in dims.update_window_dims)
    extent = np.ones(rank, dtype=np.int64)
    extent[list(window_operand_dims)] = window_shape
    # XLA skips a whole window if any part of it would fall outside the operand.
    valid = np.all((starts >= 0) & (starts <= np.asarray(operand_shape) - extent), axis=1)
    offsets = np.zeros((int(np.prod(window_shape, dtype=np.int64)), rank), dtype=np.int64)
    if window_shape:
        grid = np.indices(window_shape).reshape(len(window_shape), -1)
        offsets[:, list(window_operand_dims)] = grid.T
    positions = starts[valid][:, None, :] + offsets[None, :, :]
    targets = np.ravel_multi_index(tuple(np.moveaxis(positions, -1, 0)), operand_shape) \
        if positions.size else np.zeros(positions.shape[:2], dtype=np.int64)
    return targets, valid


def _occurrence_numbers(targets: np.ndarray) -> np.ndarray:
    """For each update, how many earlier updates hit the same target."""
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    positions = np.arange(len(targets))
    group_start = np.r_[True, sorted_targets[1:] != sorted_targets[:-1]] if len(targets) else \
        np.zeros(0, dtype=bool)
    first_of_group = np.maximum.accumulate(np.where(group_start, positions, 0))
    occurrence = np.empty_like(positions)
    occurrence[order] = positions - first_of_group
    return occurrence


def _apply_in_rounds(outs: list[np.ndarray], targets: np.ndarray, values: list[np.ndarray],
                     combiner: Combiner) -> None:
    """out[t] = combiner(out[t]..., value...) for every update, in order.

    Round r applies each update that is the r-th hit on its target, so a round never
    touches a position twice and duplicates are combined in update order.
    """
    occurrence = _occurrence_numbers(targets)
    by_round = np.argsort(occurrence, kind="stable")
    round_sizes = np.bincount(occurrence)
    start = 0
    for size in round_sizes:
        picked = by_round[start:start + size]
        start += size
        where = targets[picked]
        current = [out[where] for out in outs]
        combined = combiner(*current, *(v[picked] for v in values))
        if len(combined) != len(outs):
            raise ValueError(f"scatter combiner {combiner.name} returned {len(combined)} values, "
                             f"expected {len(outs)}")
        for out, new in zip(outs, combined):
            out[where] = np.asarray(new).astype(out.dtype, copy=False)


def scatter(operands: list, indices, updates: list, dims: ScatterDims, combiner: Combiner,
            indices_are_sorted: bool = False, unique_indices: bool = False) -> list[np.ndarray]:
    """XLA scatter (variadic): combine `updates` into copies of `operands` at `indices`.

    indices_are_sorted / unique_indices are promises that do not change the result here.
    """
    operands = [np.asarray(o) for o in operands]
    updates = [np.asarray(u) for u in updates]
    if not operands or len(operands) != len(updates):
        raise ValueError(f"scatter needs N >= 1 operands and N updates, got "
                         f"{len(operands)} and {len(updates)}")
    if any(o.shape != operands[0].shape for o in operands) or any(
            u.shape != updates[0].shape for u in updates):
        raise ValueError("scatter operands (and updates) must all have the same dimensions")
    operand_shape, updates_shape = operands[0].shape, updates[0].shape
    update_scatter_dims, window_operand_dims, vectors = _scatter_geometry(
        operand_shape, np.asarray(indices), updates_shape, dims)
    targets, valid = _scatter_targets(operand_shape, updates_shape, dims, window_operand_dims,
                                      vectors)
    # XLA's evaluator order: scatter index major, window index minor.
    order = update_scatter_dims + tuple(dims.update_window_dims)
    per_index = (len(valid), targets.shape[1])
    values = [np.transpose(u, order).reshape(per_index)[valid].reshape(-1) for u in updates]
    targets = targets.reshape(-1)
    outs = [o.copy().reshape(-1) for o in operands]
    if targets.size:
        if not _try_ufunc_at(outs, targets, values, combiner):
            _apply_in_rounds(outs, targets, values, combiner)
    return [out.reshape(operand_shape) for out in outs]


def _try_ufunc_at(outs, targets, values, combiner: Combiner) -> bool:
    """Fast path for a single operand whose combiner is a plain numpy ufunc."""
    if combiner.ufunc is None or len(outs) != 1:
        return False
    try:
        combiner.ufunc.at(outs[0], targets, values[0].astype(outs[0].dtype, copy=False))
    except TypeError:  # no loop for this dtype (ml_dtypes); the generic path handles it
        return False
    return True


# --------------------------------------------------------------------------- slices


def _clamped_starts(starts, sizes: Sequence[int], dims: Sequence[int]) -> list[int]:
    """Dynamic start indices clamped to [0, dim - size]; Python ints keep unsigned values exact."""
    starts = [int(s) for s in np.asarray(starts).reshape(-1)] if isinstance(starts, np.ndarray) \
        else [int(s) for s in starts]
    if len(starts) != len(dims):
        raise ValueError(f"expected {len(dims)} start indices, got {len(starts)}")
    return [min(max(s, 0), d - n) for s, n, d in zip(starts, sizes, dims)]


def dynamic_slice(operand: np.ndarray, starts: list[int], sizes: Sequence[int]) -> np.ndarray:
    """XLA dynamic-slice: a `sizes` block at the clamped `starts`."""
    operand = np.asarray(operand)
    sizes = [int(s) for s in sizes]
    if len(sizes) != operand.ndim or any(not 0 <= s <= d for s, d in zip(sizes, operand.shape)):
        raise ValueError(f"dynamic-slice sizes {sizes} invalid for operand {operand.shape}")
    begin = _clamped_starts(starts, sizes, operand.shape)
    return operand[tuple(slice(b, b + s) for b, s in zip(begin, sizes))].copy()


def dynamic_update_slice(operand: np.ndarray, update: np.ndarray, starts: list[int]) -> np.ndarray:
    """XLA dynamic-update-slice: a copy of `operand` with `update` written at the clamped `starts`."""
    operand, update = np.asarray(operand), np.asarray(update)
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise ValueError(f"dynamic-update-slice update {update.shape} does not fit operand {operand.shape}")
    begin = _clamped_starts(starts, update.shape, operand.shape)
    out = operand.copy()
    out[tuple(slice(b, b + s) for b, s in zip(begin, update.shape))] = update
    return out


def slice_array(operand: np.ndarray, starts: Sequence[int], limits: Sequence[int],
                strides: Sequence[int]) -> np.ndarray:
    """HLO slice: out[i] = operand[start + i*stride] per dim, limits exclusive."""
    operand = np.asarray(operand)
    if not len(starts) == len(limits) == len(strides) == operand.ndim:
        raise ValueError(f"slice needs {operand.ndim} ranges")
    for d, (b, e, s, n) in enumerate(zip(starts, limits, strides, operand.shape)):
        if not (0 <= b <= e <= n and s >= 1):
            raise ValueError(f"slice [{b}:{e}:{s}] invalid for dimension {d} of size {n}")
    return operand[tuple(slice(b, e, s) for b, e, s in zip(starts, limits, strides))].copy()


# --------------------------------------------------------------------------- handlers

def _start_indices(ops: Sequence[np.ndarray]) -> list[int]:
    """Start indices from scalar operands (or the older single index-vector operand)."""
    starts: list[int] = []
    for s in ops:
        starts.extend(int(v) for v in np.asarray(s).reshape(-1).tolist())
    return starts


@HANDLERS.register(Op.DYNAMIC_SLICE)
def run_dynamic_slice(ev, inst, ops):
    return dynamic_slice(ops[0], _start_indices(ops[1:]), inst.attrs["dynamic_slice_sizes"])


@HANDLERS.register(Op.DYNAMIC_UPDATE_SLICE)
def run_dynamic_update_slice(ev, inst, ops):
    return dynamic_update_slice(ops[0], ops[1], _start_indices(ops[2:]))


@HANDLERS.register(Op.GATHER)
def run_gather(ev, inst, ops):
    return gather(ops[0], ops[1], ev.plans.attribute(inst, GatherDims.of), tuple(inst.attrs["slice_sizes"]),
                  tuple(inst.shape.dims))


@HANDLERS.register(Op.SCATTER)
def run_scatter(ev, inst, ops):
    n = (len(ops) - 1) // 2
    results = scatter(list(ops[:n]), ops[n], list(ops[n + 1:]), ev.plans.attribute(inst, ScatterDims.of),
                      ev.combiner(inst.attrs["to_apply"]), inst.attrs.get("indices_are_sorted", False),
                      inst.attrs.get("unique_indices", False))
    return as_tuple_if(inst.shape, results)
