"""Shape rules of sort and topk."""
from __future__ import annotations

from ..opcodes import Op
from ..shapes import PRED, S32, Shape
from .computations import callee, need_params, parameter_note, root_note
from .core import SHAPE_RULES, OpView, array_shape, compatible, fmt, one_or_tuple, scalar_shape


@SHAPE_RULES.register(Op.SORT)
def _sort(op: OpView) -> Shape:
    shapes = [op.array(i) for i in range(op.n)]
    op.equal_dims(shapes)
    op.one_dimension_of(shapes[:1])
    comp, params, result = callee(op, "to_apply")
    need_params(op, comp, params, 2 * op.n, "to_apply", "two per operand")
    for k, p in enumerate(params):
        want = scalar_shape(shapes[k // 2].element_type)
        if not compatible(p, want):
            raise op.fail(f"comparator %{comp.name}: parameter {k} is {fmt(p)} but must be {fmt(want)} "
                          f"(an element of operand {k // 2})", attribute="to_apply", **parameter_note(comp, k))
    if not compatible(result, scalar_shape(PRED)):
        raise op.fail(f"comparator %{comp.name} of 'sort' must return pred[], but returns {fmt(result)}",
                      attribute="to_apply", **root_note(comp))
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
