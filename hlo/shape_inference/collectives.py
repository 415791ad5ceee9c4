"""Shape rules of collectives: all-reduce, all-gather, reduce-scatter, all-to-all, the permutes
and broadcasts, their start/done forms, and the device ids (replica-id, partition-id).

Replica groups are checked as XLA's CheckReplicaGroups does, against the module's
replica_count and num_partitions when it gives them.
"""
from __future__ import annotations

from typing import Optional

from ..attributes import format_int_list
from ..opcodes import Op, TypeClass
from ..shapes import U32, Shape
from .computations import check_reducer
from .core import (SHAPE_RULES, OpView, array_shape, compatible, counted, dims_in_range, fmt, one_or_tuple,
                   scalar_shape)


@SHAPE_RULES.register(Op.REPLICA_ID, Op.PARTITION_ID)
def _device_id(op: OpView) -> Shape:
    return scalar_shape(U32)


# --------------------------------------------------------------------------- replica groups


def _group_mode(op: OpView, has_global_ids: bool) -> str:
    channel = op.inst.attrs.get("channel_id") is not None
    global_ids = bool(op.inst.attrs.get("use_global_device_ids")) if has_global_ids else None
    if global_ids and not channel:
        raise op.fail("use_global_device_ids=true requires a channel_id=", attribute="use_global_device_ids")
    if not channel:
        return "replica"
    if global_ids is None:
        return "partition"
    return "flattened" if global_ids else "replica-and-partition"


def _groups(op: OpView, mode: str, uniform: bool = True) -> tuple[tuple[int, ...], ...]:
    """Replica groups after XLA's checks (CheckReplicaGroups)."""
    value = op.inst.attrs.get("replica_groups")
    groups = tuple(getattr(value, "groups", ()) or ())
    where = {"attribute": "replica_groups"}
    if not groups:
        if mode == "flattened":
            raise op.fail("replica_groups must be given with use_global_device_ids=true", **where)
        return groups
    seen: set[int] = set()
    for g in groups:
        if not g:
            raise op.fail("replica_groups must not contain an empty group", **where)
        for i in g:
            if i in seen:
                raise op.fail(f"replica_groups names device {i} more than once", **where)
            seen.add(i)
    missing = [i for i in range(len(seen)) if i not in seen]
    if missing:
        raise op.fail(f"replica_groups must name the devices 0..{len(seen) - 1} exactly once, but {missing[0]} is "
                      f"missing", **where)
    replicas, partitions = _device_counts(op)
    expected = {"replica": replicas, "replica-and-partition": replicas, "partition": partitions,
                "flattened": replicas * partitions}[mode]
    if expected != 1 and len(seen) != expected:
        raise op.fail(f"replica_groups name {len(seen)} devices but the module runs {expected} "
                      f"{'partitions' if mode == 'partition' else 'replicas' if mode != 'flattened' else 'devices'}",
                      **where)
    if uniform and any(len(g) != len(groups[0]) for g in groups):
        raise op.fail(f"the replica groups of '{op.opcode}' must all have the same size", **where)
    return groups


def _device_counts(op: OpView) -> tuple[int, int]:
    config = op.config()
    replicas = getattr(config, "replica_count", 1) or 1
    partitions = getattr(config, "num_partitions", 1) or 1
    return replicas, partitions


def _group_size(op: OpView, mode: str, groups) -> int:
    """Participants per group (XLA GetSubgroupSize); 1 when the module does not say."""
    replicas, partitions = _device_counts(op)
    if mode == "partition":
        return len(groups[0]) if groups else partitions
    size = len(groups[0]) if groups else replicas
    return size * partitions if mode == "replica-and-partition" else size


def _collective_arrays(op: OpView) -> list[Shape]:
    if op.n < 1:
        raise op.fail(f"'{op.opcode}' needs at least one operand")
    return [op.array(i) for i in range(op.n)]


# --------------------------------------------------------------------------- all-gather, all-reduce, reduce-scatter


def _sharded_operands(op: OpView) -> tuple[list[Shape], int, int]:
    """(operands, the dimension= they are sharded along, the group size) of all-gather and reduce-scatter."""
    mode = _group_mode(op, True)
    groups = _groups(op, mode)
    operands = _collective_arrays(op)
    d = op.one_dimension_of(operands)
    return operands, d, _group_size(op, mode, groups)


def _all_gather_shape(op: OpView, outputs: Optional[list[Shape]]) -> Shape:
    """Each operand with dimension d multiplied by the shard count (the group size; when the
    module does not say, the ratio of the written result to the operand, as XLA does)."""
    operands, d, shard = _sharded_operands(op)
    outputs = [o if o.is_array and o.rank == s.rank else None for o, s in zip(outputs, operands)] \
        if outputs is not None else [None] * len(operands)
    if shard == 1 and outputs[0] is not None and operands[0].dims[d]:
        shard = max(1, -(-outputs[0].dims[d] // operands[0].dims[d]))
    shapes = []
    for i, (s, out) in enumerate(zip(operands, outputs)):
        dims = list(s.dims)
        dims[d] *= shard
        if out is not None and out.dims[d] != dims[d]:
            raise op.fail(f"'{op.opcode}' concatenates {counted(shard, 'shard')} of operand {i} {fmt(s)} along "
                          f"dimension {d}, giving size {dims[d]}, but the result is written as {fmt(out)}", operand=i)
        shapes.append(array_shape(s.element_type, dims))
    return one_or_tuple(shapes)


def _outputs_of(shape: Optional[Shape], count: int) -> Optional[list[Shape]]:
    if shape is None:
        return None
    if count == 1:
        return [shape]
    if shape.is_tuple and len(shape.tuple_shapes) == count:
        return list(shape.tuple_shapes)
    return None


@SHAPE_RULES.register(Op.ALL_GATHER)
def _all_gather(op: OpView) -> Shape:
    return _all_gather_shape(op, _outputs_of(op.written, op.n))


@SHAPE_RULES.register(Op.ALL_GATHER_START)
def _all_gather_start(op: OpView) -> Shape:
    written = op.written
    outputs = None
    if written is not None and written.is_tuple and len(written.tuple_shapes) == 2:
        outputs = _outputs_of(written.tuple_shapes[1], op.n)
    gathered = _all_gather_shape(op, outputs)
    return Shape.tuple_of([one_or_tuple(op.shapes), gathered])


def _reducer_for_collective(op: OpView) -> None:
    operands = _collective_arrays(op)
    for s in operands:
        check_reducer(op, "to_apply", [scalar_shape(s.element_type)], [s.element_type], ("operand", "operand"))


@SHAPE_RULES.register(Op.ALL_REDUCE, Op.ALL_REDUCE_START)
def _all_reduce(op: OpView) -> Shape:
    _groups(op, _group_mode(op, True), uniform=False)
    _reducer_for_collective(op)
    return one_or_tuple(op.shapes)


@SHAPE_RULES.register(Op.REDUCE_SCATTER)
def _reduce_scatter(op: OpView) -> Shape:
    operands, d, shard = _sharded_operands(op)
    outputs = _outputs_of(op.written, op.n)
    if shard == 1 and outputs and outputs[0].is_array and outputs[0].rank > d and outputs[0].dims[d]:
        shard = max(1, -(-operands[0].dims[d] // outputs[0].dims[d]))
    _reducer_for_collective(op)
    shapes = []
    for i, s in enumerate(operands):
        if s.dims[d] % shard:
            raise op.fail(f"'reduce-scatter' splits dimension {d} of operand {i} {fmt(s)} into "
                          f"{counted(shard, 'shard')}, but {s.dims[d]} is not divisible by {shard}", operand=i)
        dims = list(s.dims)
        dims[d] //= shard
        shapes.append(array_shape(s.element_type, dims))
    return one_or_tuple(shapes)


# --------------------------------------------------------------------------- exchanges between devices


@SHAPE_RULES.register(Op.ALL_TO_ALL)
def _all_to_all(op: OpView) -> Shape:
    mode = _group_mode(op, False)
    groups = _groups(op, mode)
    operands = _collective_arrays(op)
    split = _group_size(op, mode, groups)
    if op.has("dimensions"):
        d = op.one_dimension()
        if op.n != 1:
            raise op.fail(f"'all-to-all' with dimensions= takes one operand, got {op.n}", operand=1)
        dims_in_range(op, [d], operands[0].rank, "dimensions", f"the operand {fmt(operands[0])}")
        if operands[0].dims[d] % split:
            raise op.fail(f"'all-to-all' splits dimension {d} of {fmt(operands[0])} into {counted(split, 'block')}, "
                          f"but {operands[0].dims[d]} is not divisible by {split}", operand=0)
        return operands[0]
    for i, s in enumerate(operands):
        if not compatible(s, operands[0]):
            raise op.fail(f"the operands of tuple 'all-to-all' must have equal shapes: operand 0 is "
                          f"{fmt(operands[0])} but operand {i} is {fmt(s)}", operand=i)
    if split != 1 and op.n != split:
        raise op.fail(f"tuple 'all-to-all' needs one operand per group member ({split}), got {op.n}")
    return Shape.tuple_of(operands)


@SHAPE_RULES.register(Op.RAGGED_ALL_TO_ALL)
def _ragged_all_to_all(op: OpView) -> Shape:
    _groups(op, _group_mode(op, False))
    data = op.array(0, "input")
    output = op.array(1, "output")
    op.same_type(0, 1, ("input", "output"))
    if data.rank != output.rank or data.dims[1:] != output.dims[1:]:
        raise op.fail(f"the input {fmt(data)} and output {fmt(output)} of 'ragged-all-to-all' must agree in every "
                      f"dimension but the first", operand=1)
    for i in range(2, 6):
        meta = op.types(i, TypeClass.INT, "offsets/sizes")
        if meta.rank not in (1, 2):
            raise op.fail(f"operand {i} (offsets/sizes) of 'ragged-all-to-all' must have rank 1 or 2, got "
                          f"{fmt(meta)}", operand=i)
        if not compatible(meta, op.shapes[2]):
            raise op.fail(f"the offsets/sizes operands of 'ragged-all-to-all' must have equal shapes: operand 2 is "
                          f"{fmt(op.shapes[2])} but operand {i} is {fmt(meta)}", operand=i)
    return output


@SHAPE_RULES.register(Op.COLLECTIVE_BROADCAST)
def _collective_broadcast(op: OpView) -> Shape:
    _groups(op, _group_mode(op, False))
    return one_or_tuple(_collective_arrays(op))


def _source_target_pairs(op: OpView, allowed_repeats: int) -> None:
    pairs = op.attr("source_target_pairs")
    replicas, partitions = _device_counts(op)
    limit = partitions if op.inst.attrs.get("channel_id") is not None else replicas
    sources: dict[int, int] = {}
    targets: dict[int, int] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise op.fail(f"source_target_pairs entries are {{source,target}} pairs, got {format_int_list(pair)}",
                          attribute="source_target_pairs")
        for role, device, seen in (("source", pair[0], sources), ("target", pair[1], targets)):
            if device < 0 or (limit != 1 and device >= limit):
                raise op.fail(f"{role} {device} in source_target_pairs is not a valid device id",
                              attribute="source_target_pairs")
            seen[device] = seen.get(device, 0) + 1
            if seen[device] > allowed_repeats:
                raise op.fail(f"{role} {device} appears more than once in source_target_pairs",
                              attribute="source_target_pairs")


def _permuted(op: OpView) -> tuple[Shape, Shape]:
    """(input, output buffer) shapes of a collective-permute (plain, combined or in-place form)."""
    if op.n == 4 and op.shapes[2].is_tuple:
        _source_target_pairs(op, max(1, len(op.shapes[2].tuple_shapes)))
        return op.shapes[0], op.shapes[1]
    _source_target_pairs(op, 1)
    shapes = _collective_arrays(op)
    combined = one_or_tuple(shapes)
    return combined, combined


@SHAPE_RULES.register(Op.COLLECTIVE_PERMUTE)
def _collective_permute(op: OpView) -> Shape:
    return _permuted(op)[1]


@SHAPE_RULES.register(Op.COLLECTIVE_PERMUTE_START)
def _collective_permute_start(op: OpView) -> Shape:
    source, target = _permuted(op)
    context = [scalar_shape(U32), scalar_shape(U32)]
    written = op.written
    if written is not None and written.is_tuple and len(written.tuple_shapes) >= 2:
        context = list(written.tuple_shapes[2:])  # (XLA writes none, or two u32 scalars)
    return Shape.tuple_of([source, target] + context)


# --------------------------------------------------------------------------- done forms


@SHAPE_RULES.register(Op.ALL_GATHER_DONE, Op.COLLECTIVE_PERMUTE_DONE)
def _done_of_pair(op: OpView) -> Shape:
    """The result the matching -start op carries in element 1 of its tuple."""
    start = op.shapes[0]
    started_by = op.opcode.removesuffix("-done") + "-start"
    if not (start.is_tuple and len(start.tuple_shapes) > 1):
        raise op.fail(f"operand 0 of '{op.opcode}' must be the tuple produced by {started_by}, but it is "
                      f"{fmt(start)}", operand=0)
    return start.tuple_shapes[1]


@SHAPE_RULES.register(Op.ALL_REDUCE_DONE)
def _all_reduce_done(op: OpView) -> Shape:
    return op.shapes[0]


@SHAPE_RULES.register(Op.COLLECTIVE_REDUCE)
def _collective_reduce(op: OpView) -> Shape:
    _collective_arrays(op)
    return op.need_written()
