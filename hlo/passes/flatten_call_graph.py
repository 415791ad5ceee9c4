"""flatten-call-graph: give every control-flow callee exactly one call site.

As XLA's FlattenCallGraph: a computation reached from several control-flow call
sites (the `to_apply` of a call, the condition/body of a while, a branch of a
conditional) is cloned, once per extra site, together with the control-flow
callees it reaches in turn. Computations applied element by element or to
reductions (`to_apply` of reduce/map/sort/scatter, fusion bodies, ...) are
"embedded" and may stay shared; asynchronous wrapped computations are left alone
because async-start/-update/-done must share theirs.

When a computation is called both from control flow and from an embedded
context, every control-flow site gets its own clone.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Computation, Instruction, Module, NameUniquer
from ..opcodes import Trait, ops_with
from .base import Pass, register
from .rewrite import clone_computation

# The attributes through which an opcode calls its control-flow callees: the computation
# attributes of the ops whose callees run as ordinary code (call, while, conditional).
CONTROL_FLOW_ATTRS = {op: tuple(attr.name for attr in op.info.attrs if attr.is_computation)
                      for op in sorted(ops_with(Trait.RUNS_COMPUTATIONS_AS_CODE))}


def control_flow_sites(module: Module) -> dict[int, list[tuple[Instruction, str, Optional[int]]]]:
    """id(callee) -> its control-flow call sites (instruction, attribute, index in a list attribute)."""
    sites: dict[int, list] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            for attr in CONTROL_FLOW_ATTRS.get(inst.opcode, ()):
                value = inst.attrs.get(attr)
                if value is None:
                    continue
                if isinstance(value, (list, tuple)):
                    for i, callee in enumerate(value):
                        sites.setdefault(id(callee), []).append((inst, attr, i))
                else:
                    sites.setdefault(id(value), []).append((inst, attr, None))
    return sites


def embedded_callees(module: Module) -> set[int]:
    """ids of computations called from some non-control-flow context."""
    out: set[int] = set()
    for inst in module.instructions():
        control = CONTROL_FLOW_ATTRS.get(inst.opcode, ())
        for name, value in inst.attrs.items():
            if name in control or value is None:
                continue
            for callee in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(callee, Computation):
                    out.add(id(callee))
    return out


def set_callee(inst: Instruction, attr: str, index: Optional[int], callee: Computation) -> None:
    if index is None:
        inst.attrs[attr] = callee
    else:
        value = list(inst.attrs[attr])
        value[index] = callee
        inst.attrs[attr] = type(inst.attrs[attr])(value) if isinstance(inst.attrs[attr], tuple) else value


@register
class FlattenCallGraph(Pass):
    name = "flatten-call-graph"
    description = "Clone computations called from several control-flow sites so each has exactly one caller."

    def run(self, module: Module) -> bool:
        names = NameUniquer.for_module(module)
        changed = False
        # Callers before callees: clones made for a caller add call sites its callees see later.
        for comp in reversed(module.callees_first()):
            if comp is module.entry:
                continue
            changed |= flatten_node(module, comp, names)
        return changed


def flatten_node(module: Module, comp: Computation, names: NameUniquer) -> bool:
    sites = control_flow_sites(module).get(id(comp), [])
    keep_first = id(comp) not in embedded_callees(module)
    last = comp
    for n, (inst, attr, index) in enumerate(sites):
        if n == 0 and keep_first:
            continue
        last, _ = clone_computation(comp, names, module, after=last)
        set_callee(inst, attr, index, last)
    return last is not comp
