"""The partitioning context of spmd-partitioner: values already partitioned, the emitter,
the rules registry (RULES, filled by spmd_rules.py) and the gather-compute-slice fallback."""
from __future__ import annotations

from typing import Optional

from ..ir import Instruction, Module, NameUniquer
from ..opcodes import Op
from ..registry import OpRegistry
from ..sharding import HloSharding
from ..shapes import Shape, format_shape
from ..text.printer import format_instruction
from . import spmd_shardings as SS
from .spmd_reshard import L, P, Emitter, ModuleText, block_sizes, replicate, reshard

RULES = OpRegistry("spmd partitioning rule")


class TP:
    """A partitioned tuple: one P (or TP) per element."""

    def __init__(self, elements):
        self.elements = list(elements)


class Context:
    def __init__(self, module: Module, n: int):
        self.module = module
        self.n = n
        # the per-device entry is new: its instructions keep their names; other computations are copied
        taken = [c.name for c in module.computations]
        taken += [i.name for c in module.computations if c is not module.entry for i in c.instructions]
        self.names = NameUniquer(taken)
        self.text = ModuleText(self.names)
        self.e = Emitter(self.names, n, self.text)
        self.env: dict[int, object] = {}
        self.fallbacks: list[str] = []

    # values
    def value(self, inst: Instruction):
        return self.env[id(inst)]

    def operand(self, inst: Instruction, i: int, sharding: Optional[HloSharding] = None) -> P:
        v = self.env[id(inst.operands[i])]
        if sharding is None:
            return v
        return reshard(self.e, v, sharding)

    def target(self, inst: Instruction) -> Optional[HloSharding]:
        return SS.read(inst)

    def local_shape(self, gshape: Shape, s: Optional[HloSharding]) -> Shape:
        return Shape.array(gshape.element_type, block_sizes(gshape.dims, SS.tiles(s, gshape.rank)))

    def clone(self, inst: Instruction, operands, shape: Shape, **attrs) -> L:
        """Emit `inst` over other operands (L values) with another result shape."""
        placeholders = [Instruction(o.name, Op.PARAMETER, o.shape) for o in operands]
        copy = inst.clone(placeholders, name="x")
        copy.shape = shape
        copy.sharding = None
        copy.attrs.update(attrs)
        text = format_instruction(copy)
        head = f"%x = {format_shape(shape)} "
        assert text.startswith(head), text
        return self.e.emit(inst.name, shape, text[len(head):])

    def fallback(self, inst: Instruction, why: str = "") -> object:
        """Gather every operand whole, compute `inst` whole, leave the result replicated."""
        self.fallbacks.append(f"{inst.name} ({inst.opcode}){': ' + why if why else ''}")
        ops = []
        for i, op in enumerate(inst.operands):
            v = self.env[id(op)]
            ops.append(self.whole(v, op.shape))
        out = self.clone(inst, ops, inst.shape)
        return self.wrap_whole(out, inst.shape)

    def whole(self, v, shape: Shape) -> L:
        if isinstance(v, TP):
            parts = [self.whole(x, s) for x, s in zip(v.elements, shape.tuple_shapes)]
            return self.e.emit("tuple", shape, f"tuple({', '.join(map(str, parts))})")
        if v.sharding is not None and v.sharding.is_manual:
            raise ValueError("a manual (shard_map) value used outside its region")
        return replicate(self.e, v)

    def wrap_whole(self, out: L, shape: Shape):
        if not shape.is_tuple:
            return P(out, HloSharding.replicated(), shape)
        parts = []
        for i, s in enumerate(shape.tuple_shapes):
            g = self.e.emit("get-tuple-element", s, f"get-tuple-element({out}), index={i}")
            parts.append(self.wrap_whole(g, s))
        return TP(parts)

    def to_local(self, v, s: Optional[HloSharding], shape: Shape):
        """Reshard a value (or tuple) to `s` and give its local value."""
        if shape.is_tuple:
            parts = [self.to_local(x, SS.element(s, shape, i), sub)
                     for i, (x, sub) in enumerate(zip(v.elements, shape.tuple_shapes))]
            return self.e.emit("tuple", Shape.tuple_of([p.shape for p in parts]),
                               f"tuple({', '.join(map(str, parts))})")
        if v.sharding is not None and v.sharding.is_manual:
            return v.local
        return reshard(self.e, v, s if s is not None else HloSharding.replicated()).local
