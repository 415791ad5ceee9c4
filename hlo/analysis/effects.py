"""What may never be removed, duplicated or reordered: side effects and control dependencies.

One definition for every layer above (passes, interpreter, code generator).
"""
from __future__ import annotations

from ..ir import Computation, Instruction
from ..opcodes import Op, Trait, ops_with

_SIDE_EFFECTS = ops_with(Trait.SIDE_EFFECT)
_RUN_AS_CODE = ops_with(Trait.RUNS_COMPUTATIONS_AS_CODE)


def has_side_effect(inst: Instruction) -> bool:
    """Instructions that must stay even when their value is unused (control flow included)."""
    opcode = inst.opcode
    if opcode in _SIDE_EFFECTS:
        return True
    if opcode == Op.CUSTOM_CALL and inst.attrs.get("custom_call_has_side_effect"):
        return True
    return opcode in _RUN_AS_CODE and any(
        has_side_effect(i) for c in inst.called_computations() for i in c.instructions)


def has_side_effect_anywhere(inst: Instruction) -> bool:
    """A side effect in the instruction or anywhere in the computations it calls (fusions, maps ...)."""
    return has_side_effect(inst) or any(computation_has_side_effect(c) for c in inst.called_computations())


def computation_has_side_effect(comp: Computation) -> bool:
    return any(has_side_effect_anywhere(i) for i in comp.instructions)


# --------------------------------------------------------------------------- control dependencies


def is_control_predecessor(inst: Instruction) -> bool:
    """Some instruction of the same computation must run after `inst`."""
    if not inst.control_successors:
        return False
    parent = inst.parent
    return parent is not None and any(successor.parent is parent for successor in inst.control_successors)


def has_control_dependencies(inst: Instruction) -> bool:
    """`inst` is ordered against other instructions beyond its operands: passes leave it in place."""
    return bool(inst._control_predecessors) or is_control_predecessor(inst)
