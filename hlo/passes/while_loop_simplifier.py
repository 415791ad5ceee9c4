"""while-loop-simplifier: remove loops that run at most once and dead loop-carried elements.

As the parts of XLA's WhileLoopSimplifier that matter most:

* Trip count 0 (the condition is false on the initial value): the loop becomes
  its init operand. Trip count 1: the loop becomes a call of its body on the
  init, which is inlined. The trip count is found by running the condition (and
  the body's update of what the condition reads) through the interpreter on
  constant initial values, at most `limit` + 1 times; loops whose condition has
  side effects are kept, and so are trip-count-1 loops whose body has some.
* Dead tuple elements: an element the condition does not read (directly or
  through other elements), that no side effect and no other kept element
  depends on, and that nobody reads after the loop is removed from the state.
  Groups of elements that only feed each other are removed together when each
  member is unused after the loop or passed through unchanged (its value after
  the loop is then its initial value). As in XLA this needs a tuple-shaped
  state, a body whose root is a tuple and whose parameters are read only
  through get-tuple-element.

Loops with control dependencies are left alone. The old loop's users read a
tuple rebuilt from the new loop (tuple-simplifier folds it away).

The trip count and the rebuilding of loops are in while_loops.py (shared with
while-loop-invariant-code-motion).
"""
from __future__ import annotations

from ..analysis.effects import computation_has_side_effect, has_control_dependencies, has_side_effect_anywhere
from ..ir import Computation, EditClock, Instruction, Module
from ..opcodes import Op
from .base import Pass, register
from .incremental import ChangeTracker
from .rewrite import Rewriter, replace, replace_by_inlined_call
from .while_loops import known_trip_count, rebuild_while, while_loops


@register
class WhileLoopSimplifier(Pass):
    name = "while-loop-simplifier"
    description = "Remove loops with trip count 0 or 1 and loop-carried tuple elements nothing needs."

    # Every edit goes through the IR's methods (new loops get new computations), so the other
    # passes of a pipeline need not forget what they found when this one changes a loop.
    incremental = True

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        changed = False
        # While a pipeline runs: the loops found with nothing to do, and when.
        tracker = self.tracker
        marks = tracker.instruction_marks(self.name) if tracker is not None else {}
        for loop in while_loops(module):
            if loop.parent is None or has_control_dependencies(loop):
                continue
            if loop in marks and _latest_edit_read(loop, tracker) <= marks[loop]:
                continue
            if try_remove_while_loop(loop, rewriter):
                changed = True
                continue
            if try_remove_dead_elements(loop, rewriter):
                changed = True
            elif tracker is not None:
                marks[loop] = EditClock.now
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed


def _latest_edit_read(loop: Instruction, tracker: ChangeTracker) -> int:
    """The latest edit of what the pass reads to decide about `loop`: the loop and its uses (which
    elements are read after it, whether it is the root), its initial value and that value's
    operands (constant elements give the trip count), and its condition and body with what they call."""
    init = loop.operands[0]
    latest = max(loop.edited, loop.uses_edited, init.edited, *(op.edited for op in init.operands))
    return max(latest, *(tracker.last_edit(c) for c in loop.called_computations()))


def try_remove_while_loop(loop: Instruction, rewriter: Rewriter) -> bool:
    count = known_trip_count(loop, 1)
    if count is None:
        return False
    if count == 0:
        replace(loop, loop.operands[0])
        return True
    body = loop.attrs["body"]
    if computation_has_side_effect(body):
        return False
    replace_by_inlined_call(loop, body, loop.operands[0], rewriter)
    return True


# --------------------------------------------------------------------------- dead elements

def dead_state_indices(loop: Instruction) -> list[int]:
    """State elements that can be removed (see the module docstring)."""
    cond: Computation = loop.attrs["condition"]
    body: Computation = loop.attrs["body"]
    if not _rewritable(loop):
        return []
    size = len(loop.shape.tuple_shapes)
    cond_param, body_param = cond.parameters[0], body.parameters[0]
    if size == 0 or any(u.opcode != Op.GET_TUPLE_ELEMENT for p in (cond_param, body_param) for u in p.users):
        return []
    root = body.root
    used_after = _indices_used_after(loop, size)
    candidates = {i for i in range(size) if i not in used_after or _passes_through(root, body_param, i)}
    tracked = [i for c in (body, cond) for i in c.post_order() if i not in (cond_param, body_param, root)]
    deps = _candidate_dependencies(tracked, (cond_param, body_param), candidates)
    sinks = [i for i in tracked if has_side_effect_anywhere(i)] + [cond.root]
    reach_sinks = set().union(*(deps.get(id(s), set()) for s in sinks))
    affect_others: set[int] = set()
    for i in range(size):
        output_deps = deps.get(id(root.operands[i]), set())
        affect_others |= output_deps - {i} if i in candidates else output_deps
    dead = {i for i in range(size) if i not in used_after and i not in affect_others and i not in reach_sinks}
    for group in _connected_groups(tracked, root, (cond_param, body_param), size):
        if all(i in candidates and i not in reach_sinks for i in group):
            dead |= group
    return sorted(dead)


def _rewritable(loop: Instruction) -> bool:
    body: Computation = loop.attrs["body"]
    return (loop.shape.is_tuple and body.root.opcode == Op.TUPLE and not body.root.users
            and len(body.root.operands) == len(loop.shape.tuple_shapes))


def _indices_used_after(loop: Instruction, size: int) -> set[int]:
    if loop is loop.parent.root or any(u.opcode != Op.GET_TUPLE_ELEMENT for u in loop.users):
        return set(range(size))
    return {u.attrs["index"] for u in loop.users}


def _passes_through(root: Instruction, param: Instruction, index: int) -> bool:
    out = root.operands[index]
    return out.opcode == Op.GET_TUPLE_ELEMENT and out.operands[0] is param and out.attrs["index"] == index


def _candidate_dependencies(tracked: list[Instruction], params, candidates: set[int]) -> dict[int, set[int]]:
    """id(inst) -> the candidate state indices it depends on within one iteration."""
    deps: dict[int, set[int]] = {}
    for inst in tracked:  # operands come first (post order)
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] in params:
            index = inst.attrs["index"]
            deps[id(inst)] = {index} if index in candidates else set()
        else:
            deps[id(inst)] = set().union(*(deps.get(id(op), set()) for op in inst.operands))
    return deps


def _connected_groups(tracked: list[Instruction], root: Instruction, params, size: int) -> list[set[int]]:
    """State indices grouped by the connected components of the instructions that read/produce them."""
    parent: dict[int, int] = {id(i): id(i) for i in tracked}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    for inst in tracked:
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] in params:
            output = root.operands[inst.attrs["index"]]
            if output is not inst and id(output) in parent:
                union(id(output), id(inst))
        else:
            for op in inst.operands:
                if id(op) in parent:
                    union(id(op), id(inst))
    groups: dict[int, set[int]] = {}
    for i in range(size):
        if id(root.operands[i]) in parent:
            groups.setdefault(find(id(root.operands[i])), set()).add(i)
        else:
            groups.setdefault(-1 - i, set()).add(i)  # not analysable: a group of its own
    for inst in tracked:
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] in params:
            groups.setdefault(find(id(inst)), set()).add(inst.attrs["index"])
    return list(groups.values())


def try_remove_dead_elements(loop: Instruction, rewriter: Rewriter) -> bool:
    dead = dead_state_indices(loop)
    if not dead:
        return False
    keep = [i for i in range(len(loop.shape.tuple_shapes)) if i not in set(dead)]
    rebuild_while(loop, rewriter, keep)
    return True
