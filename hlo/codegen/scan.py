"""`scan`: a loop over one dimension of its inputs, carrying values from step to step.

    c = inits
    for t in 0..N-1 (N-1..0 when is_reverse):
        (o..., c...) = to_apply(x[..., t, ...] for each input x, c...)
        out_j[..., t, ...] = o_j
    result: (out..., c...)   (one array when there are no carries and one output)

Buffers (the rule below, registered beside the emitter as `while` does in buffers.py):
the carries live in the scan's own result buffers; each input slice of a step gets a
buffer the step reads as its parameter; a new carry that is another carry's buffer goes
through a temporary, as a while loop's swapped state does. Buffers made before the loop
and read inside it stay live to its end.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..ir import Instruction
from ..opcodes import Op
from .buffers import BUFFER_RULES, leaves_of
from .emitters import EMITTERS
from .function_context import const64, major_to_minor
from .types import load_element, store_element


@dataclass
class ScanBuffers:
    slices: list          # buffer of each input's slice (the step's parameters 0..m-1)
    swaps: dict           # carry k -> temporary, when the new carry k is another carry's buffer


# scan instruction (of the module being lowered) -> its ScanBuffers
_SCANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _parts(inst: Instruction):
    """(inputs, inits, number of outputs)."""
    k = inst.attrs["num_carries"]
    m = len(inst.operands) - k
    shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    return inst.operands[:m], inst.operands[m:], len(shapes) - k


def _top(value) -> list:
    return list(value) if isinstance(value, tuple) else [value]


@BUFFER_RULES.register(Op.SCAN)
def _scan(assigner, inst: Instruction, _):
    inputs, _inits, n = _parts(inst)
    step = inst.attrs["to_apply"]
    value = assigner.new_value(inst.shape)
    carries = _top(value)[n:]
    params = sorted(step.parameters, key=lambda p: p.attrs["parameter_number"])
    slices = [assigner.new_value(p.shape) for p in params[:len(inputs)]]
    start = assigner.pos
    used: set = set()
    assigner.loops.append(used)
    outer_start, assigner.loop_start = assigner.loop_start, start
    assigner.visit(step, slices + carries)
    assigner.pos += 1
    root = assigner.a.values[id(step.root)]
    assigner.use(root)
    carry_leaves = [leaf for c in carries for leaf in leaves_of(c)]
    new_carries = [leaf for c in _top(root)[n:] for leaf in leaves_of(c)]
    swaps = {k: assigner.new_value(leaf.shape) for k, leaf in enumerate(new_carries)
             if leaf in carry_leaves and carry_leaves.index(leaf) != k}
    assigner.pos += 1
    assigner.loops.pop()
    assigner.loop_start = outer_start
    for buf in used | set(carry_leaves) | set(leaves_of(tuple(slices))) | set(swaps.values()):
        if buf.start <= start:
            buf.end = max(buf.end, assigner.pos)
        for outer in assigner.loops:
            outer.add(buf)
    _SCANS[inst] = ScanBuffers(slices, swaps)
    return value


@EMITTERS.register(Op.SCAN)
def emit_scan(low, inst: Instruction) -> None:
    b, ctx, elem = low.b, low.ctx, low.elem
    inputs, inits, n = _parts(inst)
    dim = inst.attrs["dimensions"][0]
    step = inst.attrs["to_apply"]
    plan = _SCANS[inst]
    value = low.a.values[id(inst)]
    outputs, carries = _top(value)[:n], _top(value)[n:]
    carry_leaves = [leaf for c in carries for leaf in leaves_of(c)]
    for dst, init in zip(carries, inits):
        for d, s in zip(leaves_of(dst), leaves_of(low.a.values[id(init)])):
            low.copy(d, s)
    length = inputs[0].shape.dims[dim] if inputs else 0
    with ctx.loop(length, f"{inst.name}.step") as t:
        position = b.sub(const64(length - 1), t) if inst.attrs.get("is_reverse") else t
        for x, buf in zip(inputs, plan.slices):
            def read(index, x=x):
                return elem.value(x, tuple(index[:dim]) + (position,) + tuple(index[dim:]))
            low.store_loop(buf.shape, low.pointer(buf), read)
        low.emit_computation(step)
        root = _top(low.a.values[id(step.root)])
        for out, o in zip(outputs, root[:n]):
            _store_step(low, out, o, dim, position)
        new_carries = [leaf for c in root[n:] for leaf in leaves_of(c)]
        for k, temp in plan.swaps.items():
            low.copy(temp, new_carries[k])
        for k, (dst, src) in enumerate(zip(carry_leaves, new_carries)):
            low.copy(dst, plan.swaps.get(k, src))


def _store_step(low, out, o, dim: int, position) -> None:
    """out[..., position, ...] = o (o's buffer has out's shape without dimension dim)."""
    b = low.b
    source = low.pointer(o)
    target = low.pointer(out)
    with low.ctx.loop_nest(o.shape.dims, major_to_minor(o.shape), roll_outer=True) as index:
        v = load_element(b, source, o.shape, index)
        store_element(b, v, target, out.shape, tuple(index[:dim]) + (position,) + tuple(index[dim:]))
