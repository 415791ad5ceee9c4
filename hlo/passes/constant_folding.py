"""constant-folding: evaluate instructions whose operands are all constants.

As XLA's HloConstantFolding (default level): an instruction is folded when at
least one operand is a constant and every operand is a constant, a broadcast of
a constant or an iota (looking through tuples). The interpreter computes the
value and a constant replaces the instruction. Not folded:

* parameters, constants, tuples (tuple constants help no backend), and
  instructions with a tuple result;
* broadcasts and iotas (they would materialise large constants; a broadcast of a
  constant is "simpler" kept as such), fft and while (slow to evaluate);
* rng, after-all and side-effecting instructions, collectives and asynchronous
  ops (their values depend on other devices or threads), or instructions calling
  computations that contain such instructions; instructions with control
  dependencies; dynamic-shaped results;
* results or operands larger than MAX_FOLD_ELEMENTS elements (XLA allows 45M;
  a Python interpreter wants a smaller bound);
* elided constants (`{...}`) and anything the interpreter fails on: left alone.

Fusion computations are not folded into (as XLA). The interpreter runs through
`analysis.evaluate_cone`.
"""
from __future__ import annotations

import numpy as np

from typing import Optional

from ..analysis.effects import has_control_dependencies, has_side_effect
from ..ir import CALLING_OPCODES, Computation, EditClock, Instruction, Module
from ..opcodes import Category, OPCODES, Op, Trait, ops_with
from .analysis import EvaluationError, evaluate_cone
from .base import Pass, register
from .cse import attributes_key
from .incremental import ChangeTracker
from .rewrite import Rewriter, is_dead, rewrite_unfused_computations

MAX_FOLD_ELEMENTS = 1_000_000
_NOT_FOLDABLE = ops_with(Trait.NOT_FOLDABLE)
_UNFOLDABLE_INSIDE = ops_with(Trait.UNFOLDABLE_INSIDE)


@register
class ConstantFolding(Pass):
    name = "constant-folding"
    description = "Evaluate instructions whose operands are all constants and replace them by constants."

    incremental = True

    def run(self, module: Module) -> bool:
        tracker = self.tracker or ChangeTracker()
        marks = tracker.instruction_marks(self.name)
        values = FoldedValues()
        return rewrite_unfused_computations(
            module, lambda comp, rewriter: fold_computation(comp, rewriter, marks, tracker, values),
            self.each_computation)


class FoldedValues:
    """Values computed in one run, by what computed them: inlined code repeats the same constant
    expressions (half of a large model's folds are repeats), and the interpreter is deterministic."""

    def __init__(self):
        self._values: dict = {}
        self._fingerprints: dict = {}

    def evaluate(self, inst: Instruction):
        """The value of `inst` (EvaluationError when the interpreter cannot compute it)."""
        try:
            key = self._key(inst)
            hash(key)
        except TypeError:  # something that cannot be compared safely (an elided constant ...)
            return evaluate_cone([inst])[0]
        known = self._values.get(key)
        if known is None:
            try:
                known = self._values[key] = ("value", evaluate_cone([inst])[0])
            except EvaluationError as err:
                known = self._values[key] = ("error", err)
        if known[0] == "error":
            raise known[1]
        return np.array(known[1], copy=True)  # each constant its own array

    def _key(self, inst: Instruction) -> tuple:
        """Equal for instructions computing the same value in the same way from the same constants."""
        return (inst.opcode, inst.shape, attributes_key(inst, self._fingerprints), inst.backend_config,
                tuple(self._key(op) for op in inst.operands))


def fold_computation(comp: Computation, rewriter: Rewriter, marks: Optional[dict] = None,
                     tracker: Optional[ChangeTracker] = None, values: Optional[FoldedValues] = None) -> bool:
    """Fold what can be folded in `comp`. `marks` ({instruction: EditClock.now when it was found
    not foldable}) skips an instruction when nothing the decision reads was edited since."""
    marks = {} if marks is None else marks
    tracker = tracker or ChangeTracker()
    values = values or FoldedValues()
    changed = False
    foldable_callees: dict[int, bool] = {}
    for inst in comp.post_order():
        mark = marks.get(inst)
        if mark is not None and mark >= _latest_edit_read(inst, tracker):
            continue
        if not _fold(inst, comp, rewriter, foldable_callees, values):
            marks[inst] = EditClock.now
            continue
        changed = True
    return changed


def _latest_edit_read(inst: Instruction, tracker: ChangeTracker) -> int:
    """The latest edit of what deciding to fold `inst` reads: `inst` and its uses, its operands
    (through tuples: the decision looks into them; what an operand is computed from is an edit of
    the operand) and what it calls."""
    latest = inst.edited
    if inst.uses_edited > latest:
        latest = inst.uses_edited
    for op in inst.operands:  # (_latest_operand_edit inlined: this runs for every instruction)
        edited = op.edited if op.opcode != Op.TUPLE else max(op.edited, _latest_operand_edit(op))
        if edited > latest:
            latest = edited
    if inst.opcode in CALLING_OPCODES:
        latest = max([latest] + [tracker.last_edit(c) for c in inst.called_computations()])
    return latest


def _latest_operand_edit(inst: Instruction) -> int:
    latest = 0
    for op in inst.operands:
        latest = max(latest, op.edited, _latest_operand_edit(op) if op.opcode == Op.TUPLE else 0)
    return latest


def _fold(inst: Instruction, comp: Computation, rewriter: Rewriter, foldable_callees: dict[int, bool],
          values: FoldedValues) -> bool:
    """Replace `inst` by a constant if it can be folded; whether it was."""
    if inst.parent is not comp or (not inst.users and inst is not comp.root):
        return False  # removed meanwhile, or dead
    if not _operands_allow_folding(inst) or not is_foldable(inst, foldable_callees):
        return False
    try:
        value = values.evaluate(inst)
    except EvaluationError:
        return False
    if np.shape(value) != tuple(inst.shape.dims):
        return False  # not what the instruction promises: leave it to the checker/interpreter
    constant = rewriter.constant(comp, value, inst.shape, before=inst, like=inst)
    _replace_and_remove_dead(inst, constant)
    return True


def _operands_allow_folding(inst: Instruction) -> bool:
    """_any_operand_constant(inst) and _all_operands_constant_like(inst), in one look at each operand."""
    any_constant = False
    for op in inst.operands:
        opcode = op.opcode
        if opcode == Op.CONSTANT:
            any_constant = True
        elif opcode == Op.TUPLE:
            if not _all_operands_constant_like(op):
                return False
            any_constant = any_constant or _any_operand_constant(op)
        elif not (opcode == Op.IOTA or (opcode == Op.BROADCAST and op.operands[0].opcode == Op.CONSTANT)):
            return False
    return any_constant


def _any_operand_constant(inst: Instruction) -> bool:
    return any(op.opcode == Op.CONSTANT or (op.opcode == Op.TUPLE and _any_operand_constant(op))
               for op in inst.operands)


def _all_operands_constant_like(inst: Instruction) -> bool:
    for op in inst.operands:
        if op.opcode == Op.TUPLE:
            if not _all_operands_constant_like(op):
                return False
        elif not (op.opcode == Op.CONSTANT or op.opcode == Op.IOTA
                  or (op.opcode == Op.BROADCAST and op.operands[0].opcode == Op.CONSTANT)):
            return False
    return True


def _evaluable_here(inst: Instruction) -> bool:
    """False for ops whose value depends on the device, other devices or other threads."""
    info = OPCODES.get(inst.opcode)
    return info is not None and info.category not in (Category.COLLECTIVE, Category.ASYNC)


def is_foldable(inst: Instruction, foldable_callees: dict[int, bool]) -> bool:
    if inst.opcode in _NOT_FOLDABLE:
        return False
    if inst.shape is None or not inst.shape.is_array or inst.shape.is_dynamic:
        return False
    if not _evaluable_here(inst):
        return False
    if has_side_effect(inst) or has_control_dependencies(inst):
        return False
    if inst.opcode == Op.PAD and inst.operands[0].opcode == Op.BROADCAST:
        return False  # slow to evaluate for little gain (XLA skips it too)
    if _too_large(inst):
        return False
    return all(_callee_foldable(c, foldable_callees) for c in inst.called_computations())


def _too_large(inst: Instruction) -> bool:
    operand_elements = sum(op.shape.element_count() for op in inst.operands if op.shape.is_array)
    return max(inst.shape.element_count(), operand_elements) > MAX_FOLD_ELEMENTS


def _callee_foldable(comp: Computation, cache: dict[int, bool]) -> bool:
    if id(comp) not in cache:
        cache[id(comp)] = True  # provisional, for recursive references
        cache[id(comp)] = all(
            i.opcode not in _UNFOLDABLE_INSIDE and _evaluable_here(i) and not has_side_effect(i)
            and all(_callee_foldable(c, cache) for c in i.called_computations())
            for i in comp.instructions)
    return cache[id(comp)]


def _replace_and_remove_dead(old: Instruction, new: Instruction) -> None:
    """Replace `old` by `new`, then remove `old` and the operands only it kept alive."""
    comp = old.parent
    old.replace_all_uses_with(new)
    work = [old]
    while work:
        inst = work.pop()
        if inst.parent is not comp or not is_dead(inst):
            continue
        operands = list(inst.operands)
        comp.remove(inst)
        work.extend(operands)
