"""Shape rules of elementwise ops: unary and binary arithmetic, compare, select, clamp, the
conversions, reduce-precision.

The element types an op accepts and the result's element type come from the opcode table
(`OpInfo.operand_types`, `OpInfo.result_type`): an elementwise opcode without a rule of its
own here takes the generic rule, so a new one needs only its line in the table.
"""
from __future__ import annotations

from ..opcodes import ELEMENTWISE, Op, ResultType, Trait, TypeClass, has_trait
from ..shapes import PRED, PrimitiveType, Shape, complex_type_of, real_type_of
from .core import SHAPE_RULES, OpView, array_shape, fmt, retyped


def _elementwise(op: OpView) -> Shape:
    """The generic rule: operands of the same dimensions and element type, a type the table allows."""
    if op.n == 1:
        return _unary(op)
    if op.n == 2:
        return _binary(op)
    raise op.fail(f"no shape rule for {op.n}-operand elementwise opcode '{op.opcode}'")


def _unary(op: OpView) -> Shape:
    shape = op.types(0, op.info.operand_types)
    return retyped(shape, _result_type(op, shape.element_type))


def _binary(op: OpView) -> Shape:
    lhs = op.types(0, op.info.operand_types)
    rhs = op.types(1, op.info.operand_types)
    _same_dims(op, 0, 1)
    op.same_type(0, 1)
    dynamic = tuple(a or b for a, b in zip(lhs.dynamic, rhs.dynamic))
    return Shape(_result_type(op, lhs.element_type), lhs.dims, dynamic, None, None)


def _result_type(op: OpView, operand_type: PrimitiveType) -> PrimitiveType:
    """The result element type the table gives the op, for operands of `operand_type`."""
    kind = op.info.result_type
    if kind is ResultType.PRED:
        return PRED
    if kind is ResultType.REAL_PART:
        return real_type_of(operand_type)
    if kind is ResultType.WRITTEN:
        return op.written_array().element_type
    return operand_type


def _same_dims(op: OpView, i: int, j: int) -> None:
    a, b = op.shapes[i], op.shapes[j]
    if a.dims != b.dims:
        raise op.fail(f"operands of '{op.opcode}' must have identical dimensions (HLO has no implicit "
                      f"broadcasting; use an explicit broadcast): operand {i} is {fmt(a)} but operand {j} "
                      f"is {fmt(b)}", operand=j)


@SHAPE_RULES.register(Op.COMPLEX)
def _complex(op: OpView) -> Shape:
    shape = _binary(op)
    if shape.element_type.name not in ("f32", "f64"):
        raise op.fail(f"'complex' builds c64 from f32 or c128 from f64 parts, but its operands are "
                      f"{fmt(op.shapes[0])}", operand=0)
    return retyped(shape, complex_type_of(shape.element_type))


@SHAPE_RULES.register(Op.COMPARE)
def _compare(op: OpView) -> Shape:
    shape = _binary(op)
    t = op.shapes[0].element_type
    kind = op.inst.attrs.get("type")
    if kind is not None:
        if t.is_float:
            allowed = ("FLOAT", "TOTALORDER")
        elif t.is_complex:
            allowed = ("FLOAT",)
        else:
            allowed = ("SIGNED" if t.is_signed_int else "UNSIGNED",)  # pred compares as unsigned
        if kind not in allowed:
            raise op.fail(f"compare type={kind} does not fit {t} operands; expected "
                          f"{' or '.join(allowed)}", attribute="type")
    return shape


@SHAPE_RULES.register(Op.SELECT)
def _select(op: OpView) -> Shape:
    pred = op.array(0, "predicate")
    on_true = op.array(1, "on_true")
    op.array(2, "on_false")
    if not pred.element_type.is_pred:
        raise op.fail(f"operand 0 (predicate) of 'select' must have pred elements, but it is {fmt(pred)}",
                      operand=0)
    op.same_type(1, 2, ("on_true", "on_false"))
    _same_dims(op, 1, 2)
    if pred.dims != on_true.dims:
        raise op.fail(f"the predicate of 'select' must have the dimensions of its values (HLO has no implicit "
                      f"broadcasting): operand 0 is {fmt(pred)} but operand 1 is {fmt(on_true)}", operand=0)
    return on_true


@SHAPE_RULES.register(Op.CLAMP)
def _clamp(op: OpView) -> Shape:
    roles = ("min", "operand", "max")
    for i, role in enumerate(roles):
        op.types(i, TypeClass.ANY, role)
    x = op.shapes[1]
    for i in (0, 2):
        op.same_type(1, i, (roles[1], roles[i]))
        bound = op.shapes[i]
        if bound.rank != 0 and bound.dims != x.dims:
            raise op.fail(f"operand {i} ({roles[i]}) of 'clamp' must be a scalar or have the operand's "
                          f"dimensions: it is {fmt(bound)} but operand 1 is {fmt(x)}", operand=i)
    return x


@SHAPE_RULES.register(Op.CONVERT)
def _convert(op: OpView) -> Shape:
    operand = op.array(0)
    target = op.written_array()
    return retyped(operand, target.element_type)


@SHAPE_RULES.register(Op.BITCAST_CONVERT)
def _bitcast_convert(op: OpView) -> Shape:
    operand = op.array(0)
    target = op.written_array().element_type
    source = operand.element_type
    if source.is_complex != target.is_complex:
        raise op.fail(f"'bitcast-convert' cannot convert between complex and real types: "
                      f"{fmt(operand)} to {target}", operand=0)
    small, large = sorted((source.bits, target.bits))
    if small == 0 or large % small:
        raise op.fail(f"'bitcast-convert' needs bit widths that divide each other: {source} has "
                      f"{source.bits} bits, {target} has {target.bits}", operand=0)
    ratio = large // small
    if source.bits > target.bits:
        return array_shape(target, operand.dims + (ratio,), operand.dynamic + (False,))
    if source.bits < target.bits:
        if operand.rank < 1 or operand.dims[-1] != ratio:
            raise op.fail(f"'bitcast-convert' from {source} to {target} packs {ratio} elements into one, so the "
                          f"operand's last dimension must be {ratio}, but the operand is {fmt(operand)}",
                          operand=0)
        return array_shape(target, operand.dims[:-1], operand.dynamic[:-1])
    return retyped(operand, target)


@SHAPE_RULES.register(Op.STOCHASTIC_CONVERT)
def _stochastic_convert(op: OpView) -> Shape:
    operand = op.types(0, TypeClass.FLOAT)
    random = op.types(1, TypeClass.UINT, "random bits")
    if operand.element_type.bits != random.element_type.bits:
        raise op.fail(f"the random bits of 'stochastic-convert' must be as wide as the operand: "
                      f"{fmt(random)} vs {fmt(operand)}", operand=1)
    _same_dims(op, 0, 1)
    return retyped(operand, op.written_array().element_type)


@SHAPE_RULES.register(Op.REDUCE_PRECISION)
def _reduce_precision(op: OpView) -> Shape:
    shape = op.types(0, TypeClass.FLOAT)
    if op.int_attr("exponent_bits") < 1:
        raise op.fail(f"exponent_bits must be at least 1, got {op.int_attr('exponent_bits')}",
                      attribute="exponent_bits")
    if op.int_attr("mantissa_bits") < 0:
        raise op.fail(f"mantissa_bits must not be negative, got {op.int_attr('mantissa_bits')}",
                      attribute="mantissa_bits")
    return shape


# Every other elementwise opcode takes the generic rule. (Pass-through ops such as copy have
# their rule in transfers.py: their operand may be a tuple.)
for _opcode in sorted(ELEMENTWISE):
    if _opcode not in SHAPE_RULES and not has_trait(_opcode, Trait.PASS_THROUGH):
        SHAPE_RULES.add(_opcode, _elementwise)
