"""algsimp rules for dot: empty dots, dots without contraction (a multiply), vector dots
(a reduce), and dimensions of size 1 squeezed away."""
from __future__ import annotations

from typing import Optional

from ...attributes import DotDims
from ...opcodes import Op
from ...shapes import F32, F64
from .facts import is_zero_elements
from .rules import RULES


def _dot_algorithm_supported(inst) -> bool:
    return inst.attrs.get("algorithm") in (None, "unset", "dot_f32_f32_f32")


@RULES.register(Op.DOT)
def dot_zero_elements(ctx, inst):
    """A dot with a zero-element operand or result -> broadcast(0)."""
    if any(is_zero_elements(x) for x in (inst, *inst.operands)):
        return ctx.splat(0, inst.shape)
    return None


def _normalize_operand(ctx, x, batch, contracting, t):
    """x transposed to (batch, free, contracting) order and converted to type t."""
    free = [d for d in range(x.shape.rank) if d not in batch and d not in contracting]
    perm = list(batch) + free + list(contracting)
    x = ctx.transpose(x, perm)
    return ctx.convert(x, t)


@RULES.register(Op.DOT)
def dot_without_contraction(ctx, inst):
    """A dot without contracting dimensions -> multiply(broadcast(lhs'), broadcast(rhs')), where
    ' puts batch dimensions first and converts to the result type."""
    dn = DotDims.of(inst)
    if dn.lhs_contracting or not _dot_algorithm_supported(inst):
        return None
    lhs, rhs = inst.operands
    t = inst.shape.element_type
    nb = len(dn.lhs_batch)
    lhs_free = lhs.shape.rank - nb
    new_lhs = _normalize_operand(ctx, lhs, dn.lhs_batch, (), t)
    new_rhs = _normalize_operand(ctx, rhs, dn.rhs_batch, (), t)
    out = ctx.array_shape(t, inst.shape.dims)
    lhs_dims = tuple(range(lhs.shape.rank))
    rhs_dims = tuple(range(nb)) + tuple(range(nb + lhs_free, inst.shape.rank))
    new_lhs = ctx.broadcast_dims(new_lhs, out, lhs_dims)
    new_rhs = ctx.broadcast_dims(new_rhs, out, rhs_dims)
    return ctx.add(Op.MULTIPLY, inst.shape, [new_lhs, new_rhs], final=True)


@RULES.register(Op.DOT)
def dot_as_reduce(ctx, inst):
    """A dot whose operands both have only batch and contracting dimensions (vector . vector and
    its batched forms) -> reduce(multiply(lhs', rhs'), add) over the contracting dimensions,
    accumulating floats in f32 (f64 stays f64), as XLA:CPU's strength reduction."""
    dn = DotDims.of(inst)
    lhs, rhs = inst.operands
    if not dn.lhs_contracting or not _dot_algorithm_supported(inst):
        return None
    if len(dn.lhs_batch) + len(dn.lhs_contracting) != lhs.shape.rank \
            or len(dn.rhs_batch) + len(dn.rhs_contracting) != rhs.shape.rank:
        return None
    t = inst.shape.element_type
    if t.is_pred:
        return None
    acc_type = (F64 if t == F64 else F32) if t.is_float else t
    new_lhs = _normalize_operand(ctx, lhs, dn.lhs_batch, dn.lhs_contracting, t)
    new_rhs = _normalize_operand(ctx, rhs, dn.rhs_batch, dn.rhs_contracting, t)
    product = ctx.add(Op.MULTIPLY, new_lhs.shape, [new_lhs, new_rhs])
    product = ctx.convert(product, acc_type)
    nb = len(dn.lhs_batch)
    reduce_dims = tuple(range(nb, nb + len(dn.lhs_contracting)))
    zero = ctx.constant_scalar(0, acc_type)
    summed = ctx.add(Op.REDUCE, ctx.array_shape(acc_type, inst.shape.dims), [product, zero],
                     {"dimensions": reduce_dims, "to_apply": ctx.scalar_computation(Op.ADD, acc_type)})
    if acc_type == t:
        return ctx.replace_shape(summed, inst.shape)
    return ctx.add(Op.CONVERT, inst.shape, [summed], final=True)


@RULES.register(Op.DOT)
def dot_drop_degenerate_dims(ctx, inst):
    """Dimensions of size 1 are reshaped away from both operands; the dot on the squeezed
    operands is reshaped back to the result shape (XLA's RemoveDegenerateDimensionFromDot)."""
    lhs, rhs = inst.operands
    if 1 not in lhs.shape.dims and 1 not in rhs.shape.dims:
        return None
    dn = DotDims.of(inst)
    lhs_map = _squeeze_map(lhs.shape.dims)
    rhs_map = _squeeze_map(rhs.shape.dims)
    keep = lambda dims, m: tuple(m[d] for d in dims if m[d] is not None)
    lb, lc = keep(dn.lhs_batch, lhs_map), keep(dn.lhs_contracting, lhs_map)
    rb, rc = keep(dn.rhs_batch, rhs_map), keep(dn.rhs_contracting, rhs_map)
    new_lhs = ctx.squeeze(lhs)
    new_rhs = ctx.squeeze(rhs)
    out_dims = ([new_lhs.shape.dims[d] for d in lb]
                + [n for d, n in enumerate(new_lhs.shape.dims) if d not in lb and d not in lc]
                + [n for d, n in enumerate(new_rhs.shape.dims) if d not in rb and d not in rc])
    attrs = dict(inst.attrs)
    attrs.update(lhs_batch_dims=lb, lhs_contracting_dims=lc, rhs_batch_dims=rb, rhs_contracting_dims=rc)
    t = inst.shape.element_type
    if tuple(out_dims) == inst.shape.dims:
        return ctx.add(Op.DOT, inst.shape, [new_lhs, new_rhs], attrs, final=True)
    dot = ctx.add(Op.DOT, ctx.array_shape(t, out_dims), [new_lhs, new_rhs], attrs)
    return ctx.add(Op.RESHAPE, inst.shape, [dot], final=True)


def _squeeze_map(dims) -> list[Optional[int]]:
    out, k = [], 0
    for n in dims:
        out.append(None if n == 1 else k)
        k += n != 1
    return out
