"""algsimp rules for slice, reverse, pad, concatenate and the dynamic slices: chains that
compose, slices of pads, broadcasts and concatenates, empty and repeated operands."""
from __future__ import annotations

from ...ir import Instruction
from ...opcodes import Op
from .facts import broadcast_dims, is_zero_elements, slice_dim_size, splat_value
from .rules import RULES


# =========================================================================== slice


@RULES.register(Op.SLICE)
def slice_of_slice(ctx, inst):
    """slice(slice(A)) -> one slice of A (strides multiply)."""
    inner = inst.operands[0]
    if inner.opcode != Op.SLICE:
        return None
    ranges = []
    for (s2, _, t2), (s1, _, t1), n in zip(inst.attrs["slice"], inner.attrs["slice"], inst.shape.dims):
        start, stride = s1 + s2 * t1, t1 * t2
        ranges.append((start, start + (n - 1) * stride + 1, stride) if n else (0, 0, 1))
    return ctx.slice(inner.operands[0], inst.shape, ranges, final=True)


@RULES.register(Op.SLICE)
def slice_of_pad(ctx, inst):
    """slice(pad(X, v)): only padding -> broadcast(v); exactly X -> X; inside X -> slice(X)."""
    pad = inst.operands[0]
    if pad.opcode != Op.PAD:
        return None
    x, value = pad.operands
    undoes, inside, starts, limits = True, True, [], []
    for (start, limit, stride), (lo, hi, interior), size in zip(inst.attrs["slice"], pad.attrs["padding"],
                                                               pad.shape.dims):
        if limit <= lo or start >= size - hi:
            return ctx.add(Op.BROADCAST, inst.shape, [value], {"dimensions": ()}, final=True)
        undoes &= start == lo and stride - 1 == interior
        inside &= start >= lo and limit <= size - hi and interior == 0 and stride == 1
        starts.append(start - lo)
        limits.append(limit - lo)
    if undoes and ctx.can_replace(inst, x):
        return x
    if inside:
        ranges = tuple((s, l, 1) for s, l in zip(starts, limits))
        return ctx.slice(x, inst.shape, ranges, final=True)
    return None


@RULES.register(Op.SLICE)
def slice_of_broadcast(ctx, inst):
    """slice(broadcast(X)) -> broadcast(slice(X)), or broadcast(X) when only the broadcast's
    new dimensions are sliced."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    x = inner.operands[0]
    dims = broadcast_dims(inner)
    ranges = tuple(inst.attrs["slice"][d] for d in dims)
    if all(r == (0, n, 1) for r, n in zip(ranges, x.shape.dims)):
        return ctx.add(Op.BROADCAST, inst.shape, [x], {"dimensions": tuple(dims)}, final=True)
    sliced = ctx.slice(x, ctx.array_shape(x.shape.element_type, [slice_dim_size(*r) for r in ranges]), ranges)
    return ctx.add(Op.BROADCAST, inst.shape, [sliced], {"dimensions": tuple(dims)}, final=True)


@RULES.register(Op.SLICE)
def slice_of_concatenate(ctx, inst):
    """An unstrided slice of a concatenate reading a single operand -> that operand or a slice
    of it; reading a run of operands -> a slice of their concatenate."""
    concat = inst.operands[0]
    if concat.opcode != Op.CONCATENATE or any(r[2] != 1 for r in inst.attrs["slice"]):
        return None
    dim = concat.attrs["dimensions"][0]
    start, limit, _ = inst.attrs["slice"][dim]
    offset, first, last, first_offset = 0, None, None, 0
    for i, piece in enumerate(concat.operands):
        size = piece.shape.dims[dim]
        if first is None and offset <= start < offset + size:
            first, first_offset = i, offset
        offset += size
        if first is not None and offset >= limit:
            last = i
            break
    if first is None or last is None or (first == 0 and last == len(concat.operands) - 1):
        return None
    pieces = concat.operands[first:last + 1]
    if len(pieces) == 1 and ctx.can_replace(inst, pieces[0]):
        return pieces[0]
    source = pieces[0]
    if len(pieces) > 1:
        dims = list(pieces[0].shape.dims)
        dims[dim] = sum(p.shape.dims[dim] for p in pieces)
        source = ctx.add(Op.CONCATENATE, ctx.array_shape(inst.shape.element_type, dims), pieces,
                         {"dimensions": (dim,)})
    ranges = list(inst.attrs["slice"])
    ranges[dim] = (start - first_offset, limit - first_offset, 1)
    return ctx.slice(source, inst.shape, ranges, final=True)


# =========================================================================== reverse and pad


@RULES.register(Op.REVERSE)
def reverse_trivial(ctx, inst):
    """reverse(A) over dimensions of size 1 only -> A."""
    a = inst.operands[0]
    if all(inst.shape.dims[d] == 1 for d in inst.attrs["dimensions"]) and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.REVERSE)
def reverse_of_reverse(ctx, inst):
    """reverse(reverse(A, d1), d2) -> A when d1 = d2, else reverse(A, d1 xor d2)."""
    inner = inst.operands[0]
    if inner.opcode != Op.REVERSE:
        return None
    dims = tuple(sorted(set(inst.attrs["dimensions"]) ^ set(inner.attrs["dimensions"])))
    a = inner.operands[0]
    if not dims:
        return a if ctx.can_replace(inst, a) else None
    return ctx.add(Op.REVERSE, inst.shape, [a], {"dimensions": dims}, final=True)


@RULES.register(Op.REVERSE)
def reverse_of_broadcast(ctx, inst):
    """reverse(broadcast(X)) over dimensions the broadcast added -> broadcast(X) (the values do
    not vary along them)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST or set(inst.attrs["dimensions"]) & set(broadcast_dims(inner)):
        return None
    return ctx.add(Op.BROADCAST, inst.shape, [inner.operands[0]], {"dimensions": broadcast_dims(inner)},
                   final=True)


@RULES.register(Op.PAD)
def pad_of_empty(ctx, inst):
    """pad(X, v) with zero-element X -> broadcast(v)."""
    if not is_zero_elements(inst.operands[0]):
        return None
    return ctx.add(Op.BROADCAST, inst.shape, [inst.operands[1]], {"dimensions": ()}, final=True)


@RULES.register(Op.PAD)
def pad_interior_on_unit_dims(ctx, inst):
    """Interior padding of a size-1 dimension has no effect: clear it."""
    x = inst.operands[0]
    padding = inst.attrs["padding"]
    cleared = tuple((lo, hi, 0 if n == 1 else interior) for (lo, hi, interior), n in zip(padding, x.shape.dims))
    if cleared == tuple(padding):
        return None
    return ctx.add(Op.PAD, inst.shape, list(inst.operands), {"padding": cleared}, final=True)


@RULES.register(Op.PAD)
def pad_noop(ctx, inst):
    """pad with an all-zero configuration -> operand."""
    x = inst.operands[0]
    if all(p == (0, 0, 0) for p in inst.attrs["padding"]) and ctx.can_replace(inst, x):
        return x
    return None


# =========================================================================== concatenate


@RULES.register(Op.CONCATENATE)
def concatenate_single(ctx, inst):
    """concatenate(A) -> A."""
    if len(inst.operands) == 1 and ctx.can_replace(inst, inst.operands[0]):
        return inst.operands[0]
    return None


@RULES.register(Op.CONCATENATE)
def concatenate_drop_empty(ctx, inst):
    """Zero-element operands of a concatenate are dropped."""
    ops = inst.operands
    kept = [op for op in ops if not is_zero_elements(op)]
    if len(kept) == len(ops) or len(ops) == 1:
        return None
    if len(kept) <= 1:
        only = kept[0] if kept else ops[0]
        return only if ctx.can_replace(inst, only) else None
    return ctx.add(Op.CONCATENATE, inst.shape, kept, dict(inst.attrs), final=True)


@RULES.register(Op.CONCATENATE)
def concatenate_flatten(ctx, inst):
    """concatenate(A, concatenate(B, C)) on the same dimension -> concatenate(A, B, C)."""
    dim = inst.attrs["dimensions"]
    flat = []
    for op in inst.operands:
        flat.extend(op.operands if op.opcode == Op.CONCATENATE and op.attrs["dimensions"] == dim else [op])
    if len(flat) == len(inst.operands):
        return None
    return ctx.add(Op.CONCATENATE, inst.shape, flat, dict(inst.attrs), final=True)


@RULES.register(Op.CONCATENATE)
def concatenate_adjacent_slices(ctx, inst):
    """Adjacent unstrided slices of one operand, contiguous along the concatenate dimension,
    become one slice."""
    dim = inst.attrs["dimensions"][0]
    ops = inst.operands
    groups: list[list[Instruction]] = []
    for op in ops:
        prev = groups[-1][-1] if groups else None
        if prev is not None and _continues_slice(prev, op, dim):
            groups[-1].append(op)
        else:
            groups.append([op])
    if len(groups) == len(ops):
        return None
    new_ops = []
    for group in groups:
        if len(group) == 1:
            new_ops.append(group[0])
            continue
        first, last = group[0], group[-1]
        ranges = list(first.attrs["slice"])
        ranges[dim] = (ranges[dim][0], last.attrs["slice"][dim][1], 1)
        dims = list(first.shape.dims)
        dims[dim] = ranges[dim][1] - ranges[dim][0]
        new_ops.append(ctx.slice(first.operands[0], ctx.array_shape(first.shape.element_type, dims), ranges))
    if len(new_ops) == 1 and ctx.can_replace(inst, new_ops[0]):
        return new_ops[0]
    return ctx.add(Op.CONCATENATE, inst.shape, new_ops, dict(inst.attrs), final=True)


def _continues_slice(prev: Instruction, op: Instruction, dim: int) -> bool:
    if prev.opcode != Op.SLICE or op.opcode != Op.SLICE or prev.operands[0] is not op.operands[0]:
        return False
    a, b = prev.attrs["slice"], op.attrs["slice"]
    if any(r[2] != 1 for r in a) or any(r[2] != 1 for r in b):
        return False
    return b[dim][0] == a[dim][1] and all(a[k][0] == b[k][0] for k in range(len(a)) if k != dim)


@RULES.register(Op.CONCATENATE)
def concatenate_with_broadcast_scalar(ctx, inst):
    """concatenate(broadcast(s), X) -> pad(X, s) (low padding), concatenate(X, broadcast(s))
    -> pad(X, s) (high padding)."""
    if len(inst.operands) != 2:
        return None
    a, b = inst.operands
    dim = inst.attrs["dimensions"][0]
    for filler, x, low in ((a, b, True), (b, a, False)):
        if filler.opcode == Op.BROADCAST and filler.operands[0].shape.is_scalar:
            size = filler.shape.dims[dim]
            padding = tuple(((size, 0, 0) if low else (0, size, 0)) if k == dim else (0, 0, 0)
                            for k in range(inst.shape.rank))
            return ctx.add(Op.PAD, inst.shape, [x, filler.operands[0]], {"padding": padding}, final=True)
    return None


@RULES.register(Op.CONCATENATE)
def concatenate_repeated_unit(ctx, inst):
    """concatenate(A, A, ..., A) with A of size 1 along the dimension -> broadcast(reshape(A))."""
    ops = inst.operands
    dim = inst.attrs["dimensions"][0]
    if len(ops) < 2 or any(op is not ops[0] for op in ops) or ops[0].shape.dims[dim] != 1:
        return None
    a = ops[0]
    kept = [k for k in range(a.shape.rank) if k != dim]
    squeezed = ctx.add(Op.RESHAPE, ctx.array_shape(a.shape.element_type, [a.shape.dims[k] for k in kept]), [a])
    return ctx.add(Op.BROADCAST, inst.shape, [squeezed], {"dimensions": tuple(kept)}, final=True)


# =========================================================================== dynamic slices


@RULES.register(Op.DYNAMIC_SLICE)
def dynamic_slice_constant_starts(ctx, inst):
    """dynamic-slice with constant starts -> slice (starts clamped into bounds, as XLA does)."""
    a, starts = inst.operands[0], inst.operands[1:]
    if a.opcode == Op.CONSTANT or len(starts) != a.shape.rank:
        return None
    ranges = []
    for s, n, size in zip(starts, inst.shape.dims, a.shape.dims):
        v = splat_value(s) if s.opcode == Op.CONSTANT and s.shape.element_type.is_integral else None
        if v is None or int(v) < 0:
            return None
        begin = min(int(v), size - n)
        ranges.append((begin, begin + n, 1))
    return ctx.slice(a, inst.shape, ranges, final=True)


@RULES.register(Op.DYNAMIC_UPDATE_SLICE)
def dynamic_update_slice_whole(ctx, inst):
    """dynamic-update-slice(A, U, ...) with U as large as A -> U; with an empty U -> A."""
    a, update = inst.operands[0], inst.operands[1]
    if ctx.can_replace(inst, update):
        return update
    if is_zero_elements(update) and ctx.can_replace(inst, a):
        return a
    return None
