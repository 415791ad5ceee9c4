"""optimization-barrier-expander: drop opt-barrier instructions (their value is their operand).

A barrier only stops optimisations from moving work across it; a CPU compiler that
has no use for that removes them, as XLA's CPU pipeline does.
"""
from __future__ import annotations

from ..ir import Module
from ..opcodes import Op
from .base import Pass, register
from .rewrite import replace


@register
class OptimizationBarrierExpander(Pass):
    name = "optimization-barrier-expander"
    description = "Replace every opt-barrier by its operand."

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            for inst in list(comp.instructions):
                if inst.opcode == Op.OPT_BARRIER and inst.parent is comp:
                    replace(inst, inst.operands[0])
                    changed = True
        return changed
