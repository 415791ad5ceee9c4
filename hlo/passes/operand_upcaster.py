"""operand-upcaster: the operands of a dot or convolution whose result type can hold them
both are converted to the result type (XLA:CPU's OperandUpcaster); result-caster handles
the other mixed products, so after both every product has a single element type."""
from __future__ import annotations

from ..ir import Module
from ..opcodes import Op
from .base import Pass, register
from .result_caster import mixed_types
from .rewrite import Rewriter, unfused_instructions


def _mixed_operands(inst) -> bool:
    types = mixed_types(inst)
    return types is not None and types[2] is inst.shape.element_type and (types[0], types[1]) != (types[2], types[2]) \
        and not _narrow_integer_product(*types)


def _narrow_integer_product(a, b, out) -> bool:
    """Both operands of one integer type narrower than an integer result that holds it (the
    quantised int8 dot and convolution): every backend multiplies them in the result type as
    they are, which is the same product, and the compiled one has kernels for exactly this
    case (contraction.py); converting first would only cost memory and those kernels."""
    return a is b and a.is_integral and out.is_integral and a.bits < out.bits \
        and (out.is_signed_int or a.is_unsigned_int)


@register
class OperandUpcaster(Pass):
    name = "operand-upcaster"
    description = "Convert the operands of a dot or convolution to its result type when that type can hold them."

    def run(self, module: Module) -> bool:
        found = unfused_instructions(module, _mixed_operands)
        rewriter = Rewriter(module)
        for inst in found:
            result = inst.shape.element_type
            for i, op in enumerate(list(inst.operands)):
                if op.shape.element_type is not result:
                    shape = op.shape.with_element_type(result)
                    inst.replace_operand(i, rewriter.add(inst.parent, Op.CONVERT, shape, [op], before=inst, like=inst))
        return bool(found)
