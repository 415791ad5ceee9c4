"""dce: remove instructions whose values nobody uses, and computations nobody calls."""
from __future__ import annotations

from ..ir import Module
from .base import Pass, register
from .rewrite import remove_dead_instructions


@register
class DeadCodeElimination(Pass):
    name = "dce"
    description = "Remove instructions with no users (except side effects and parameters) and unreachable computations."

    incremental = True

    def run(self, module: Module) -> bool:
        changed = self.each_computation(list(module.computations), remove_dead_instructions)
        if module.entry is not None:
            changed |= module.remove_unreachable_computations()
        return changed
