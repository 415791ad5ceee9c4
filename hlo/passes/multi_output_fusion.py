"""multi-output-fusion: sibling loop fusions that read the same value become one fusion.

Modelled on the sibling case of XLA's MultiOutputFusion: two kLoop fusions that share
an operand, produce arrays of the same dimensions and layout, and do not depend on each
other are merged into one fusion whose root is a tuple of both roots; their users read
get-tuple-element of it. The compiled backend then emits one loop nest that reads the
shared operand once for both outputs (kernels.py, tuple roots of equal dimensions).

Left alone: fusions that update a buffer in place or scatter (their roots are
dynamic-update-slice or scatter), reductions (kInput: they have a faster loop of their
own), fusions that are a computation's root, and operands with more than
MAX_SIBLINGS users (the search stays linear on large modules).
"""
from __future__ import annotations

from typing import Optional

from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait, ops_with
from ..shapes import Shape
from .base import Pass, register
from .rewrite import Rewriter, rewrite_unfused_computations

MAX_SIBLINGS = 8


@register
class MultiOutputFusion(Pass):
    name = "multi-output-fusion"
    description = "Merge sibling loop fusions that read the same operand into one multi-output fusion."

    def run(self, module: Module) -> bool:
        changed = rewrite_unfused_computations(module, _fuse_siblings)
        if changed:
            module.remove_unreachable_computations()   # the bodies of the merged fusions
        return changed


def _fuse_siblings(comp: Computation, rewriter: Rewriter) -> bool:
    """Merge the first pair of siblings (in program order) until there is none.

    An operand found without a pair keeps having none until its users change: merging
    only replaces users of the merged fusions' operands, and only adds dependencies (which
    can only forbid pairs). So each search skips the operands known to have no pair."""
    changed = False
    no_pair: set[int] = set()
    while True:
        pair = _find_pair(comp, no_pair)
        if pair is None:
            return changed
        for op in pair[0].operands + pair[1].operands:
            no_pair.discard(id(op))
        _merge(comp, *pair, rewriter)
        changed = True


_UPDATES_IN_PLACE = ops_with(Trait.UPDATES_IN_PLACE)


def _candidate(inst: Instruction) -> bool:
    if inst.opcode != Op.FUSION or inst.attrs.get("kind") != "kLoop" or not inst.shape.is_array:
        return False
    root = inst.attrs["calls"].root
    return root.opcode not in _UPDATES_IN_PLACE and inst is not inst.parent.root and not inst.control_predecessors


def _same_loop(a: Shape, b: Shape) -> bool:
    return a.dims == b.dims and a.minor_to_major() == b.minor_to_major()


def _find_pair(comp: Computation, no_pair: set[int]) -> Optional[tuple[Instruction, Instruction]]:
    """The first pair of sibling fusions, by operand in program order; operands found without
    one are added to `no_pair` (and skipped when they are in it)."""
    position = {id(inst): k for k, inst in enumerate(comp.instructions)}
    for operand in comp.instructions:
        if id(operand) in no_pair:
            continue
        users = operand.users
        if len(users) < 2 or len(users) > MAX_SIBLINGS:
            no_pair.add(id(operand))
            continue
        users = [u for u in users if u.parent is comp and _candidate(u)]
        if len(users) < 2:
            no_pair.add(id(operand))
            continue
        users.sort(key=lambda u: position[id(u)])
        for i, first in enumerate(users):
            for second in users[i + 1:]:
                if _same_loop(first.shape, second.shape) and not _reaches(second, first, position):
                    return first, second
        no_pair.add(id(operand))
    return None


def _reaches(late: Instruction, early: Instruction, position: dict) -> bool:
    """Whether `late` depends on `early` (through operands or control edges)."""
    stop = position[id(early)]
    pending, seen = [late], set()
    while pending:
        inst = pending.pop()
        for op in inst.operands + inst.control_predecessors:
            if op is early:
                return True
            if id(op) not in seen and position.get(id(op), -1) > stop:
                seen.add(id(op))
                pending.append(op)
    return False


def _merge(comp: Computation, first: Instruction, second: Instruction, rewriter: Rewriter) -> None:
    """One fusion computing both: operands deduplicated, roots tupled, users reading its elements."""
    operands: list[Instruction] = []
    for op in first.operands + second.operands:
        if all(op is not known for known in operands):
            operands.append(op)
    body = Computation(rewriter.names.unique("fused_computation"))
    params = []
    for number, op in enumerate(operands):
        param = Instruction(rewriter.names.unique(f"param_{number}"), Op.PARAMETER, op.shape, (),
                            {"parameter_number": number})
        params.append(body.add(param))
    roots = [_clone_body(f, body, operands, params, rewriter) for f in (first, second)]
    shape = Shape.tuple_of([first.shape, second.shape])
    body.root = body.add(Instruction(rewriter.names.unique("tuple"), Op.TUPLE, shape, roots))
    rewriter.module.add_computation(body, before=comp)
    fused = rewriter.add(comp, Op.FUSION, shape, operands, {"kind": "kLoop", "calls": body}, before=second,
                         name="fusion", like=first)
    for index, old in enumerate((first, second)):
        element = rewriter.add(comp, Op.GET_TUPLE_ELEMENT, old.shape, [fused], {"index": index}, before=second,
                               name="get-tuple-element", like=old)
        old.replace_all_uses_with(element)
    comp.remove(second)
    comp.remove(first)
    order = comp.post_order()   # first's users may come before the merged fusion
    if order != comp.instructions:  # (by identity: instructions define no equality)
        comp.instructions = order


def _clone_body(fusion: Instruction, body: Computation, operands: list, params: list,
                rewriter: Rewriter) -> Instruction:
    inner = fusion.attrs["calls"]
    mapping: dict[int, Instruction] = {}
    for inst in inner.post_order():
        if inst.opcode == Op.PARAMETER:
            source = fusion.operands[inst.attrs["parameter_number"]]
            mapping[id(inst)] = params[next(k for k, op in enumerate(operands) if op is source)]
            continue
        mapping[id(inst)] = body.add(inst.clone([mapping[id(op)] for op in inst.operands],
                                                rewriter.names.unique(inst.name)))
    return mapping[id(inner.root)]
