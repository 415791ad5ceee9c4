"""XLA's element-type precedence, for the ops that take operands of different types.

dot, convolution and ragged-dot accept operands of any two array types and a written
(preferred) result type of any array type. Without a written type the result has the
"higher precision" of the two (XLA's primitive_util::HigherPrecisionType): complex over
real, then a larger float range, then a wider significand, then more bits, then signed
over unsigned; so s8 x s16 -> s16, u8 x s8 -> s8, f16 x bf16 -> bf16, s32 x f16 -> f16.

How XLA:CPU computes a mixed product (OperandUpcaster, ResultCaster): when the result type
is at least as precise as the operands' common type, both operands are converted to the
result type and the product is computed there; otherwise it is computed in the common
type and converted to the result type at the end (`product_types`).
"""
from __future__ import annotations

from functools import lru_cache

import ml_dtypes

from ..shapes import PrimitiveType, real_type_of


@lru_cache(maxsize=None)
def _precision_key(t: PrimitiveType) -> tuple:
    component = real_type_of(t)
    if component.is_float:
        info = ml_dtypes.finfo(component.dtype)
        overflow_exponent, significand = int(info.maxexp), int(info.nmant) + 1
    else:
        overflow_exponent = significand = -1
    bits = 1 if component.is_pred else component.bits
    return (t.is_complex, overflow_exponent, significand, bits, component.is_signed_int)


def higher_precision_type(a: PrimitiveType, b: PrimitiveType) -> PrimitiveType:
    """The more precise of two array element types (a when they rank equal)."""
    return b if _precision_key(b) > _precision_key(a) else a


def can_upcast(source: PrimitiveType, target: PrimitiveType) -> bool:
    """True if `target` is at least as precise as `source` (XLA's ElementCanUpcast)."""
    return higher_precision_type(source, target) is target


def product_types(lhs: PrimitiveType, rhs: PrimitiveType, result: PrimitiveType) -> PrimitiveType:
    """The type a dot or convolution of lhs x rhs giving `result` is computed in: the result
    type when it can hold the operands' common type, else that common type."""
    common = higher_precision_type(lhs, rhs)
    return result if can_upcast(common, result) else common
