"""Shape rules of sort and topk."""
from __future__ import annotations

from ..opcodes import Op
from ..shapes import S32, Shape
from .computations import callee, check_parameters, check_returns_pred, need_params
from .core import SHAPE_RULES, OpView, array_shape, fmt, one_or_tuple, scalar_shape


@SHAPE_RULES.register(Op.SORT)
def _sort(op: OpView) -> Shape:
    shapes = [op.array(i) for i in range(op.n)]
    op.equal_dims(shapes)
    op.one_dimension_of(shapes[:1])
    comp, params, result = callee(op, "to_apply")
    need_params(op, comp, params, 2 * op.n, "to_apply", "two per operand")
    wants = [scalar_shape(shapes[k // 2].element_type) for k in range(len(params))]
    reasons = [f"an element of operand {k // 2}" for k in range(len(params))]
    check_parameters(op, comp, params, wants, "to_apply", f"comparator %{comp.name}", reasons)
    check_returns_pred(op, comp, result, "to_apply", f"comparator %{comp.name} of 'sort'")
    return one_or_tuple(shapes)


@SHAPE_RULES.register(Op.TOPK)
def _topk(op: OpView) -> Shape:
    operand = op.array(0)
    k = op.int_attr("k")
    if operand.rank < 1:
        raise op.fail(f"'topk' needs an operand with at least one dimension, got {fmt(operand)}", operand=0)
    if not 0 <= k <= operand.dims[-1]:
        raise op.fail(f"k={k} must be in [0, {operand.dims[-1]}], the size of the last dimension of "
                      f"{fmt(operand)}", attribute="k")
    dims = operand.dims[:-1] + (k,)
    return Shape.tuple_of([array_shape(operand.element_type, dims), array_shape(S32, dims)])
