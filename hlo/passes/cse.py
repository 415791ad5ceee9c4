"""cse: merge instructions that compute the same value from the same operands."""
from __future__ import annotations

from ..ir import Computation, Instruction, Module
from ..literal import Literal
from .dce import has_side_effect
from .pass_manager import Pass, register


@register
class CommonSubexpressionElimination(Pass):
    name = "cse"
    description = "Replace an instruction by an earlier identical one (same opcode, shape, operands, attributes)."

    def run(self, module: Module) -> bool:
        return any([merge_duplicates(comp) for comp in module.computations])


def merge_duplicates(comp: Computation) -> bool:
    changed = False
    seen: dict[tuple, Instruction] = {}
    for inst in list(comp.instructions):
        if inst.opcode == "parameter" or has_side_effect(inst) or inst.opcode.startswith("rng"):
            continue
        key = _key(inst)
        if key is None:
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = inst
            continue
        inst.replace_all_uses_with(earlier)
        if not inst.users and inst is not comp.root:
            comp.remove(inst)
        changed = True
    return changed


def _key(inst: Instruction):
    try:
        attrs = tuple(sorted((k, _hashable(v)) for k, v in inst.attrs.items()))
        key = (inst.opcode, inst.shape, tuple(id(op) for op in inst.operands), attrs)
        hash(key)
        return key
    except TypeError:  # an attribute value we cannot compare safely: leave it alone
        return None


def _hashable(value):
    if isinstance(value, Literal):
        if value.elided:
            raise TypeError("elided constants are never equal")
        if value.is_tuple:
            return tuple(_hashable(e) for e in value.elements)
        return (str(value.shape), value.array.dtype.str, value.array.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if hasattr(value, "instructions"):  # a Computation: equal only to itself
        return ("computation", id(value))
    return value
