"""Building blocks passes share to change a module: new instructions and constants,
replacements, dead-code removal, tuple folding, cloning and inlining computations.

A pass creates instructions with `Rewriter(module)`, which hands out XLA-style
unique names (`add.3`) and inserts new instructions before the one they replace,
so computations stay in a valid (operands-first) order. (Facts that change
nothing, such as side effects, are in analysis.py; while-loop surgery in
while_loops.py.)
"""
from __future__ import annotations

import re
from typing import Callable, Optional

import numpy as np

from ..analysis.effects import has_side_effect, is_control_predecessor
from ..ir import Computation, Instruction, Module, NameUniquer
from ..literal import Literal
from ..opcodes import Op
from ..shapes import Shape
from .analysis import reachable_computations


class Rewriter:
    def __init__(self, module: Module):
        self.module = module
        self._names: Optional[NameUniquer] = None

    @property
    def names(self) -> NameUniquer:
        """The module's names (gathered on first use: most runs of a pass create nothing)."""
        if self._names is None:
            self._names = NameUniquer.for_module(self.module)
        return self._names

    def add(self, comp: Computation, opcode: str, shape: Shape, operands=(), attrs=None,
            before: Optional[Instruction] = None, name: Optional[str] = None,
            like: Optional[Instruction] = None) -> Instruction:
        """A new instruction in `comp`, inserted before `before` (or appended).

        `like`: an instruction whose metadata and source location the new one inherits.
        """
        inst = Instruction(self.names.unique(name or str(opcode)), opcode, shape, operands, attrs,
                           loc=like.loc if like is not None else None)
        if like is not None:
            inst.metadata = like.metadata
        return comp.add(inst, before=before)

    def constant(self, comp: Computation, array, shape: Shape, before: Optional[Instruction] = None,
                 like: Optional[Instruction] = None) -> Instruction:
        literal = Literal.from_array(np.asarray(array), shape)
        return self.add(comp, Op.CONSTANT, shape, (), {"literal": literal}, before=before, name="constant",
                        like=like)

    def new_computation(self, name: str) -> Computation:
        comp = Computation(self.names.unique(name))
        return comp


def fusion_computations(module: Module) -> set[int]:
    """ids of the computations fusion instructions call (and everything those call)."""
    bodies = [inst.attrs["calls"] for comp in module.computations for inst in comp.instructions
              if inst.opcode == Op.FUSION]
    return {id(comp) for comp in reachable_computations(bodies)}


def unfused_computations(module: Module) -> list[Computation]:
    """The computations passes rewrite: every one except fusion bodies (as XLA's passes skip them)."""
    fused = fusion_computations(module)
    return [comp for comp in module.computations if id(comp) not in fused]


def rewrite_unfused_computations(module: Module, rewrite: Callable[[Computation, Rewriter], bool],
                                 each_computation=None) -> bool:
    """Run `rewrite(comp, rewriter)` on every unfused computation, one Rewriter for all; whether any changed.

    each_computation: a pass's `Pass.each_computation`, for an incremental pass."""
    rewriter = Rewriter(module)
    comps = unfused_computations(module)
    if each_computation is not None:
        return each_computation(comps, lambda comp: rewrite(comp, rewriter))
    changed = False
    for comp in comps:
        changed |= rewrite(comp, rewriter)
    return changed


def repeat_while_changing(step: Callable[[], bool], max_rounds: int) -> bool:
    """Run `step` until it changes nothing, at most `max_rounds` times; whether any run changed something."""
    changed = False
    for _ in range(max_rounds):
        if not step():
            break
        changed = True
    return changed


def unfused_instructions(module: Module, wanted: Callable[[Instruction], bool]) -> list[Instruction]:
    """The instructions `wanted` picks in the unfused computations, listed before any is rewritten."""
    return [inst for comp in unfused_computations(module) for inst in comp.instructions if wanted(inst)]


def replace(old: Instruction, new: Instruction) -> None:
    """Make every user of `old` use `new`, then drop `old` if nothing needs it any more."""
    if old is new:
        return
    old.replace_all_uses_with(new)
    comp = old.parent
    if comp is not None and not old.users and old is not comp.root:
        if not is_control_predecessor(old) and old.opcode != Op.PARAMETER:
            comp.remove(old)


# --------------------------------------------------------------------------- dead code and tuples


def is_dead(inst: Instruction) -> bool:
    """Nothing needs `inst`: no users, not the root or a parameter, no side effect, nothing ordered after it."""
    return not (inst is inst.parent.root or inst.users or inst.opcode == Op.PARAMETER or has_side_effect(inst)
                or is_control_predecessor(inst))


def remove_dead_instructions(comp: Computation) -> bool:
    changed = False
    for inst in reversed(list(comp.instructions)):
        if is_dead(inst):
            comp.remove(inst)
            changed = True
    return changed


def simplify_tuples(comp: Computation) -> bool:
    """gte(tuple(a, b), 1) -> b; tuple(gte(t, 0), ..., gte(t, n-1)) -> t (where the shapes agree)."""
    changed = False
    for inst in list(comp.instructions):
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0].opcode == Op.TUPLE:
            element = inst.operands[0].operands[inst.attrs["index"]]
            if element.shape.compatible(inst.shape):
                inst.replace_all_uses_with(element)
                changed = True
        elif inst.opcode == Op.TUPLE and _rebuilds_one_tuple(inst):
            source = inst.operands[0].operands[0]
            if source.shape.compatible(inst.shape):
                inst.replace_all_uses_with(source)
                changed = True
    return changed


def _rebuilds_one_tuple(inst) -> bool:
    ops = inst.operands
    if not ops or any(op.opcode != Op.GET_TUPLE_ELEMENT for op in ops):
        return False
    source = ops[0].operands[0]
    return (source.shape.is_tuple and len(source.shape.tuple_shapes) == len(ops)
            and all(op.operands[0] is source and op.attrs["index"] == i for i, op in enumerate(ops)))


# --------------------------------------------------------------------------- cloning and inlining

_CLONE_SUFFIX = re.compile(r"\.clone(\.\d+)?$")


def clone_name(name: str, names: NameUniquer) -> str:
    """`x` -> `x.clone`, `x.clone` -> `x.clone.1`: XLA's naming of clones."""
    return names.unique(_CLONE_SUFFIX.sub("", name) + ".clone")


def clone_computation(comp: Computation, names: NameUniquer, module: Optional[Module] = None,
                      after: Optional[Computation] = None) -> tuple[Computation, dict[int, Instruction]]:
    """A copy of `comp` (same callees) with fresh names, added to `module` right after `after` (or `comp`).

    Returns the copy and the map from id(original instruction) to its copy.
    """
    copy = Computation(clone_name(comp.name, names), comp.loc)
    copy.execution_thread = comp.execution_thread
    copy.declared_result_shape = None
    mapping: dict[int, Instruction] = {}
    for inst in comp.post_order():
        new = inst.clone([mapping[id(op)] for op in inst.operands], clone_name(inst.name, names))
        mapping[id(inst)] = new
        copy.add(new)
    for inst in comp.instructions:
        mapping[id(inst)].control_predecessors = [mapping[id(p)] for p in inst.control_predecessors]
    # keep text order (post_order is stable w.r.t. it, but callers expect the original order)
    copy.instructions = [mapping[id(i)] for i in comp.instructions]
    copy.root = mapping[id(comp.root)] if comp.root is not None else None
    if module is not None:
        add_after(module, copy, after or comp)
    return copy, mapping


def add_after(module: Module, comp: Computation, anchor: Computation) -> None:
    """Add `comp` right after `anchor`: after anchor's callees, before its callers."""
    index = _position(module.computations, anchor)
    following = module.computations[index + 1] if index is not None and index + 1 < len(module.computations) \
        else None
    module.add_computation(comp, before=following)


def _position(items: list, item) -> Optional[int]:
    """Where `item` is in `items` (by identity: computations define no equality), or None."""
    try:
        return items.index(item)
    except ValueError:
        return None


def inline_call(call: Instruction, names: NameUniquer) -> None:
    """Replace `call` by copies of its callee's instructions (fresh names), in the caller."""
    caller: Computation = call.parent
    callee: Computation = call.attrs["to_apply"]
    mapping: dict[int, Instruction] = {}
    for inst in callee.instructions:
        if inst.opcode == Op.PARAMETER:
            mapping[id(inst)] = call.operands[inst.attrs["parameter_number"]]
            continue
        copy = inst.clone([mapping[id(op)] for op in inst.operands], names.unique(inst.name))
        if inst.control_predecessors:
            copy.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors if id(p) in mapping]
        caller.add(copy, before=call)
        mapping[id(inst)] = copy
    result = mapping[id(callee.root)]
    call.replace_all_uses_with(result)
    caller.remove(call)


def replace_by_inlined_call(inst: Instruction, callee: Computation, operand: Instruction,
                            rewriter: Rewriter) -> None:
    """Replace `inst` by the instructions of `callee` applied to `operand` (a call in its place, inlined)."""
    comp = inst.parent
    call = rewriter.add(comp, Op.CALL, inst.shape, [operand], {"to_apply": callee}, before=inst, name=inst.name,
                        like=inst)
    inst.replace_all_uses_with(call)
    comp.remove(inst)
    inline_call(call, rewriter.names)
