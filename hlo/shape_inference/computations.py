"""Called computations: signatures, parameters and reducers, as the rules that call them check them."""
from __future__ import annotations

from typing import Optional, Sequence

from ..opcodes import Op
from ..shapes import PRED, PrimitiveType, Shape
from .core import OpView, ShapeError, compatible, counted, fmt, scalar_shape


def _parameters(comp) -> list:
    return [i for i in comp.instructions if i.opcode == Op.PARAMETER]


def numbered_parameters(comp) -> Optional[list]:
    """The parameters in number order; None unless they are numbered 0..N-1 (the checker reports that)."""
    params = _parameters(comp)
    numbers = sorted(p.attrs.get("parameter_number", -1) for p in params)
    if numbers != list(range(len(params))):
        return None
    return sorted(params, key=lambda p: p.attrs["parameter_number"])


def signature(comp) -> tuple[list[Shape], Shape]:
    """(parameter shapes by number, root shape) of a computation; ShapeError(secondary) if malformed."""
    params = numbered_parameters(comp)
    if params is None:
        raise ShapeError(f"computation %{comp.name} has invalid parameter numbers", secondary=True)
    if comp.root is None or comp.root.shape is None or any(p.shape is None for p in params):
        raise ShapeError(f"computation %{comp.name} has no root or an instruction without shape", secondary=True)
    return [p.shape for p in params], comp.root.shape


def signature_for(comp, attribute: str) -> tuple[list[Shape], Shape]:
    """`signature(comp)`, blaming `attribute` (the one naming the computation) when it is malformed."""
    try:
        return signature(comp)
    except ShapeError as exc:
        exc.attribute = attribute
        raise


def parameter_numbered(comp, number: int):
    """Parameter `number` of `comp` (for a note), or the computation itself when there is none."""
    for p in _parameters(comp):
        if p.attrs.get("parameter_number") == number:
            return p
    return comp


def callee(op: OpView, attribute: str) -> tuple[object, list[Shape], Shape]:
    """(computation, parameter shapes, result shape) of the computation attribute `attribute`."""
    comp = op.computation(attribute)
    params, result = signature_for(comp, attribute)
    return comp, params, result


def need_params(op: OpView, comp, params: list, count: int, attribute: str, what: str = "") -> None:
    if len(params) != count:
        detail = f" ({what})" if what else ""
        raise op.fail(f"{attribute} computation %{comp.name} must take {counted(count, 'parameter')}{detail}, "
                      f"but it takes {len(params)}",
                      attribute=attribute, related=comp)


def check_operands_match_parameters(op: OpView, comp, params: list[Shape], attribute: str,
                                     first_operand: int = 0) -> None:
    for k, pshape in enumerate(params):
        i = first_operand + k
        if not compatible(op.shapes[i], pshape):
            raise op.fail(f"operand {i} of '{op.opcode}' has shape {fmt(op.shapes[i])} but parameter {k} of "
                          f"{attribute} computation %{comp.name} has shape {fmt(pshape)}",
                          operand=i, **parameter_note(comp, k))


def parameter_note(comp, number: int) -> dict:
    """ShapeError fields for a note at parameter `number` of `comp`."""
    return {"related": parameter_numbered(comp, number), "note": f"parameter {number} of %{comp.name} is declared here"}


def check_parameters(op: OpView, comp, params: list[Shape], wants: list[Shape], attribute: str, what: str,
                     reasons: list[str]) -> None:
    """Parameter k of `comp` (called `what` in messages) is wants[k], for reasons[k]."""
    for k, (p, want) in enumerate(zip(params, wants)):
        if not compatible(p, want):
            raise op.fail(f"{what}: parameter {k} is {fmt(p)} but must be {fmt(want)} ({reasons[k]})",
                          attribute=attribute, **parameter_note(comp, k))


def check_returns_pred(op: OpView, comp, result: Shape, attribute: str, what: str) -> None:
    """`comp` (called `what` in messages) returns pred[]: a comparator, a loop condition."""
    if not compatible(result, scalar_shape(PRED)):
        raise op.fail(f"{what} must return pred[], but returns {fmt(result)}", attribute=attribute,
                      **root_note(comp))


def root_note(comp) -> dict:
    """ShapeError fields for a note at the ROOT of `comp`."""
    return {"related": comp.root if comp.root is not None else comp,
            "note": f"the ROOT of %{comp.name} is here"}


def check_reducer(op: OpView, attribute: str, init_shapes: list[Shape], input_types: list[PrimitiveType],
                  roles: tuple[str, str] = ("init value", "input"),
                  init_operands: Optional[Sequence[int]] = None) -> list[Shape]:
    """Check a reduction computation (XLA VerifyReducerShape, strict element types).

    N = len(init_shapes): the computation takes (acc_0..acc_N-1, x_0..x_N-1) scalars and
    returns a scalar (N = 1) or an N-tuple of scalars; acc_i, x_i, result_i and init_i all
    have input i's element type. Returns the result component shapes.
    """
    comp, params, result = callee(op, attribute)
    n = len(init_shapes)
    need_params(op, comp, params, 2 * n, attribute, f"{counted(n, 'accumulator')} then {counted(n, 'value')}")
    if n == 1 and not result.is_tuple:
        components = [result]
    elif result.is_tuple and len(result.tuple_shapes) == n:
        components = list(result.tuple_shapes)
    else:
        expected = "a scalar" if n == 1 else f"a tuple of {n} scalars"
        raise op.fail(f"{attribute} computation %{comp.name} must return {expected}, but returns {fmt(result)}",
                      attribute=attribute, **root_note(comp))
    for i in range(n):
        want = scalar_shape(input_types[i])
        checks = [(components[i], f"result {i}" if n > 1 else "its result", root_note(comp)),
                  (params[i], f"parameter {i} (accumulator)", parameter_note(comp, i)),
                  (params[n + i], f"parameter {n + i} (value)", parameter_note(comp, n + i))]
        for shape, what, where in checks:
            if not compatible(shape, want):
                raise op.fail(f"{attribute} computation %{comp.name}: {what} is {fmt(shape)} but {roles[1]} {i} "
                              f"has element type {input_types[i]}, so it must be {fmt(want)}",
                              attribute=attribute, **where)
        if not compatible(init_shapes[i], want):
            where = init_operands[i] if init_operands is not None else None
            raise op.fail(f"{roles[0]} {i} of '{op.opcode}' is {fmt(init_shapes[i])} but must be {fmt(want)} "
                          f"(a scalar of {roles[1]} {i}'s element type)", operand=where)
    return components
