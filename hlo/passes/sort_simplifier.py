"""sort-simplifier: drop sort operands whose sorted results nobody reads.

As XLA's SortSimplifier: for a multi-operand sort whose users are all
get-tuple-elements, operand i is kept when its result is read or when the
comparator reads one of its two parameters (2i, 2i+1); the others are removed
together with their comparator parameters (the comparator is cloned, since it
may be shared). A sort left with one operand returns an array, not a tuple.
Sorts in fusion computations are left alone, as in XLA.
"""
from __future__ import annotations

from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from ..shapes import Shape
from .base import Pass, register
from .rewrite import Rewriter, clone_computation, unfused_instructions


@register
class SortSimplifier(Pass):
    name = "sort-simplifier"
    description = "Remove sort operands whose results are unused and that the comparator does not read."

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        sorts = unfused_instructions(module, lambda inst: inst.opcode == Op.SORT)
        changed = False
        for sort in sorts:
            changed |= remove_unused_sort_operands(sort, rewriter)
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed


def used_sort_operands(sort: Instruction) -> set[int] | None:
    """Indices of operands that must stay, or None when the users cannot be analysed."""
    comp = sort.parent
    if not sort.shape.is_tuple or sort is comp.root:
        return None
    used: set[int] = set()
    for user in sort.users:
        if user.opcode != Op.GET_TUPLE_ELEMENT:
            return None
        used.add(user.attrs["index"])
    for param in sort.attrs["to_apply"].parameters:
        if param.users or param is param.parent.root:
            used.add(param.attrs["parameter_number"] // 2)
    return used


def remove_unused_sort_operands(sort: Instruction, rewriter: Rewriter) -> bool:
    used = used_sort_operands(sort)
    if used is None or len(used) == len(sort.operands):
        return False
    comp: Computation = sort.parent
    keep = sorted(used)
    operands = [sort.operands[i] for i in keep]
    shapes = [sort.shape.tuple_shapes[i] for i in keep]
    new_sort = sort.clone(operands, rewriter.names.unique(sort.name))
    new_sort.shape = shapes[0] if len(shapes) == 1 else Shape.tuple_of(shapes)
    new_sort.operand_locs = [sort.operand_locs[i] if i < len(sort.operand_locs) else None for i in keep]
    new_sort.attrs["to_apply"] = _narrowed_comparator(sort.attrs["to_apply"], keep, rewriter)
    comp.add(new_sort, before=sort)
    new_index = {old: new for new, old in enumerate(keep)}
    for user in list(sort.users):
        index = new_index[user.attrs["index"]]
        if new_sort.shape.is_tuple:
            user.replace_operand(0, new_sort)
            user.attrs["index"] = index
        else:
            user.replace_all_uses_with(new_sort)
            comp.remove(user)
    comp.remove(sort)
    return True


def _narrowed_comparator(comparator: Computation, keep: list[int], rewriter: Rewriter) -> Computation:
    """A copy of the comparator with only the parameters of the kept operands, renumbered."""
    copy, mapping = clone_computation(comparator, rewriter.names, rewriter.module)
    new_number = {}
    for new, old in enumerate(keep):
        new_number[2 * old] = 2 * new
        new_number[2 * old + 1] = 2 * new + 1
    for param in comparator.parameters:
        clone = mapping[id(param)]
        number = param.attrs["parameter_number"]
        if number in new_number:
            clone.attrs["parameter_number"] = new_number[number]
        else:
            copy.remove(clone)
    return copy
