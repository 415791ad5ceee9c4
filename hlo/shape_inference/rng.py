"""Shape rules of random number generation: rng, rng-bit-generator, rng-get-and-update-state."""
from __future__ import annotations

from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES, Shape
from .core import SHAPE_RULES, OpView, array_shape, compatible, fmt

U64 = PRIMITIVE_TYPES["u64"]


@SHAPE_RULES.register(Op.RNG)
def _rng(op: OpView) -> Shape:
    op.need_operands(2, "two scalar parameters of the distribution")
    result = op.written_array()
    op.scalar(0)
    op.scalar(1)
    op.same_type(0, 1)
    t = op.shapes[0].element_type
    if result.element_type is not t:
        raise op.fail(f"'rng' produces elements of its parameters' type {t}, but is written as {fmt(result)}")
    distribution = op.attr("distribution")
    if distribution == "rng_normal" and not t.is_float:
        raise op.fail(f"rng_normal needs floating-point parameters, got {t}", operand=0)
    if distribution == "rng_uniform" and not (t.is_float or t.is_integral or t.is_pred):
        raise op.fail(f"rng_uniform needs floating-point, integer or pred parameters, got {t}", operand=0)
    return result


@SHAPE_RULES.register(Op.RNG_BIT_GENERATOR)
def _rng_bit_generator(op: OpView) -> Shape:
    state = op.array(0, "state")
    result = op.need_written()
    if result.is_tuple:
        if len(result.tuple_shapes) != 2:
            raise op.fail(f"'rng-bit-generator' returns (new state, random bits), but is written as {fmt(result)}")
        if not compatible(result.tuple_shapes[0], state):
            raise op.fail(f"the new state {fmt(result.tuple_shapes[0])} of 'rng-bit-generator' must have the shape "
                          f"of the state operand {fmt(state)}", operand=0)
    return result


@SHAPE_RULES.register(Op.RNG_GET_AND_UPDATE_STATE)
def _rng_get_and_update_state(op: OpView) -> Shape:
    return array_shape(U64, (2,))
