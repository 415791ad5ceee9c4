"""algsimp rules for reshape, transpose, broadcast and iota: no-ops, chains that compose,
and broadcasts moved through reshapes and transposes."""
from __future__ import annotations

import numpy as np

from ...opcodes import Op
from ..analysis import inverse_permutation, is_identity_permutation
from .facts import broadcast_dims, map_dims_through_reshape, ones_inserted_or_deleted
from .rules import RULES


# =========================================================================== reshape


@RULES.register(Op.RESHAPE)
def reshape_zero_elements(ctx, inst):
    """A reshape to a zero-element shape -> an empty constant."""
    if inst.shape.element_count() != 0 or inst.operands[0].opcode == Op.CONSTANT:
        return None
    empty = np.zeros(inst.shape.dims, dtype=inst.shape.element_type.dtype)
    return ctx.constant_array(empty, inst.shape, final=True)


@RULES.register(Op.BITCAST_CONVERT, Op.RESHAPE, Op.SLICE, Op.DYNAMIC_SLICE)
def operand_of_same_shape(ctx, inst):
    """An op producing its operand's own shape leaves it as it is -> A: bitcast-convert(A) to A's own
    type, reshape(A) to A's shape, slice(A) covering all of A, dynamic-slice(A, ...) of A's whole
    shape (the clamped start is 0)."""
    a = inst.operands[0]
    return a if ctx.can_replace(inst, a) else None


@RULES.register(Op.RESHAPE)
def reshape_of_reshape(ctx, inst):
    """reshape(reshape(A)) -> reshape(A)."""
    inner = inst.operands[0]
    if inner.opcode != Op.RESHAPE:
        return None
    return ctx.add(Op.RESHAPE, inst.shape, [inner.operands[0]], final=True)


@RULES.register(Op.RESHAPE)
def reshape_of_broadcast(ctx, inst):
    """reshape(broadcast(X)) -> broadcast(X) when the reshape leaves X's dimensions intact
    (always for a scalar X)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    x = inner.operands[0]
    dims = tuple(broadcast_dims(inner))
    if list(dims) != sorted(dims):
        return None
    new_dims = map_dims_through_reshape(inner.shape.dims, inst.shape.dims, dims)
    if new_dims is None:
        return None
    return ctx.add(Op.BROADCAST, inst.shape, [x], {"dimensions": tuple(new_dims)}, final=True)


# =========================================================================== transpose


@RULES.register(Op.TRANSPOSE)
def transpose_identity(ctx, inst):
    """transpose(A) with the identity permutation -> A (same layout required)."""
    a = inst.operands[0]
    if is_identity_permutation(inst.attrs["dimensions"]) and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.TRANSPOSE)
def transpose_of_transpose(ctx, inst):
    """transpose(transpose(A, p1), p2) -> transpose(A, p1[p2[i]])."""
    inner = inst.operands[0]
    if inner.opcode != Op.TRANSPOSE:
        return None
    p1, p2 = inner.attrs["dimensions"], inst.attrs["dimensions"]
    perm = tuple(p1[p2[i]] for i in range(len(p2)))
    a = inner.operands[0]
    if is_identity_permutation(perm) and ctx.can_replace(inst, a):
        return a
    return ctx.add(Op.TRANSPOSE, inst.shape, [a], {"dimensions": perm}, final=True)


@RULES.register(Op.TRANSPOSE)
def transpose_of_degenerate_dims(ctx, inst):
    """A transpose that only moves dimensions of size 1 -> reshape."""
    perm = inst.attrs["dimensions"]
    dims = inst.shape.dims
    kept = [perm[i] for i in range(len(perm)) if dims[i] != 1]
    if len(kept) == len(perm) or kept != sorted(kept):
        return None
    return ctx.add(Op.RESHAPE, inst.shape, [inst.operands[0]], final=True)


@RULES.register(Op.TRANSPOSE)
def transpose_of_broadcast(ctx, inst):
    """transpose(broadcast(X)) -> broadcast(X) when the transpose keeps X's dimensions in order."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    dims = tuple(broadcast_dims(inner))
    if list(dims) != sorted(dims):
        return None
    inv = inverse_permutation(inst.attrs["dimensions"])
    new_dims = tuple(inv[d] for d in dims)
    if list(new_dims) != sorted(new_dims):
        return None
    return ctx.add(Op.BROADCAST, inst.shape, [inner.operands[0]], {"dimensions": new_dims}, final=True)


# =========================================================================== broadcast and iota


@RULES.register(Op.BROADCAST)
def broadcast_as_reshape(ctx, inst):
    """broadcast(X) adding no elements -> reshape(X) (sorted dimensions) or transpose(X)
    (same rank, unsorted dimensions)."""
    x = inst.operands[0]
    dims = tuple(broadcast_dims(inst))
    if inst.shape.element_count() != x.shape.element_count():
        return None
    if list(dims) == sorted(dims):
        if ctx.can_replace(inst, x):
            return x
        return ctx.add(Op.RESHAPE, inst.shape, [x], final=True)
    if inst.shape.rank == x.shape.rank:
        return ctx.add(Op.TRANSPOSE, inst.shape, [x], {"dimensions": inverse_permutation(dims)}, final=True)
    return None


@RULES.register(Op.BROADCAST)
def broadcast_of_degenerate_reshape(ctx, inst):
    """broadcast(reshape(X)) where the reshape only inserts size-1 dimensions -> broadcast(X)."""
    inner = inst.operands[0]
    if inner.opcode != Op.RESHAPE:
        return None
    change = ones_inserted_or_deleted(inner.operands[0].shape.dims, inner.shape.dims)
    if change is None or change[0]:
        return None
    inserted = set(change[1])
    dims = tuple(d for i, d in enumerate(broadcast_dims(inst)) if i not in inserted)
    return ctx.add(Op.BROADCAST, inst.shape, [inner.operands[0]], {"dimensions": dims}, final=True)


@RULES.register(Op.BROADCAST)
def broadcast_of_iota(ctx, inst):
    """broadcast(iota) -> iota along the mapped dimension."""
    inner = inst.operands[0]
    if inner.opcode != Op.IOTA:
        return None
    dim = broadcast_dims(inst)[inner.attrs["iota_dimension"]]
    return ctx.add(Op.IOTA, inst.shape, [], {"iota_dimension": dim}, final=True)


@RULES.register(Op.BROADCAST)
def broadcast_of_broadcast(ctx, inst):
    """broadcast(broadcast(X, d1), d2) -> broadcast(X, d2[d1[i]])."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    outer = broadcast_dims(inst)
    dims = tuple(outer[d] for d in broadcast_dims(inner))
    return ctx.add(Op.BROADCAST, inst.shape, [inner.operands[0]], {"dimensions": dims}, final=True)


@RULES.register(Op.BROADCAST)
def broadcast_drop_degenerate_dims(ctx, inst):
    """broadcast(X) with size-1 dimensions in X -> broadcast(reshape(X) without them)."""
    x = inst.operands[0]
    if 1 not in x.shape.dims:
        return None
    dims = tuple(d for d, n in zip(broadcast_dims(inst), x.shape.dims) if n != 1)
    return ctx.add(Op.BROADCAST, inst.shape, [ctx.squeeze(x)], {"dimensions": dims}, final=True)


@RULES.register(Op.IOTA)
def iota_trivial(ctx, inst):
    """iota whose iota dimension has size <= 1 -> zeros."""
    if inst.shape.dims[inst.attrs["iota_dimension"]] <= 1:
        return ctx.splat(0, inst.shape)
    return None
