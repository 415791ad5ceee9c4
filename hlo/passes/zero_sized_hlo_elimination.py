"""zero-sized-hlo-elimination: replace values with no elements by constants.

As XLA's ZeroSizedHloElimination: an instruction whose result is a static array
with a zero-sized dimension holds no data, so an (empty) constant of the same
shape can stand for it. Side-effecting instructions, constants and dead
instructions (dce removes those) are left as they are; a parameter stays (it is part of the signature) but its users read
the constant instead. Fusion computations are left alone, as in XLA.
"""
from __future__ import annotations

import numpy as np

from ..analysis.effects import has_control_dependencies, has_side_effect
from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from .base import Pass, register
from .rewrite import Rewriter, replace, rewrite_unfused_computations


@register
class ZeroSizedHloElimination(Pass):
    name = "zero-sized-hlo-elimination"
    description = "Replace instructions producing zero-element arrays by empty constants."

    incremental = True

    def run(self, module: Module) -> bool:
        return rewrite_unfused_computations(module, eliminate_zero_sized, self.each_computation)


def is_zero_element_array(inst: Instruction) -> bool:
    shape = inst.shape
    return (shape is not None and shape.is_array and not shape.is_dynamic
            and shape.element_count() == 0)


def eliminate_zero_sized(comp: Computation, rewriter: Rewriter) -> bool:
    if not any(_may_be_empty(inst.shape) for inst in comp.instructions):
        return False  # the usual case, found without ordering the computation
    changed = False
    for inst in comp.post_order():
        if inst.parent is not comp or not is_zero_element_array(inst):
            continue
        if inst.opcode == Op.CONSTANT or has_side_effect(inst) or has_control_dependencies(inst):
            continue
        if not inst.users and inst is not comp.root:
            continue  # nothing reads it: dce's business
        empty = np.zeros(inst.shape.dims, dtype=inst.shape.element_type.dtype)
        constant = rewriter.constant(comp, empty, inst.shape, before=_after(inst), like=inst)
        replace(inst, constant)
        changed = True
    return changed


def _may_be_empty(shape) -> bool:
    """An array shape with a zero-sized dimension: what is_zero_element_array needs, tested cheaply."""
    return shape is not None and shape.tuple_shapes is None and 0 in shape.dims


def _after(inst: Instruction):
    """The instruction following `inst` in text order (None: it is the last)."""
    instructions = inst.parent.instructions
    index = instructions.index(inst)
    return instructions[index + 1] if index + 1 < len(instructions) else None
