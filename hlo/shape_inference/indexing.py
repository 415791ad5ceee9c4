"""Shape rules of indexing: dynamic-slice, dynamic-update-slice, gather and scatter
(with batching dimensions, as in XLA's InferGatherShape and InferScatterShape)."""
from __future__ import annotations

from ..attributes import format_int_list
from ..opcodes import Op, TypeClass
from ..shapes import Shape
from .computations import check_reducer
from .core import (SHAPE_RULES, OpView, array_shape, dims_in_range, dims_sorted, dims_unique, fmt,
                   one_or_tuple, scalar_shape)


# --------------------------------------------------------------------------- dynamic slices


def _start_indices(op: OpView, first: int, rank: int) -> None:
    """Scalar start indices (one per dimension, same integer type) or one legacy index vector."""
    count = op.n - first
    if count == 1 and op.shapes[first].is_array and op.shapes[first].rank == 1:
        vector = op.types(first, TypeClass.INT, "start indices")
        if vector.dims[0] != rank:
            raise op.fail(f"the start index vector of '{op.opcode}' must have one entry per operand dimension "
                          f"({rank}), but it is {fmt(vector)}", operand=first)
        return
    if count != rank:
        raise op.fail(f"'{op.opcode}' needs {rank} scalar start indices (one per operand dimension), got {count}",
                      operand=first + rank if count > rank else None)
    for i in range(first, op.n):
        op.types(i, TypeClass.INT, "start index")
        op.scalar(i, "start index")
        op.same_type(first, i, ("start index", "start index"))


def _sizes_fit(op: OpView, attribute: str, sizes: tuple[int, ...], operand: Shape) -> None:
    """Each slice size is within its operand dimension."""
    for d, (s, n) in enumerate(zip(sizes, operand.dims)):
        if not 0 <= s <= n:
            raise op.fail(f"{attribute}={format_int_list(sizes)}: size {s} of dimension {d} must be in [0, {n}]",
                          attribute=attribute)


@SHAPE_RULES.register(Op.DYNAMIC_SLICE)
def _dynamic_slice(op: OpView) -> Shape:
    operand = op.array(0)
    _start_indices(op, 1, operand.rank)
    sizes = op.int_list("dynamic_slice_sizes")
    if len(sizes) != operand.rank:
        raise op.fail(f"dynamic_slice_sizes={format_int_list(sizes)} needs one size per dimension of the operand "
                      f"{fmt(operand)}", attribute="dynamic_slice_sizes")
    _sizes_fit(op, "dynamic_slice_sizes", sizes, operand)
    return array_shape(operand.element_type, sizes)


@SHAPE_RULES.register(Op.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(op: OpView) -> Shape:
    operand = op.array(0)
    update = op.array(1, "update")
    _start_indices(op, 2, operand.rank)
    if update.rank != operand.rank:
        raise op.fail(f"the update of 'dynamic-update-slice' must have the operand's rank: operand 0 is "
                      f"{fmt(operand)} but operand 1 is {fmt(update)}", operand=1)
    op.same_type(0, 1, ("", "update"))
    for d, (u, n) in enumerate(zip(update.dims, operand.dims)):
        if u > n:
            raise op.fail(f"the update {fmt(update)} is larger than the operand {fmt(operand)} in dimension {d}",
                          operand=1)
    return operand


# --------------------------------------------------------------------------- gather / scatter


def _expanded_indices(op: OpView, i: int, attribute: str) -> tuple[Shape, tuple[int, ...], int]:
    indices = op.types(i, TypeClass.INT, "indices")
    ivd = op.int_attr(attribute)
    if not 0 <= ivd <= indices.rank:
        raise op.fail(f"{attribute}={ivd} must be in [0, {indices.rank}] for the indices {fmt(indices)}",
                      attribute=attribute)
    expanded = indices.dims + (1,) if ivd == indices.rank else indices.dims
    return indices, expanded, ivd


def _check_batching(op: OpView, operand: Shape, expanded: tuple[int, ...], ivd: int, operand_attr: str,
                    indices_attr: str, disjoint_from: tuple[str, tuple[int, ...]]) -> tuple[int, ...]:
    obd = op.int_list(operand_attr)
    ibd = op.int_list(indices_attr)
    dims_in_range(op, obd, operand.rank, operand_attr, f"the operand {fmt(operand)}")
    dims_sorted(op, obd, operand_attr)
    dims_unique(op, obd, operand_attr)
    overlap = set(obd) & set(disjoint_from[1])
    if overlap:
        raise op.fail(f"dimension {min(overlap)} is in both {operand_attr}= and {disjoint_from[0]}=",
                      attribute=operand_attr)
    if len(ibd) != len(obd):
        raise op.fail(f"{indices_attr}={format_int_list(ibd)} must have as many entries as "
                      f"{operand_attr}={format_int_list(obd)}",
                      attribute=indices_attr)
    dims_in_range(op, ibd, len(expanded), indices_attr, "the indices")
    dims_unique(op, ibd, indices_attr)
    for od, sd in zip(obd, ibd):
        if sd == ivd:
            raise op.fail(f"{indices_attr}={format_int_list(ibd)} must not contain the index vector dimension {ivd}",
                          attribute=indices_attr)
        if expanded[sd] != operand.dims[od]:
            raise op.fail(f"batching dimensions must have equal sizes: operand dimension {od} has size "
                          f"{operand.dims[od]} but indices dimension {sd} has size {expanded[sd]}",
                          attribute=indices_attr)
    return obd


def _check_index_map(op: OpView, attribute: str, index_map: tuple[int, ...], operand: Shape,
                     expanded: tuple[int, ...], ivd: int, batching: tuple[int, ...]) -> None:
    if len(index_map) != expanded[ivd]:
        raise op.fail(f"{attribute}={format_int_list(index_map)} has {len(index_map)} entries but the index vectors "
                      f"(dimension {ivd} of the indices) have {expanded[ivd]}", attribute=attribute)
    dims_in_range(op, index_map, operand.rank, attribute, f"the operand {fmt(operand)}")
    dims_unique(op, index_map, attribute)
    both = set(index_map) & set(batching)
    if both:
        raise op.fail(f"{attribute}={format_int_list(index_map)} must not contain the batching dimension {min(both)}",
                      attribute=attribute)


@SHAPE_RULES.register(Op.GATHER)
def _gather(op: OpView) -> Shape:
    operand = op.array(0)
    indices, expanded, ivd = _expanded_indices(op, 1, "index_vector_dim")
    offset_dims = op.int_list("offset_dims")
    collapsed = op.int_list("collapsed_slice_dims")
    index_map = op.int_list("start_index_map")
    slice_sizes = op.int_list("slice_sizes")
    out_rank = len(offset_dims) + len(expanded) - 1
    dims_sorted(op, offset_dims, "offset_dims")
    dims_unique(op, offset_dims, "offset_dims")
    dims_in_range(op, offset_dims, out_rank, "offset_dims", f"the rank-{out_rank} result")
    dims_in_range(op, collapsed, operand.rank, "collapsed_slice_dims", f"the operand {fmt(operand)}")
    dims_sorted(op, collapsed, "collapsed_slice_dims")
    dims_unique(op, collapsed, "collapsed_slice_dims")
    batching = _check_batching(op, operand, expanded, ivd, "operand_batching_dims", "start_indices_batching_dims",
                               ("collapsed_slice_dims", collapsed))
    _check_index_map(op, "start_index_map", index_map, operand, expanded, ivd, batching)
    if len(slice_sizes) != operand.rank:
        raise op.fail(f"slice_sizes={format_int_list(slice_sizes)} needs one size per dimension of the operand "
                      f"{fmt(operand)}", attribute="slice_sizes")
    if len(offset_dims) + len(collapsed) + len(batching) != operand.rank:
        raise op.fail(f"every operand dimension must be an offset, collapsed or batching dimension: "
                      f"offset_dims has {len(offset_dims)}, collapsed_slice_dims {len(collapsed)} and "
                      f"operand_batching_dims {len(batching)} entries, but the operand {fmt(operand)} has rank "
                      f"{operand.rank}", attribute="offset_dims")
    _sizes_fit(op, "slice_sizes", slice_sizes, operand)
    for d in collapsed + batching:
        if slice_sizes[d] > 1:
            raise op.fail(f"slice_sizes={format_int_list(slice_sizes)}: dimension {d} is collapsed or batching, so its "
                          f"slice size must be 0 or 1, not {slice_sizes[d]}", attribute="slice_sizes")
    window = [slice_sizes[d] for d in range(operand.rank) if d not in collapsed and d not in batching]
    batch = [n for d, n in enumerate(expanded) if d != ivd]
    windows, batches = iter(window), iter(batch)
    dims = [next(windows) if d in offset_dims else next(batches) for d in range(out_rank)]
    return array_shape(operand.element_type, dims)


@SHAPE_RULES.register(Op.SCATTER)
def _scatter(op: OpView) -> Shape:
    if op.n % 2 == 0:
        raise op.fail(f"'scatter' takes N operands, the indices and N updates (an odd count), got {op.n}")
    count = op.n // 2
    operands = [op.array(i) for i in range(count)]
    indices, expanded, ivd = _expanded_indices(op, count, "index_vector_dim")
    updates = [op.array(count + 1 + i, "updates") for i in range(count)]
    window_dims = op.int_list("update_window_dims")
    inserted = op.int_list("inserted_window_dims")
    index_map = op.int_list("scatter_dims_to_operand_dims")
    op.equal_dims(operands)
    operand = operands[0]
    dims_sorted(op, window_dims, "update_window_dims")
    dims_unique(op, window_dims, "update_window_dims")
    dims_in_range(op, inserted, operand.rank, "inserted_window_dims", f"the operand {fmt(operand)}")
    dims_sorted(op, inserted, "inserted_window_dims")
    dims_unique(op, inserted, "inserted_window_dims")
    batching = _check_batching(op, operand, expanded, ivd, "input_batching_dims", "scatter_indices_batching_dims",
                               ("inserted_window_dims", inserted))
    if len(window_dims) + len(inserted) + len(batching) != operand.rank:
        raise op.fail(f"every operand dimension must be an update window, inserted or batching dimension: "
                      f"update_window_dims has {len(window_dims)}, inserted_window_dims {len(inserted)} and "
                      f"input_batching_dims {len(batching)} entries, but the operand {fmt(operand)} has rank "
                      f"{operand.rank}", attribute="update_window_dims")
    _check_index_map(op, "scatter_dims_to_operand_dims", index_map, operand, expanded, ivd, batching)
    window_bounds = [n for d, n in enumerate(operand.dims) if d not in inserted and d not in batching]
    scatter_bounds = [n for d, n in enumerate(expanded) if d != ivd]
    for k, upd in enumerate(updates):
        _check_updates(op, k, operands[k], upd, indices, window_dims, window_bounds, scatter_bounds)
    check_reducer(op, "to_apply", [scalar_shape(s.element_type) for s in operands],
                  [u.element_type for u in updates], ("operand", "updates"))
    return one_or_tuple(operands)


def _check_updates(op: OpView, k: int, operand: Shape, upd: Shape, indices: Shape, window_dims: tuple[int, ...],
                   window_bounds: list[int], scatter_bounds: list[int]) -> None:
    """Updates k of a scatter: operand k's element type, window dims within the operand's, scatter
    dims equal to the indices' batch dims."""
    i = op.n // 2 + 1 + k
    if upd.element_type is not operand.element_type:
        raise op.fail(f"updates {k} of 'scatter' must have the element type of operand {k}: operand {k} is "
                      f"{fmt(operand)} but operand {i} (updates) is {fmt(upd)}", operand=i)
    if upd.rank != len(window_dims) + len(scatter_bounds):
        raise op.fail(f"updates {fmt(upd)} must have rank {len(window_dims) + len(scatter_bounds)} "
                      f"({len(window_dims)} update window dims + {len(scatter_bounds)} scatter dims of the "
                      f"indices {fmt(indices)})", operand=i)
    dims_in_range(op, window_dims, upd.rank, "update_window_dims", f"the updates {fmt(upd)}")
    for w, d in enumerate(window_dims):
        if upd.dims[d] > window_bounds[w]:
            raise op.fail(f"update window dimension {d} of {fmt(upd)} has size {upd.dims[d]}, more than the "
                          f"{window_bounds[w]} of the matching operand dimension", operand=i)
    scatter_dims = [d for d in range(upd.rank) if d not in window_dims]
    for d, bound in zip(scatter_dims, scatter_bounds):
        if upd.dims[d] != bound:
            raise op.fail(f"scatter dimension {d} of the updates {fmt(upd)} has size {upd.dims[d]} but the "
                          f"matching dimension of the indices {fmt(indices)} has size {bound}", operand=i)
