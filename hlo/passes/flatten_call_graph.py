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
        for callee, site in _sites_in(comp):
            sites.setdefault(id(callee), []).append(site)
    return sites


def _sites_in(comp: Computation):
    """(callee, (instruction, attribute, index)) for each control-flow call site in `comp`, in order."""
    for inst in comp.instructions:
        for attr in CONTROL_FLOW_ATTRS.get(inst.opcode, ()):
            value = inst.attrs.get(attr)
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                for i, callee in enumerate(value):
                    yield callee, (inst, attr, i)
            else:
                yield value, (inst, attr, None)


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
        graph = CallSites(module)
        changed = False
        # Callers before callees: clones made for a caller add call sites its callees see later.
        for comp in reversed(module.callees_first()):
            if comp is module.entry:
                continue
            changed |= flatten_node(module, comp, names, graph)
        return changed


class CallSites:
    """The control-flow call sites of every callee, kept up to date as clones add callers
    (found once, not by a sweep of the module per computation), and the embedded callees
    (clones only add embedded uses of computations that had one already)."""

    def __init__(self, module: Module):
        self.module = module
        self.by_callee: dict[int, list[tuple[Computation, tuple]]] = {}
        for comp in module.computations:
            self.add_caller(comp)
        self.embedded = embedded_callees(module)

    def add_caller(self, comp: Computation) -> None:
        for callee, site in _sites_in(comp):
            self.by_callee.setdefault(id(callee), []).append((comp, site))

    def sites(self, callee: Computation) -> list[tuple[Instruction, str, Optional[int]]]:
        """The sites calling `callee`, in module order (as a sweep of the module would list them)."""
        entries = self.by_callee.get(id(callee), [])
        if len(entries) < 2:
            return [site for _, site in entries]
        position = {id(c): i for i, c in enumerate(self.module.computations)}
        entries = [(caller, site) for caller, site in entries if id(caller) in position]
        entries.sort(key=lambda entry: position[id(entry[0])])  # stable: in order within a caller
        return [site for _, site in entries]


def flatten_node(module: Module, comp: Computation, names: NameUniquer, graph: CallSites) -> bool:
    sites = [site for site in graph.sites(comp) if _calls(site, comp)]
    keep_first = id(comp) not in graph.embedded
    last = comp
    for n, (inst, attr, index) in enumerate(sites):
        if n == 0 and keep_first:
            continue
        last, _ = clone_computation(comp, names, module, after=last)
        graph.add_caller(last)
        set_callee(inst, attr, index, last)
    return last is not comp


def _calls(site: tuple, callee: Computation) -> bool:
    inst, attr, index = site
    value = inst.attrs.get(attr)
    return (value[index] if index is not None else value) is callee
