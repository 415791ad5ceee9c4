"""tuple-simplifier: fold get-tuple-element of a tuple, and tuples rebuilt from one tuple."""
from __future__ import annotations

from ..ir import Computation, Module
from .pass_manager import Pass, register


@register
class TupleSimplifier(Pass):
    name = "tuple-simplifier"
    description = "gte(tuple(a, b), 1) -> b; tuple(gte(t, 0), ..., gte(t, n-1)) -> t."

    def run(self, module: Module) -> bool:
        return any([simplify_tuples(comp) for comp in module.computations])


def simplify_tuples(comp: Computation) -> bool:
    changed = False
    for inst in list(comp.instructions):
        if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "tuple":
            element = inst.operands[0].operands[inst.attrs["index"]]
            if element.shape.compatible(inst.shape):
                inst.replace_all_uses_with(element)
                changed = True
        elif inst.opcode == "tuple" and _rebuilds_one_tuple(inst):
            source = inst.operands[0].operands[0]
            if source.shape.compatible(inst.shape):
                inst.replace_all_uses_with(source)
                changed = True
    return changed


def _rebuilds_one_tuple(inst) -> bool:
    ops = inst.operands
    if not ops or any(op.opcode != "get-tuple-element" for op in ops):
        return False
    source = ops[0].operands[0]
    return (source.shape.is_tuple and len(source.shape.tuple_shapes) == len(ops)
            and all(op.operands[0] is source and op.attrs["index"] == i for i, op in enumerate(ops)))
