"""dce: remove instructions whose values nobody uses, and computations nobody calls."""
from __future__ import annotations

from ..ir import Computation, Module
from ..opcodes import OPCODES
from .pass_manager import Pass, register


def has_side_effect(inst) -> bool:
    """Instructions that must stay even when their value is unused."""
    info = OPCODES.get(inst.opcode)
    if info is not None and info.side_effect:
        return True
    if inst.opcode == "custom-call" and inst.attrs.get("custom_call_has_side_effect"):
        return True
    return any(has_side_effect(i) for c in inst.called_computations() for i in c.instructions
               if inst.opcode in ("call", "while", "conditional"))


@register
class DeadCodeElimination(Pass):
    name = "dce"
    description = "Remove instructions with no users (except side effects and parameters) and unreachable computations."

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            changed |= remove_dead_instructions(comp)
        if module.entry is not None:
            changed |= module.remove_unreachable_computations()
        return changed


def remove_dead_instructions(comp: Computation) -> bool:
    changed = False
    for inst in reversed(list(comp.instructions)):
        if inst is comp.root or inst.users or inst.opcode == "parameter" or has_side_effect(inst):
            continue
        if any(inst in other.control_predecessors for other in comp.instructions):
            continue
        comp.remove(inst)
        changed = True
    return changed
