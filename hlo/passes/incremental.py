"""Skipping the computations a pass already found nothing to do in.

A `fixpoint(...)` group reruns its passes until none changes the module; after the first
round most computations no longer change, and sweeping them again finds nothing (nor does the
next group of the same passes, after a few passes that change little). The pass manager gives
the passes of a pipeline one `ChangeTracker`; an incremental pass
(`Pass.incremental`) visits its computations through `Pass.each_computation`, which skips a
computation when the pass found nothing in it last time and neither it nor anything it calls
(transitively) was edited since. Edits are counted by the IR (`hlo.ir.EditClock`).
Within a computation, algsimp also skips the instructions it found nothing to do at when
nothing they depend on was edited since (`instruction_marks`, algsimp/simplifier.py).

What this relies on, for a pass marked incremental:
- what it does to a computation depends only on that computation and its callees;
- it edits the computation it visits (in place or through the IR's methods: the tracker marks
  a computation the pass changed as edited), and other computations only through the IR's
  methods (new computations count as edited).
A pass that is not incremental may edit anything: when it reports a change, the tracker
forgets everything it knew, unless the pass is `edits_tracked` (every edit through the IR's
methods, or of an instruction it also edits through them).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..ir import CALLING_OPCODES, Computation, EditClock, Instruction, touch


class ChangeTracker:
    """For each pass, the computations it found nothing to do in, and when (EditClock.now)."""

    def __init__(self):
        self._clean: dict[str, dict[Computation, int]] = {}
        self._instruction_marks: dict[str, dict[Instruction, int]] = {}
        self._callees: dict[Computation, tuple[int, tuple[Computation, ...]]] = {}
        self._latest: dict[Computation, int] = {}   # last edit of a computation or its callees
        self._latest_at = -1                        # EditClock.now when _latest was valid

    def forget_all(self) -> None:
        """After an edit the tracker cannot see: every computation counts as changed."""
        self._clean.clear()
        self._instruction_marks.clear()

    def instruction_marks(self, pass_name: str) -> dict[Instruction, Any]:
        """What `pass_name` knows of instructions until the tracker forgets (algsimp: EditClock.now
        when it found nothing to do at one; cse: an instruction's key and when it was computed)."""
        return self._instruction_marks.setdefault(pass_name, {})

    def each_computation(self, pass_name: str, comps: Iterable[Computation],
                         process: Callable[[Computation], bool]) -> bool:
        """`process(comp)` for each computation changed since `pass_name` last found nothing in it;
        whether any call changed something."""
        clean = self._clean.setdefault(pass_name, {})
        changed = False
        for comp in comps:
            found_nothing_at = clean.get(comp)
            if found_nothing_at is not None and self.last_edit(comp) <= found_nothing_at:
                continue
            if process(comp):
                touch(comp)  # also what the pass changed in place
                clean.pop(comp, None)
                changed = True
            else:
                clean[comp] = EditClock.now
        return changed

    def last_edit(self, comp: Computation) -> int:
        """The latest edit of `comp` or of a computation it calls, directly or not."""
        if self._latest_at != EditClock.now:
            self._latest.clear()
            self._latest_at = EditClock.now
        latest = self._latest
        if comp in latest:
            return latest[comp]
        # Depth-first over the callees, iteratively (call chains can be long).
        stack = [(comp, iter(self._callees_of(comp)))]
        best = {comp: comp.edited}
        latest[comp] = comp.edited  # provisional, for a computation reached again on the way
        while stack:
            node, pending = stack[-1]
            callee = next(pending, None)
            if callee is None:
                stack.pop()
                latest[node] = best[node]
                if stack:
                    parent = stack[-1][0]
                    best[parent] = max(best[parent], best[node])
                continue
            if callee in latest:
                best[node] = max(best[node], latest[callee])
                continue
            best[callee] = latest[callee] = callee.edited
            stack.append((callee, iter(self._callees_of(callee))))
        return latest[comp]

    def _callees_of(self, comp: Computation) -> tuple[Computation, ...]:
        cached = self._callees.get(comp)
        if cached is not None and cached[0] == comp.edited:
            return cached[1]
        callees = tuple(c for inst in comp.instructions for c in inst.called_computations())
        self._callees[comp] = (comp.edited, callees)
        return callees


def latest_edit_read(inst: Instruction, cone: dict[Instruction, int], tracker: ChangeTracker) -> int:
    """The latest edit of what a rule at `inst` may read: `inst` and its uses, its operands and
    their uses, everything they are computed from, and what it calls. `cone` holds the latest edit
    of what each instruction visited before in the same post-order sweep is computed from (and
    gets this one's)."""
    computed_from = inst.edited
    uses = inst.uses_edited
    known = cone.get
    for op in inst.operands:  # (comparisons rather than max(): this runs for every instruction of a sweep)
        edited, upstream, used = op.edited, known(op, 0), op.uses_edited
        if edited > computed_from:  # op.edited as well: an operand may have been edited since its own visit
            computed_from = edited
        if upstream > computed_from:
            computed_from = upstream
        if used > uses:
            uses = used
    if inst.opcode in CALLING_OPCODES:
        computed_from = max([computed_from] + [tracker.last_edit(c) for c in inst.called_computations()])
    cone[inst] = computed_from
    return computed_from if computed_from > uses else uses
