"""Fused instructions that are not computed element by element get a buffer of their own.

A fusion computes its root element by element, recursing into the fused producers. A
few ops have no such form: a scatter updates its operand at places its indices say, an
fft needs whole rows. They may still sit inside a fusion, e.g. when the fusion pass
merges XLA's `wrapped_scatter` fusion into the consumer of its value. Before the fusion's
loops run, each of them (in post order) is computed by its own emitter into a piece of
the fusion's scratch memory, and the loops read it there like any materialised value.
A scatter at the root is computed straight into the fusion's buffers instead
(kernels.emit_fusion). Reductions that read their operand across its minor dimension are
materialised the same way when they are not the root (fused_reductions.py: accumulated in the
operand's order, which vectorises).

Such ops register their emitter with `writes_into=True` (emit(low, inst, value=...,
scratch=...) writes inst's value into the given buffers) and, when they need working
memory inside a fusion, `fused_scratch_bytes=fn(inst)`.
"""
from __future__ import annotations

from ..ir import Computation, Instruction
from ..opcodes import Op
from . import contraction, fused_reductions
from .buffers import Buffer
from .elemental import ELEMENT_GENERATORS
from .emitters import EMITTERS
from .function_context import const64
from .types import I8, load_element

ALIGN = 64


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _computed_whole(inst: Instruction) -> bool:
    return inst.opcode not in ELEMENT_GENERATORS and bool(EMITTERS.details(inst.opcode).get("writes_into"))


def materialized(body: Computation) -> list[Instruction]:
    """The fused instructions computed whole into scratch, in post order (a scatter root
    excepted: it is written straight into the fusion's output)."""
    root = body.root
    return [i for i in body.post_order()
            if (_computed_whole(i) and not (i is root and i.opcode == Op.SCATTER))
            or (i is not root and fused_reductions.accumulable(i))]


def _own_scratch(inst: Instruction) -> int:
    scratch = EMITTERS.details(inst.opcode).get("fused_scratch_bytes")
    return _aligned(scratch(inst)) if scratch is not None else 0


def _value_bytes(inst: Instruction) -> int:
    return sum(_aligned(leaf.byte_size()) for _, leaf in inst.shape.leaves())


def fusion_scratch_bytes(fusion: Instruction) -> int:
    """The fusion's scratch: its contractions' (contraction.py) first, then one piece per
    materialised instruction (its value, then its own working memory)."""
    total = _aligned(contraction.scratch_bytes(fusion))
    for inst in materialized(fusion.attrs["calls"]):
        total += _value_bytes(inst) + _own_scratch(inst)
    return total


def materialize_fused(low, fusion: Instruction) -> None:
    """Compute the fusion's materialised instructions into its scratch and make the
    element-by-element code read them from there (after low.elem.bind_fusion)."""
    insts = materialized(fusion.attrs["calls"])
    if not insts:
        return
    scratch = low.a.scratch[id(fusion)]
    base = low.pointer(scratch)
    offset = _aligned(contraction.scratch_bytes(fusion))
    for inst in insts:
        if fused_reductions.accumulable(inst) and not _computed_whole(inst):
            value = Buffer(fused_reductions.value_shape(inst), offset=scratch.offset + offset)
            offset += _aligned(value.shape.byte_size())
            with low.ctx.scope():
                fused_reductions.emit(low, inst, value)
            _bind(low, inst, value)
            continue
        leaves = []
        for _, shape in inst.shape.leaves():
            leaves.append(Buffer(shape, offset=scratch.offset + offset))
            offset += _aligned(shape.byte_size())
        value = tuple(leaves) if inst.shape.is_tuple else leaves[0]
        own = low.b.gep(base, [const64(offset)], source_etype=I8)
        offset += _own_scratch(inst)
        with low.ctx.scope():
            EMITTERS[inst.opcode](low, inst, value=value, scratch=own)
        _bind(low, inst, value)


def _bind(low, inst: Instruction, value) -> None:
    def reader(buf: Buffer):
        pointer = low.pointer(buf)
        return lambda index: load_element(low.b, pointer, buf.shape, index)

    if isinstance(value, Buffer):
        low.elem.bindings[id(inst)] = reader(value)
        return
    for user in inst.users:   # a tuple-valued op (variadic scatter) is read through get-tuple-element
        if user.opcode == Op.GET_TUPLE_ELEMENT:
            low.elem.bindings[id(user)] = reader(value[user.attrs["index"]])
