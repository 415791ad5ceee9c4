"""Shape rules of transfers and ordering: infeed, outfeed, send, recv and their done forms,
after-all, and the ops that pass their operand through (copy, domain, opt-barrier,
add-dependency)."""
from __future__ import annotations

from ..opcodes import Op, Trait, ops_with
from ..shapes import U32, Shape
from .core import SHAPE_RULES, OpView, compatible, fmt, scalar_shape


# --------------------------------------------------------------------------- host and channel transfers


@SHAPE_RULES.register(Op.INFEED)
def _infeed(op: OpView) -> Shape:
    op.token(0)
    result = op.need_written()
    if not (result.is_tuple and len(result.tuple_shapes) == 2 and result.tuple_shapes[1].is_token):
        raise op.fail(f"'infeed' returns (data, token[]), but is written as {fmt(result)}")
    return result


@SHAPE_RULES.register(Op.OUTFEED)
def _outfeed(op: OpView) -> Shape:
    op.token(1)
    declared = op.inst.attrs.get("outfeed_shape")
    if declared is not None and not compatible(declared, op.shapes[0]):
        raise op.fail(f"outfeed_shape={fmt(declared)} must be the shape of the data operand {fmt(op.shapes[0])}",
                      attribute="outfeed_shape", operand=0)
    return Shape.token()


def _channel_context(data: Shape) -> Shape:
    """What send and recv return: (data, u32[] context, token[])."""
    return Shape.tuple_of([data, scalar_shape(U32), Shape.token()])


@SHAPE_RULES.register(Op.SEND)
def _send(op: OpView) -> Shape:
    op.token(1)
    return _channel_context(op.shapes[0])


@SHAPE_RULES.register(Op.RECV)
def _recv(op: OpView) -> Shape:
    op.token(0)
    result = op.need_written()
    if not (result.is_tuple and len(result.tuple_shapes) == 3):
        raise op.fail(f"'recv' returns (data, u32[], token[]), but is written as {fmt(result)}")
    return _channel_context(result.tuple_shapes[0])


@SHAPE_RULES.register(Op.RECV_DONE)
def _recv_done(op: OpView) -> Shape:
    context = op.shapes[0]
    if not (context.is_tuple and context.tuple_shapes):
        raise op.fail(f"operand 0 of 'recv-done' must be the (data, u32[], token[]) context of a recv, but it is "
                      f"{fmt(context)}", operand=0)
    return Shape.tuple_of([context.tuple_shapes[0], Shape.token()])


@SHAPE_RULES.register(Op.SEND_DONE, Op.AFTER_ALL)
def _token(op: OpView) -> Shape:
    return Shape.token()


# --------------------------------------------------------------------------- values passed through


@SHAPE_RULES.register(ops_with(Trait.PASS_THROUGH))
def _pass_through(op: OpView) -> Shape:
    """copy, domain, opt-barrier, add-dependency: the value is operand 0 (a tuple too); any
    further operands (add-dependency's) are tokens."""
    for i in range(1, op.n):
        op.token(i)
    return op.shapes[0]
