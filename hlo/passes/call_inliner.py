"""call-inliner: replace `call` instructions by the body of the computation they call."""
from __future__ import annotations

from ..ir import Module, NameUniquer
from ..opcodes import Op
from .base import Pass, register
from .rewrite import inline_call


@register
class CallInliner(Pass):
    name = "call-inliner"
    description = "Inline every call (composite calls included) into its caller; callees become unused."

    def run(self, module: Module) -> bool:
        names = NameUniquer.for_module(module)
        changed = False
        for comp in module.callees_first():
            for inst in list(comp.instructions):
                if inst.opcode == Op.CALL and inst.parent is comp:
                    inline_call(inst, names)
                    changed = True
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed
