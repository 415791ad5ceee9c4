"""Ops that compute nothing of their own: tokens, barriers, annotations, asynchronous wrappers.

Compiled code runs its instructions one at a time, in order, so:
* tokens (after-all) have no storage and no code; add-dependency, opt-barrier, domain
  and the annotation custom calls (sharding, memory-space moves) copy their operand;
* copy-start copies its operand into the destination leaf, copy-done hands it on;
* async-start runs its computation on the spot (like call), async-update and
  async-done hand on its value and its result;
* get-dimension-size of a static dimension is a constant.
"""
from __future__ import annotations

from ..diagnostics import error
from ..ir import Instruction
from ..opcodes import Op
from .buffers import BUFFER_RULES, leaves_of
from .elemental import ELEMENT_GENERATORS
from .emitters import EMITTERS
from .special_kernels import CUSTOM_CALLS
from .types import constant_of

# Custom-call targets that only annotate their operand (shardings, shard_map regions,
# host offloading): on one device their value is the operand's.
IDENTITY_TARGETS = (
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
    "xla.sdy.FuncResultSharding", "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
    "xla.sdy.ShardingConstraint", "xla.sdy.ShardingGroup", "xla.sdy.PropagationBarrier",
    "MoveToHost", "MoveToDevice", "annotate_device_placement",
)


def copy_value(low, dst, src) -> None:
    """Copy every array leaf of src into the matching leaf of dst (tokens have no storage)."""
    for d, s in zip(leaves_of(dst), leaves_of(src)):
        if d.shape.is_array:
            low.copy(d, s)


@EMITTERS.register(Op.AFTER_ALL)
def emit_after_all(low, inst: Instruction) -> None:
    """A token: nothing to store, and compiled code runs its side effects in order anyway."""


@EMITTERS.register(Op.ADD_DEPENDENCY, Op.OPT_BARRIER, Op.DOMAIN)
def emit_operand_copy(low, inst: Instruction) -> None:
    copy_value(low, low.a.values[id(inst)], low.a.values[id(inst.operands[0])])


def emit_identity_custom_call(low, inst: Instruction) -> None:
    operand = inst.operands[0] if len(inst.operands) == 1 else None
    if operand is None or not operand.shape.compatible(inst.shape):
        raise error(f"custom-call target '{inst.attrs.get('custom_call_target')}' on one device passes its "
                    f"one operand through unchanged; %{inst.name} has a different result shape", inst.loc)
    copy_value(low, low.a.values[id(inst)], low.a.values[id(operand)])


for _target in IDENTITY_TARGETS:
    CUSTOM_CALLS[_target] = emit_identity_custom_call


@ELEMENT_GENERATORS.register(Op.GET_DIMENSION_SIZE)
def get_dimension_size(elem, inst, index):
    operand = inst.operands[0]
    dim = inst.attrs["dimensions"][0]
    if operand.shape.dynamic and operand.shape.dynamic[dim]:
        raise error(f"the cpu backend compiles static shapes only: dimension {dim} of %{operand.name} is "
                    f"dynamic (%{inst.name})", inst.loc)
    return constant_of(inst.shape.element_type, operand.shape.dims[dim])


# --------------------------------------------------------------------------- asynchronous wrappers

@EMITTERS.register(Op.COPY_START)
def emit_copy_start(low, inst: Instruction) -> None:
    """(destination, source, context): the destination gets the copy, done at once."""
    destination = low.a.values[id(inst)]
    destination = destination[0] if isinstance(destination, tuple) else destination
    copy_value(low, destination, low.a.values[id(inst.operands[0])])


@BUFFER_RULES.register(Op.COPY_DONE, Op.ASYNC_UPDATE, Op.ASYNC_DONE, aliases=True)
def _async_part(assigner, inst: Instruction, _):
    """copy-done: the destination; async-update: the same value; async-done: the result."""
    value = assigner.a.values[id(inst.operands[0])]
    if inst.opcode == Op.ASYNC_UPDATE or not isinstance(value, tuple):
        return value
    return value[1] if inst.opcode == Op.ASYNC_DONE else value[0]


@BUFFER_RULES.register(Op.ASYNC_START, aliases=True)
def _async_start(assigner, inst: Instruction, _):
    """(operands, result, context...): the result is the computation's root value when the
    layouts agree (like call), else a buffer of its own that the emitter copies into."""
    callee = inst.attrs["calls"]
    operands = [assigner.a.values[id(op)] for op in inst.operands]
    assigner.visit(callee, operands)
    result = assigner.a.values[id(callee.root)]
    assigner.use(result)
    shape = inst.shape
    if not shape.is_tuple or len(shape.tuple_shapes) < 2:
        return result if _same_layouts(result, shape) else assigner.new_value(shape)
    wanted = shape.tuple_shapes[1]
    if not _same_layouts(result, wanted):
        result = assigner.new_value(wanted)
    context = tuple(assigner.new_value(s) for s in shape.tuple_shapes[2:])
    return (tuple(operands), result) + context


def _same_layouts(value, shape) -> bool:
    leaves = leaves_of(value)
    shapes = [s for _, s in shape.leaves()]
    return len(leaves) == len(shapes) and all(
        b.shape.minor_to_major() == s.minor_to_major() and b.shape.dims == s.dims for b, s in zip(leaves, shapes))


@EMITTERS.register(Op.ASYNC_START)
def emit_async_start(low, inst: Instruction) -> None:
    """Run the wrapped computation now; its result becomes the start's result part."""
    callee = inst.attrs["calls"]
    low.emit_computation(callee)
    value = low.a.values[id(inst)]
    shape = inst.shape
    result = value[1] if shape.is_tuple and len(shape.tuple_shapes) >= 2 else value
    copy_value(low, result, low.a.values[id(callee.root)])


@EMITTERS.register(Op.COPY_DONE, Op.ASYNC_UPDATE, Op.ASYNC_DONE)
def emit_async_part(low, inst: Instruction) -> None:
    """Its value is part of the start's (buffer rule above): nothing to do."""
