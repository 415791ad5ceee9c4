"""call-inliner: replace `call` instructions by the body of the computation they call."""
from __future__ import annotations

from ..ir import Computation, Instruction, Module, NameUniquer
from .pass_manager import Pass, register


@register
class CallInliner(Pass):
    name = "call-inliner"
    description = "Inline every call (composite calls included) into its caller; callees become unused."

    def run(self, module: Module) -> bool:
        names = NameUniquer.for_module(module)
        changed = False
        for comp in module.callees_first():
            for inst in list(comp.instructions):
                if inst.opcode == "call" and inst.parent is comp:
                    inline_call(inst, names)
                    changed = True
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed


def inline_call(call: Instruction, names: NameUniquer) -> None:
    caller: Computation = call.parent
    callee: Computation = call.attrs["to_apply"]
    mapping: dict[int, Instruction] = {}
    for inst in callee.instructions:
        if inst.opcode == "parameter":
            mapping[id(inst)] = call.operands[inst.attrs["parameter_number"]]
            continue
        copy = inst.clone([mapping[id(op)] for op in inst.operands], names.unique(inst.name))
        copy.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors if id(p) in mapping]
        caller.add(copy, before=call)
        mapping[id(inst)] = copy
    result = mapping[id(callee.root)]
    call.replace_all_uses_with(result)
    caller.remove(call)
