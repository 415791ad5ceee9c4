"""algsimp rules for reduce-window (XLA's AlgebraicSimplifier::HandleReduceWindow): a
reduce-window of scalars is its operand, and one whose windows are 1 or a whole dimension
(no stride, dilation or padding) is a reduce over those dimensions. Both take init as the
reducer's identity, as XLA does; the interpreter computes them the same way
(hlo/interpreter/reduction_order.py)."""
from __future__ import annotations

from ...interpreter.reduction_order import window_as_reduce_dims
from ...opcodes import Op
from .rules import RULES


@RULES.register(Op.REDUCE_WINDOW)
def reduce_window_of_scalars(ctx, inst):
    """reduce-window(x, init) of rank-0 operands -> x (a tuple of them when variadic)."""
    n = len(inst.operands) // 2
    inputs = inst.operands[:n]
    if inputs[0].shape.is_tuple or inputs[0].shape.rank != 0:
        return None
    if not inst.shape.is_tuple:
        return ctx.replace_shape(inputs[0], inst.shape)
    return ctx.add(Op.TUPLE, inst.shape, inputs, final=True)


@RULES.register(Op.REDUCE_WINDOW)
def reduce_window_of_whole_dimensions(ctx, inst):
    """reduce-window(x, init) without stride, dilation or padding, each window 1 or the whole
    dimension -> reshape(reduce(x, init) over the whole ones)."""
    if len(inst.operands) != 2 or inst.shape.is_tuple:
        return None
    x, init = inst.operands
    window = inst.attrs.get("window")
    dims = window_as_reduce_dims(window, x.shape.dims) if window is not None and x.shape.rank else None
    if dims is None:
        return None
    kept = [n for d, n in enumerate(x.shape.dims) if d not in dims]
    reduced = ctx.add(Op.REDUCE, ctx.array_shape(inst.shape.element_type, kept), [x, init],
                      {"dimensions": dims, "to_apply": inst.attrs["to_apply"]})
    return ctx.add(Op.RESHAPE, inst.shape, [reduced], final=True)
