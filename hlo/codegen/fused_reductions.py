"""Reductions inside a fusion, computed into its scratch by accumulating in the operand's order.

Element by element, a fused reduce (or reduce-window) computes each output element by a loop
over the elements it reduces. When those run along a dimension that is not the operand's minor
one (a layer norm's statistics over the features of a transposed activation; the reduce-windows
of 32 that XLA's tree reduction puts before a reduce of a long dimension), the loop reads one
element per cache line and stays scalar: 3 ns per element in the MLP-Mixer's layer norms.

Accumulating instead walks the operand in its physical order (minor dimension innermost) and
combines each element into its output element, held in the fusion's scratch with the operand's
minor dimension minor too: the inner loop is contiguous in both and vectorises, the combiner
never reassociated. Each output element still combines its elements in the order the element
by element loop does (the reduced positions in the operand's physical order; a window's positions
in increasing order), so the sums are the same. The rest of the fusion then reads the result
from scratch (fused_buffers.py).

Accumulated: a single-result reduce that keeps the dimension its operand's elements are
contiguous along (memory_order); a single-result reduce-window whose disjoint windows run along
one dimension other than that one (stride = size, no dilation or reversal, padding >= 0), every
other window dimension 1.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Instruction
from ..opcodes import Op
from ..shapes import Layout, Shape
from .function_context import const64
from .types import load_element, store_element


def accumulable(inst: Instruction) -> bool:
    if inst.shape.is_tuple or len(inst.operands) != 2 or not inst.shape.rank:
        return False
    operand = inst.operands[0]
    if operand.shape.rank < 2:
        return False
    minor = operand_order(inst)[0]
    if inst.opcode == Op.REDUCE:
        reduced = set(inst.attrs["dimensions"])
        in_memory = [d for d in operand_order(inst) if d in reduced]
        nominal = [d for d in operand.shape.minor_to_major() if d in reduced]
        return bool(reduced) and minor not in reduced and in_memory == nominal   # the same order of sums
    if inst.opcode == Op.REDUCE_WINDOW:
        dim = _windowed_dim(inst)
        return dim is not None and dim != minor
    return False


def _windowed_dim(inst: Instruction):
    """The one dimension a reduce-window cuts into disjoint windows, or None when it is not of that form."""
    window = inst.attrs.get("window")
    if window is None or len(window.dims) != inst.operands[0].shape.rank:
        return None
    found = None
    for d, w in enumerate(window.dims):
        if w.window_dilation != 1 or w.base_dilation != 1 or w.window_reversal:
            return None
        if w.size == 1 and w.stride == 1 and w.padding_low == 0 and w.padding_high == 0:
            continue
        if found is not None or w.stride != w.size or w.padding_low < 0 or w.padding_high < 0:
            return None
        found = d
    return found


def operand_order(inst: Instruction) -> list[int]:
    """The operand's dimensions, minor first, in the order its elements lie in memory where that
    can be traced (a fused value has no memory of its own: its layout is nominal), else its layout's."""
    return memory_order(inst.operands[0]) or list(inst.operands[0].shape.minor_to_major())


def memory_order(inst: Instruction, known: Optional[dict] = None):
    """inst's dimensions minor first as the arrays it reads lie in memory: through elementwise ops
    (their first operand that reads memory), converts, copies, transposes and row-major reshapes of
    row-major values, down to a fusion parameter (its layout is a real buffer's). None: unknown.
    known: the answers so far (each instruction is looked at once: fused graphs share operands)."""
    known = {} if known is None else known
    if id(inst) not in known:
        known[id(inst)] = None   # (a fused graph has no cycles; this only guards the recursion)
        known[id(inst)] = _memory_order(inst, known)
    return known[id(inst)]


def _memory_order(inst: Instruction, known: dict):
    op = inst.opcode
    if op == Op.PARAMETER:
        return list(inst.shape.minor_to_major())
    if op == Op.TRANSPOSE:
        below = memory_order(inst.operands[0], known)
        perm = list(inst.attrs["dimensions"])
        return [perm.index(d) for d in below] if below is not None else None
    if op == Op.RESHAPE:
        below = memory_order(inst.operands[0], known)
        rank = inst.operands[0].shape.rank
        return list(range(inst.shape.rank - 1, -1, -1)) if below == list(range(rank - 1, -1, -1)) else None
    if op == Op.COPY or (inst.info.is_elementwise and inst.operands):
        for operand in inst.operands:
            if operand.shape.rank == inst.shape.rank:   # (a broadcast or constant reads no array in order: None)
                below = memory_order(operand, known)
                if below is not None:
                    return below
    return None


def value_shape(inst: Instruction) -> Shape:
    """The scratch buffer's shape: the result with the operand's dimension order (kept dimensions,
    renumbered, for a reduce)."""
    order = operand_order(inst)
    if inst.opcode == Op.REDUCE:
        kept = [d for d in range(len(order)) if d not in set(inst.attrs["dimensions"])]
        order = [kept.index(d) for d in order if d in kept]
    return inst.shape.with_layout(Layout(tuple(order)))


def emit(low, inst: Instruction, out) -> None:
    """out (a Buffer of value_shape(inst)) = the reduction, by accumulation."""
    b, elem = low.b, low.elem
    operand, init = inst.operands
    pointer = low.pointer(out)
    low.store_loop(out.shape, pointer, lambda index: elem.value(init, ()))
    dims = list(operand.shape.dims)
    target = _reduce_target if inst.opcode == Op.REDUCE else _window_target
    place = target(inst, dims)
    with low.ctx.loop_nest(dims, list(reversed(operand_order(inst))), roll_outer=True) as index:
        out_index = place(b, index)
        current = load_element(b, pointer, out.shape, out_index)
        combined = elem.call_scalar(inst.attrs["to_apply"], [current, elem.value(operand, index)])[0]
        store_element(b, combined, pointer, out.shape, out_index)


def _reduce_target(inst: Instruction, dims: list):
    kept = [d for d in range(len(dims)) if d not in set(inst.attrs["dimensions"])]
    return lambda b, index: tuple(index[d] for d in kept)


def _window_target(inst: Instruction, dims: list):
    """Operand position -> its window's output position. The loop over the windowed dimension is
    cut to the positions some window covers (padding_high may leave a remainder out)."""
    d = _windowed_dim(inst)
    w = inst.attrs["window"].dims[d]
    dims[d] = min(dims[d], inst.shape.dims[d] * w.stride - w.padding_low)

    def place(b, index):
        out_index = list(index)
        out_index[d] = b.udiv(b.add(index[d], const64(w.padding_low)), const64(w.stride))
        return tuple(out_index)
    return place
