"""while-loop-invariant-code-motion: compute loop-invariant values once, before the loop.

As XLA's WhileLoopInvariantCodeMotion (default options): in a loop whose body
root is a tuple, the elements the body passes through unchanged
(`root.operand(i) = gte(param, i)`) are invariant. A body instruction without
side effects or control dependencies whose operands are all invariant (those
elements, constants, or instructions already found invariant) is invariant too.
Invariant array-shaped instructions are copied before the loop, their values are passed in as
new loop-carried elements, and the body reads them from there.

Not hoisted on their own (only along with a user that is worth it, as in XLA):
constants, reshapes, bitcasts, broadcasts, iotas, reverses, slices, transposes
and tuples: hoisting them just grows the loop state. Loops that run at most once
(known trip count <= 1) and loops containing `domain` instructions are left
alone, as are loops with the frontend attribute _xla_disable_loop_instr_hoisting.

After hoisting, dead code is removed and tuples are simplified, as in XLA.
"""
from __future__ import annotations

from ..analysis.effects import has_side_effect_anywhere
from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait, has_trait
from .base import Pass, register
from .rewrite import Rewriter, remove_dead_instructions, simplify_tuples
from .while_loops import known_trip_count, rebuild_while, while_loops

_DISABLE_ATTRIBUTE = "_xla_disable_loop_instr_hoisting"


@register
class WhileLoopInvariantCodeMotion(Pass):
    name = "while-loop-invariant-code-motion"
    description = "Hoist loop-invariant computations out of while bodies into new loop-carried elements."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        changed = False
        for loop in while_loops(module):
            if loop.parent is not None:
                changed |= hoist_invariants(loop, rewriter)
        if changed:
            for comp in module.computations:
                simplify_tuples(comp)
                remove_dead_instructions(comp)
            if module.entry is not None:
                module.remove_unreachable_computations()
        return changed


def _disabled(loop: Instruction) -> bool:
    attrs = loop.frontend_attributes
    return attrs is not None and _DISABLE_ATTRIBUTE in attrs.items


def invariant_reads(body: Computation) -> set[int]:
    """ids of the body's get-tuple-elements reading elements passed through unchanged (array-shaped)."""
    param, root = body.parameters[0], body.root
    if root.opcode != Op.TUPLE:
        return set()
    passed = {i for i, op in enumerate(root.operands)
              if op.opcode == Op.GET_TUPLE_ELEMENT and op.operands[0] is param and op.attrs["index"] == i}
    return {id(u) for u in param.users
            if u.opcode == Op.GET_TUPLE_ELEMENT and u.attrs["index"] in passed and u.shape.is_array}


def hoist_invariants(loop: Instruction, rewriter: Rewriter) -> bool:
    body: Computation = loop.attrs["body"]
    if not loop.shape.is_tuple or _disabled(loop) or body.root.opcode != Op.TUPLE or body.root.users:
        return False
    count = known_trip_count(loop, 1)
    if count is not None:
        return False  # runs at most once: nothing to gain
    if any(i.opcode == Op.DOMAIN for i in body.instructions):
        return False
    to_hoist = _instructions_to_hoist(body)
    if not to_hoist:
        return False
    outside = _copy_before_loop(loop, to_hoist, rewriter)
    size = len(loop.shape.tuple_shapes)
    new_loop, body_map = rebuild_while(loop, rewriter, list(range(size)), [outside[id(i)] for i in to_hoist])
    new_body: Computation = new_loop.attrs["body"]
    for k, inst in enumerate(to_hoist):
        body_map[id(inst)].replace_all_uses_with(new_body.root.operands[size + k])
    remove_dead_instructions(new_body)
    return True


def _instructions_to_hoist(body: Computation) -> list[Instruction]:
    """The invariant instructions worth hoisting, in post order (their invariant operands come along)."""
    invariant = invariant_reads(body)
    hoisted: list[Instruction] = []
    controlled = {id(p) for i in body.instructions for p in i.control_predecessors}
    for inst in body.post_order():
        if inst.opcode == Op.PARAMETER or inst.opcode == Op.AFTER_ALL or inst is body.root:
            continue
        if has_side_effect_anywhere(inst):
            continue
        if inst.control_predecessors or id(inst) in controlled or not inst.shape.is_array:
            continue
        if not all(op.opcode == Op.CONSTANT or id(op) in invariant for op in inst.operands):
            continue
        invariant.add(id(inst))
        if not has_trait(inst.opcode, Trait.NOT_WORTH_HOISTING_ALONE) and not _is_sharding_call(inst):
            hoisted.append(inst)
    # Only values something left in the body still reads need to be carried; the
    # others are hoisted along with their users.
    hoisted_ids = {id(i) for i in hoisted}
    stays: dict[int, bool] = {}
    for inst in reversed(body.post_order()):  # users before operands
        stays[id(inst)] = id(inst) not in hoisted_ids and (
            id(inst) not in invariant or inst is body.root or any(stays.get(id(u), True) for u in inst.users))
    return [i for i in hoisted if any(stays.get(id(u), True) for u in i.users)]


def _is_sharding_call(inst: Instruction) -> bool:
    return inst.opcode == Op.CUSTOM_CALL and inst.attrs.get("custom_call_target") == "Sharding"


def _copy_before_loop(loop: Instruction, to_hoist: list[Instruction], rewriter: Rewriter) -> dict[int, Instruction]:
    """Copies, before the loop, of the hoisted instructions and everything invariant they read."""
    comp: Computation = loop.parent
    init = loop.operands[0]
    param = loop.attrs["body"].parameters[0]
    copies: dict[int, Instruction] = {}

    def copy_of(inst: Instruction) -> Instruction:
        if id(inst) in copies:
            return copies[id(inst)]
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] is param:
            index = inst.attrs["index"]
            if init.opcode == Op.TUPLE:
                new = init.operands[index]
            else:
                new = rewriter.add(comp, Op.GET_TUPLE_ELEMENT, inst.shape, [init], {"index": index},
                                   before=loop, like=inst)
        else:
            operands = [copy_of(op) for op in inst.operands]
            new = inst.clone(operands, rewriter.names.unique(inst.name))
            new.control_predecessors = []
            comp.add(new, before=loop)
        copies[id(inst)] = new
        return new

    for inst in to_hoist:
        copy_of(inst)
    return copies
