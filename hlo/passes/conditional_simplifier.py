"""conditional-simplifier: remove conditionals whose branch is known, and narrow their tuples.

As XLA's ConditionalSimplifier, for each conditional (skipping those with a
sharding or calling channel instructions, which cloning would duplicate):

1. result elements that every branch computes from the same instruction are
   merged (users of the later index read the first);
2. result tuple elements no get-tuple-element reads are removed (branches are
   cloned and their roots narrowed);
3. a conditional with a single branch, or whose predicate/index is a constant,
   becomes a call of the chosen branch, which is then inlined (an s32 index out
   of range chooses the last branch; pred true chooses branch 0). Conditionals
   with side effects or control dependencies are kept;
4. branch parameters that are tuples of which the branch reads only some
   elements (through get-tuple-element) are narrowed, with every conditional
   calling that branch passing the narrower tuple.

XLA also turns cheap two-branch conditionals into selects; this pass does not.
"""
from __future__ import annotations

from typing import Optional

from ..analysis.effects import has_control_dependencies, has_side_effect
from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait, has_trait
from ..shapes import Shape
from .analysis import literal_value, reachable_computations
from .base import Pass, register
from .rewrite import Rewriter, clone_computation, replace_by_inlined_call

@register
class ConditionalSimplifier(Pass):
    name = "conditional-simplifier"
    description = "Inline conditionals whose branch is known; drop unused results and branch-parameter elements."

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        conditionals = [i for c in module.computations if _has_conditional(c) for i in c.post_order()
                        if i.opcode == Op.CONDITIONAL and i.sharding is None and not _calls_channels(i)]
        changed = False
        removed: set[int] = set()
        for cond in conditionals:
            changed |= merge_duplicate_tuple_elements(cond)
            changed |= remove_unused_tuple_elements(cond, rewriter)
            if try_remove_conditional(cond, rewriter):
                removed.add(id(cond))
                changed = True
        remaining = [c for c in conditionals if id(c) not in removed]
        changed |= remove_unused_branch_operands(remaining, rewriter)
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed


def _has_conditional(comp: Computation) -> bool:
    """Tested before ordering the computation: most have no conditional."""
    return any(inst.opcode == Op.CONDITIONAL for inst in comp.instructions)


def branches(cond: Instruction) -> list[Computation]:
    if cond.attrs.get("branch_computations"):
        return list(cond.attrs["branch_computations"])
    return [cond.attrs["true_computation"], cond.attrs["false_computation"]]


def set_branch(cond: Instruction, index: int, comp: Computation) -> None:
    if cond.attrs.get("branch_computations"):
        comps = list(cond.attrs["branch_computations"])
        comps[index] = comp
        cond.attrs["branch_computations"] = type(cond.attrs["branch_computations"])(comps)
    else:
        cond.attrs["true_computation" if index == 0 else "false_computation"] = comp


def _calls_channels(inst: Instruction) -> bool:
    return any(has_trait(i.opcode, Trait.CHANNEL) or i.attrs.get("channel_id") is not None
               for comp in reachable_computations(inst.called_computations()) for i in comp.instructions)


def _gte_users_only(cond: Instruction) -> bool:
    return (cond.users and cond is not cond.parent.root and cond.shape.is_tuple
            and all(u.opcode == Op.GET_TUPLE_ELEMENT for u in cond.users))


# --------------------------------------------------------------------------- result tuples

def merge_duplicate_tuple_elements(cond: Instruction) -> bool:
    """Users of result j read index i instead when every branch returns the same value at i and j."""
    if not _gte_users_only(cond) or any(b.root.opcode != Op.TUPLE for b in branches(cond)):
        return False
    first_index: dict[tuple, int] = {}
    changed = False
    for j in range(len(cond.shape.tuple_shapes)):
        key = tuple(id(b.root.operands[j]) for b in branches(cond))
        i = first_index.setdefault(key, j)
        if i == j:
            continue
        for user in cond.users:
            if user.attrs["index"] == j:
                user.attrs["index"] = i
                changed = True
    return changed


def remove_unused_tuple_elements(cond: Instruction, rewriter: Rewriter) -> bool:
    if not _gte_users_only(cond):
        return False
    size = len(cond.shape.tuple_shapes)
    used = sorted({u.attrs["index"] for u in cond.users})
    if len(used) == size:
        return False
    if any(not b.root.shape.is_tuple or not b.root.shape.compatible(cond.shape) for b in branches(cond)):
        return False
    for index, branch in enumerate(branches(cond)):
        copy, _ = clone_computation(branch, rewriter.names, rewriter.module)
        copy.root = _narrowed_root(copy, used, rewriter)
        set_branch(cond, index, copy)
    cond.shape = Shape.tuple_of(cond.shape.tuple_shapes[i] for i in used)
    new_index = {old: new for new, old in enumerate(used)}
    for user in cond.users:
        user.attrs["index"] = new_index[user.attrs["index"]]
    return True


def _narrowed_root(comp: Computation, used: list[int], rewriter: Rewriter) -> Instruction:
    root = comp.root
    if root.opcode == Op.TUPLE:
        elements = [root.operands[i] for i in used]
    else:
        elements = [rewriter.add(comp, Op.GET_TUPLE_ELEMENT, root.shape.tuple_shapes[i], [root], {"index": i},
                                 like=root) for i in used]
    new_root = rewriter.add(comp, Op.TUPLE, Shape.tuple_of(e.shape for e in elements), elements, like=root)
    if root.opcode == Op.TUPLE and not root.users:
        comp.remove(root)
    return new_root


# --------------------------------------------------------------------------- known branch

def chosen_branch(cond: Instruction) -> Optional[int]:
    """The branch a constant predicate/index selects, or None when it is not a known constant."""
    count = len(branches(cond))
    if count == 1:
        return 0
    value = literal_value(cond.operands[0])
    if value is None:
        return None
    if value.dtype == bool:
        return 0 if bool(value) else 1
    index = int(value)
    return index if 0 <= index < count else count - 1


def try_remove_conditional(cond: Instruction, rewriter: Rewriter) -> bool:
    if has_side_effect(cond) or has_control_dependencies(cond):
        return False
    branch = chosen_branch(cond)
    if branch is None:
        return False
    replace_by_inlined_call(cond, branches(cond)[branch], cond.operands[1 + branch], rewriter)
    return True


# --------------------------------------------------------------------------- branch operands

def remove_unused_branch_operands(conditionals: list[Instruction], rewriter: Rewriter) -> bool:
    callers: dict[int, list[Instruction]] = {}
    order: list[Computation] = []
    for cond in conditionals:
        for branch in branches(cond):
            if id(branch) not in callers:
                callers[id(branch)] = []
                order.append(branch)
            if cond not in callers[id(branch)]:
                callers[id(branch)].append(cond)
    changed = False
    for branch in order:
        changed |= _narrow_branch_parameter(branch, callers[id(branch)], rewriter)
    return changed


def _narrow_branch_parameter(branch: Computation, calling: list[Instruction], rewriter: Rewriter) -> bool:
    param = branch.parameters[0]
    if param is branch.root or not param.shape.is_tuple:
        return False
    if any(u.opcode != Op.GET_TUPLE_ELEMENT for u in param.users):
        return False
    keep = sorted({u.attrs["index"] for u in param.users})
    if len(keep) == len(param.shape.tuple_shapes):
        return False
    copy, mapping = clone_computation(branch, rewriter.names, rewriter.module)
    new_param = mapping[id(param)]
    new_param.shape = Shape.tuple_of(param.shape.tuple_shapes[i] for i in keep)
    new_index = {old: new for new, old in enumerate(keep)}
    for user in new_param.users:
        user.attrs["index"] = new_index[user.attrs["index"]]
    for cond in calling:
        for index, b in enumerate(branches(cond)):
            if b is branch:
                _pass_narrower_tuple(cond, index, keep, copy, rewriter)
    return True


def _pass_narrower_tuple(cond: Instruction, index: int, keep: list[int], branch: Computation,
                         rewriter: Rewriter) -> None:
    comp = cond.parent
    operand = cond.operands[1 + index]
    if operand.opcode == Op.TUPLE:
        elements = [operand.operands[i] for i in keep]
    else:
        elements = [rewriter.add(comp, Op.GET_TUPLE_ELEMENT, operand.shape.tuple_shapes[i], [operand],
                                 {"index": i}, before=cond, like=operand) for i in keep]
    narrow = rewriter.add(comp, Op.TUPLE, Shape.tuple_of(e.shape for e in elements), elements, before=cond,
                          like=operand)
    cond.replace_operand(1 + index, narrow)
    set_branch(cond, index, branch)
