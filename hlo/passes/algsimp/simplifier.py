"""algsimp: algebraic simplification (XLA's AlgebraicSimplifier).

Every computation (except fusion bodies, as in XLA) is visited in post order; each
instruction's opcode selects its rules in the registry `rules.RULES` and the first rule
that applies rewrites it. Sweeps repeat until nothing changes (bounded), which
reaches a local fixed point per computation. The rules and their exact conditions
are documented in docs/ALGSIMP.md.

What the pass never does:
- touch side-effecting instructions (see `hlo.analysis.effects`) or instructions tied
  by control dependencies (XLA skips those too);
- change an instruction's shape: a replacement has the replaced instruction's shape,
  layout included, so bitcasts and the entry's program shape see the same layouts;
- rewrite instructions with dynamic shapes.
New instructions get XLA-style unique names, the metadata of the instruction they
replace, and the default layout unless they replace an instruction (then its shape).
"""
from __future__ import annotations

from ...analysis.effects import has_side_effect, is_control_predecessor
from typing import Optional

from ...ir import Computation, EditClock, Instruction, Module, touch_instruction, touch_uses
from ...opcodes import Op
from ..base import Pass, register
from ..incremental import ChangeTracker, latest_edit_read
from ..rewrite import repeat_while_changing, replace
from .context import PassState, RewriteContext, same_shape
from .rules import RULES
# The rule modules register their rules on import. Where an opcode has rules in several
# modules, the order of this import is the order they are tried in (reshapes.py's
# operand_of_same_shape comes before the rules of conversions.py and slices.py).
from . import arithmetic, select_compare, reshapes, conversions, slices, dot, reductions, reduce_windows  # noqa: F401

MAX_SWEEPS = 50  # per computation; XLA's rerun limit is of the same order


@register
class AlgebraicSimplifier(Pass):
    name = "algsimp"
    description = ("Algebraic simplification: identities (x+0, x*1, ...), redundant reshapes/transposes/"
                   "broadcasts/slices, trivial dots and reductions (XLA's AlgebraicSimplifier).")

    incremental = True

    def run(self, module: Module) -> bool:
        state = PassState(module)
        fused = _fusion_bodies(module)
        comps = [comp for comp in module.computations if id(comp) not in fused]
        tracker = self.tracker or ChangeTracker()
        marks = tracker.instruction_marks(self.name)
        return self.each_computation(comps, lambda comp: simplify_computation(comp, state, marks, tracker))


def simplify_computation(comp: Computation, state: PassState, marks: Optional[dict] = None,
                         tracker: Optional[ChangeTracker] = None) -> bool:
    """Sweep `comp` until no rule fires. `marks` ({instruction: EditClock.now when no rule fired
    at it}) lets a sweep skip an instruction when nothing it or its operands (transitively) depend
    on was edited since: the rules read an instruction, its users, its operands' values and users,
    and what it calls (`tracker` knows when a computation was last edited)."""
    marks = {} if marks is None else marks
    tracker = tracker or ChangeTracker()
    changed = repeat_while_changing(lambda: _sweep(comp, state, marks, tracker), MAX_SWEEPS)
    if changed:
        _restore_operand_order(comp)
    return changed


def _sweep(comp: Computation, state: PassState, marks: dict, tracker: ChangeTracker) -> bool:
    """One post-order pass over `comp`; True if some rule fired."""
    changed = False
    rules_of = RULES.get
    cone: dict[Instruction, int] = {}  # latest edit of an instruction and what it reads, this sweep
    for inst in comp.post_order():
        latest = latest_edit_read(inst, cone, tracker)  # (for every instruction: it fills the cone)
        mark = marks.get(inst)
        if mark is not None and mark >= latest:
            continue
        rules = rules_of(inst.opcode)
        if not rules:
            continue
        if inst.parent is not comp or not _rewritable(inst, comp):
            continue
        if not _apply_rules(inst, rules, comp, state):
            marks[inst] = EditClock.now
            continue
        marks.pop(inst, None)
        changed = True
    return changed


def _apply_rules(inst: Instruction, rules, comp: Computation, state: PassState) -> bool:
    """Try `rules` on `inst` until one fires; whether one did."""
    ctx = RewriteContext(state, comp, inst)
    for rule in rules:
        new = rule(ctx, inst)
        if new is None:
            if ctx.created:
                ctx.discard_unused()
            continue
        if new is not inst:
            if not same_shape(new.shape, inst.shape):
                raise AssertionError(f"algsimp rule {rule.__name__} replaced {inst.name} ({inst.shape}) "
                                     f"by {new.name} ({new.shape})")
            replace(inst, new)
            ctx.discard_unused()
        else:  # changed in place: what reads it must look again
            touch_instruction(inst)
            for neighbour in inst.operands:
                touch_uses(neighbour)
            for neighbour in inst.users:
                touch_instruction(neighbour)
        return True
    return False


def _rewritable(inst: Instruction, comp: Computation) -> bool:
    if inst.opcode == Op.PARAMETER or inst.control_predecessors or is_control_predecessor(inst):
        return False
    if not inst.users and inst is not comp.root:
        return False  # dead: dce removes it
    if has_side_effect(inst):
        return False
    if _dynamic(inst.shape):
        return False
    for op in inst.operands:  # (a loop rather than any(): this runs for most instructions of a sweep)
        if _dynamic(op.shape):
            return False
    return True


def _dynamic(shape) -> bool:
    return shape.is_dynamic if shape.tuple_shapes is not None else True in shape.dynamic


def _fusion_bodies(module: Module) -> set[int]:
    return {id(inst.attrs["calls"]) for comp in module.computations for inst in comp.instructions
            if inst.opcode == Op.FUSION and inst.attrs.get("calls") is not None}


def _restore_operand_order(comp: Computation) -> None:
    """New instructions go right before the one they replace; if the text order was not
    operands-first to begin with, fall back to post order."""
    seen: set[int] = set()
    for inst in comp.instructions:
        if any(id(op) not in seen for op in inst.operands):
            comp.instructions = comp.post_order()
            return
        seen.add(id(inst))


