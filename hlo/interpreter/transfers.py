"""The transfers family: infeed, outfeed, send, recv and their done forms, after-all.

Host transfers go through the evaluator's queues: `infeed` and host `recv` take values
from `ev.infeed`, `outfeed` and host `send` append to `ev.outfeed`. A device-to-device
send/recv pair meets on `ev.channels[channel_id]`. Tokens carry no data (TOKEN).
(opt-barrier, add-dependency and domain return their operand: data_movement's
pass-through handler runs them.)
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import error
from ..ir import Instruction
from ..opcodes import Op
from ..runtime.values_io import TOKEN, to_storage
from ..shapes import Shape
from .handlers import HANDLERS
from .values import Value, describe_value, value_matches, zeros_of


def take_infeed(ev, inst: Instruction, shape: Shape) -> Value:
    """The next infeed value(s) for `shape` (one array per leaf), checked against it."""
    if shape.is_tuple:
        return tuple(take_infeed(ev, inst, s) for s in shape.tuple_shapes)
    if shape.is_token:
        return TOKEN
    if not ev.infeed:
        raise error(f"{inst.opcode} %{inst.name}: the infeed queue is empty (it needs a value of "
                    f"shape {shape})", inst.loc)
    value = to_storage(ev.infeed.popleft(), shape)
    if not value_matches(value, shape):
        raise error(f"{inst.opcode} %{inst.name}: the next infeed value is {describe_value(value)}, "
                    f"expected {shape.without_layout()}", inst.loc)
    return value


@HANDLERS.register(Op.AFTER_ALL)
def run_after_all(ev, inst, ops):
    return TOKEN


@HANDLERS.register(Op.INFEED)
def run_infeed(ev, inst, ops):
    data_shape = inst.shape.tuple_shapes[0]
    return (take_infeed(ev, inst, data_shape), TOKEN)


@HANDLERS.register(Op.OUTFEED)
def run_outfeed(ev, inst, ops):
    ev.outfeed.append(ops[0])
    return TOKEN


@HANDLERS.register(Op.SEND)
def run_send(ev, inst, ops):
    if inst.attrs.get("is_host_transfer"):
        ev.outfeed.append(ops[0])
    else:
        ev.channels[inst.attrs.get("channel_id")].append(ops[0])
    return (ops[0], np.zeros((), np.uint32), TOKEN)


@HANDLERS.register(Op.SEND_DONE)
def run_send_done(ev, inst, ops):
    return TOKEN


@HANDLERS.register(Op.RECV)
def run_recv(ev, inst, ops):
    return zeros_of(inst.shape)


@HANDLERS.register(Op.RECV_DONE)
def run_recv_done(ev, inst, ops):
    data_shape = inst.shape.tuple_shapes[0]
    if inst.attrs.get("is_host_transfer"):
        return (take_infeed(ev, inst, data_shape), TOKEN)
    queue = ev.channels[inst.attrs.get("channel_id")]
    if not queue:
        raise error(f"recv-done %{inst.name}: nothing was sent on channel "
                    f"{inst.attrs.get('channel_id')} before it (the program would deadlock)", inst.loc)
    return (queue.popleft(), TOKEN)
