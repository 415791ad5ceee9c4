"""algsimp rules for conversions and copies: convert, bitcast-convert, reduce-precision,
copy and bitcast that change nothing, lossless round trips, chains that merge."""
from __future__ import annotations

import ml_dtypes

from ...opcodes import Op
from ...shapes import Shape
from .facts import cast_preserves_values
from .rules import RULES


# ================================================================ convert, bitcast-convert, reduce-precision


@RULES.register(Op.CONVERT)
def convert_same_type(ctx, inst):
    """convert(A) to A's own element type -> A."""
    a = inst.operands[0]
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.CONVERT)
def convert_round_trip(ctx, inst):
    """convert(convert(A, T1), T0) -> A when A has type T0 and T0 -> T1 is lossless
    (s8 -> s32 -> s8, f16 -> f32 -> f16, ...; XLA's IsConvertPairNoOp)."""
    inner = inst.operands[0]
    if inner.opcode != Op.CONVERT:
        return None
    a = inner.operands[0]
    if a.shape.element_type == inst.shape.element_type \
            and cast_preserves_values(a.shape.element_type, inner.shape.element_type) \
            and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.BITCAST_CONVERT)
def bitcast_convert_chain(ctx, inst):
    """bitcast-convert(bitcast-convert(A)) -> bitcast-convert(A) when that is a valid
    bitcast-convert (A -> result widths and dimensions line up)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BITCAST_CONVERT:
        return None
    a = inner.operands[0]
    if not _bitcast_convert_fits(a.shape, inst.shape):
        return None
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return ctx.add(Op.BITCAST_CONVERT, inst.shape, [a], final=True)


def _bitcast_convert_fits(frm: Shape, to: Shape) -> bool:
    fb, tb = frm.element_type.bits, to.element_type.bits
    if fb == tb:
        return frm.dims == to.dims
    if fb > tb:
        return to.dims == frm.dims + (fb // tb,) and fb % tb == 0
    return tb % fb == 0 and frm.dims == to.dims + (tb // fb,)


@RULES.register(Op.REDUCE_PRECISION)
def reduce_precision_noop(ctx, inst):
    """reduce-precision to the operand type's own exponent and mantissa widths -> operand."""
    a = inst.operands[0]
    t = a.shape.element_type
    if not t.is_float:
        return None
    info = ml_dtypes.finfo(t.dtype)
    if inst.attrs["exponent_bits"] == info.nexp and inst.attrs["mantissa_bits"] == info.nmant \
            and ctx.can_replace(inst, a):
        return a
    return None


# =========================================================================== copy and bitcast


@RULES.register(Op.COPY, Op.BITCAST)
def copy_or_bitcast_noop(ctx, inst):
    """copy(A) -> A and bitcast(A) -> A when the shapes are equal, layouts included
    (a copy that changes the layout is kept). A copy at the entry root with a sharding stays."""
    a = inst.operands[0]
    if inst.opcode == Op.COPY and inst.sharding is not None and ctx.is_entry_root(inst):
        return None
    if inst.opcode == Op.BITCAST and a.shape.element_type != inst.shape.element_type:
        return None
    return a if ctx.can_replace(inst, a) else None


@RULES.register(Op.COPY)
def copy_of_copy(ctx, inst):
    """copy(copy(A)) -> copy(A) (or A when A already has the final layout)."""
    inner = inst.operands[0]
    if inner.opcode != Op.COPY:
        return None
    a = inner.operands[0]
    if ctx.can_replace(inst, a):
        return a
    return ctx.add(Op.COPY, inst.shape, [a], final=True)


@RULES.register(Op.BITCAST)
def bitcast_of_bitcast(ctx, inst):
    """bitcast(bitcast(A)) -> bitcast(A) (or A when the shapes are equal)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BITCAST:
        return None
    a = inner.operands[0]
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return ctx.add(Op.BITCAST, inst.shape, [a], final=True)
