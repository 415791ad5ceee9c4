"""result-caster: a dot or convolution whose result type is less precise than its operands'
is computed in the operands' common type, then converted (XLA:CPU's ResultCaster).

With operand-upcaster this leaves every dot and convolution with one element type, and
gives XLA:CPU's numbers for mixed types: dot(f32, f32) -> s32 sums in f32 and converts the
sum, dot(s8, s16) -> s8 sums in s16 (shape_inference/element_types.py).
"""
from __future__ import annotations

from ..ir import Module
from ..opcodes import Op
from ..shape_inference.element_types import higher_precision_type, product_types
from .base import Pass, register
from .rewrite import Rewriter, unfused_instructions


def is_product(inst) -> bool:
    """A dot or convolution with an array result (the ops that may mix element types)."""
    return ((inst.opcode == Op.DOT or inst.opcode == Op.CONVOLUTION) and len(inst.operands) == 2
            and inst.shape is not None and inst.shape.is_array)


def mixed_types(inst):
    """(lhs type, rhs type, the type the product is computed in) of a dot or convolution; None
    for other instructions."""
    if not is_product(inst):
        return None
    lhs, rhs = (op.shape.element_type for op in inst.operands)
    return lhs, rhs, product_types(lhs, rhs, inst.shape.element_type)


def _narrow_result(inst) -> bool:
    types = mixed_types(inst)
    return types is not None and types[2] is not inst.shape.element_type


@register
class ResultCaster(Pass):
    name = "result-caster"
    description = "Compute a dot or convolution with a less precise result type in its operands' type, then convert."

    def run(self, module: Module) -> bool:
        found = unfused_instructions(module, _narrow_result)
        rewriter = Rewriter(module)
        for inst in found:
            lhs, rhs, _ = mixed_types(inst)
            narrow = inst.shape
            after = inst.parent.instructions[inst.parent.instructions.index(inst) + 1] \
                if inst is not inst.parent.instructions[-1] else None
            convert = rewriter.add(inst.parent, Op.CONVERT, narrow, [], before=after, like=inst)
            inst.replace_all_uses_with(convert)
            convert.append_operand(inst)
            inst.shape = narrow.with_element_type(higher_precision_type(lhs, rhs))
        return bool(found)
