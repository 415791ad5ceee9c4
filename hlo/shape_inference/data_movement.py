"""Shape rules of data movement: leaves (parameter, constant, iota), broadcast, the reshapes,
transpose, reverse, slice, concatenate, pad, tuples, bitcast and the dimension sizes.

(copy's rule, "the value is operand 0", is the pass-through rule in transfers.py.)
"""
from __future__ import annotations

from ..attributes import format_int_list
from ..opcodes import Op, TypeClass
from ..shapes import S32, UNBOUNDED, Shape
from .core import (SHAPE_RULES, OpView, array_shape, compatible, dims_in_range, dims_unique, element_count,
                   fmt, in_class, is_int, retyped, scalar_shape)


@SHAPE_RULES.register(Op.PARAMETER)
def _parameter_rule(op: OpView) -> Shape:
    number = op.inst.attrs.get("parameter_number")
    if not is_int(number) or number < 0:
        raise op.fail("parameter needs a non-negative parameter number: parameter(N)")
    return op.need_written()


@SHAPE_RULES.register(Op.CONSTANT)
def _constant(op: OpView) -> Shape:
    shape = op.need_written()
    literal = op.inst.attrs.get("literal")
    if literal is not None and literal.shape is not None and not compatible(literal.shape, shape):
        raise op.fail(f"the literal of 'constant' has shape {fmt(literal.shape)} but the instruction is "
                      f"written as {fmt(shape)}")
    return shape


@SHAPE_RULES.register(Op.IOTA)
def _iota(op: OpView) -> Shape:
    shape = op.written_array()
    if shape.rank == 0:
        raise op.fail("'iota' cannot produce a scalar; its result needs at least one dimension")
    if not in_class(shape.element_type, TypeClass.NUMBER):
        raise op.fail(f"'iota' produces {TypeClass.NUMBER.words()} elements, not {shape.element_type}")
    d = op.int_attr("iota_dimension")
    if not 0 <= d < shape.rank:
        raise op.fail(f"iota_dimension={d} is out of range for {fmt(shape)} (valid: 0..{shape.rank - 1})",
                      attribute="iota_dimension")
    return shape


@SHAPE_RULES.register(Op.BITCAST)
def _bitcast(op: OpView) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    operand_bits = element_count(operand.dims) * operand.element_type.bits
    result_bits = element_count(result.dims) * result.element_type.bits
    if result_bits != operand_bits:
        raise op.fail(f"'bitcast' must keep the buffer size: the operand {fmt(operand)} has {operand_bits} bits but "
                      f"the result {fmt(result)} has {result_bits}", operand=0)
    return result


@SHAPE_RULES.register(Op.BROADCAST)
def _broadcast(op: OpView) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    dims = op.int_list("dimensions")
    if len(dims) != operand.rank:
        raise op.fail(f"'broadcast' needs one entry in dimensions= per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but dimensions={format_int_list(dims)} has {len(dims)}",
                      attribute="dimensions")
    dims_in_range(op, dims, result.rank, "dimensions", f"the result {fmt(result)}")
    dims_unique(op, dims, "dimensions")
    for k, d in enumerate(dims):
        if result.dims[d] != operand.dims[k]:
            raise op.fail(f"'broadcast' maps operand dimension {k} (size {operand.dims[k]}) to result dimension "
                          f"{d}, which has size {result.dims[d]} in {fmt(result)}; sizes must be equal",
                          attribute="dimensions")
    return retyped(result, operand.element_type)


@SHAPE_RULES.register(Op.RESHAPE)
def _reshape(op: OpView) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    _same_count(op, operand, result)
    return retyped(result, operand.element_type)


def _same_count(op: OpView, operand: Shape, result: Shape) -> None:
    if UNBOUNDED in operand.dims or UNBOUNDED in result.dims:
        return
    if element_count(operand.dims) != element_count(result.dims):
        raise op.fail(f"'{op.opcode}' must keep the element count: the operand {fmt(operand)} has "
                      f"{element_count(operand.dims)} elements but the result {fmt(result)} has "
                      f"{element_count(result.dims)}")


@SHAPE_RULES.register(Op.DYNAMIC_RESHAPE)
def _dynamic_reshape(op: OpView) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    op.need_operands(result.rank + 1, f"the operand and one size per result dimension of {fmt(result)}")
    for i in range(1, op.n):
        _size_operand(op, i)
    _same_count(op, operand, result)
    return retyped(result, operand.element_type)


def _size_operand(op: OpView, i: int) -> None:
    size = op.scalar(i, "size")
    if size.element_type is not S32:
        raise op.fail(f"operand {i} (size) of '{op.opcode}' must be s32[], but it is {fmt(size)}", operand=i)


@SHAPE_RULES.register(Op.TRANSPOSE)
def _transpose(op: OpView) -> Shape:
    operand = op.array(0)
    perm = op.int_list("dimensions")
    if sorted(perm) != list(range(operand.rank)):
        raise op.fail(f"transpose dimensions={format_int_list(perm)} must be a permutation of 0..{operand.rank - 1} "
                      f"(the operand is {fmt(operand)})" if operand.rank else
                      f"transpose dimensions={format_int_list(perm)} must be empty for the scalar operand "
                      f"{fmt(operand)}",
                      attribute="dimensions")
    return array_shape(operand.element_type, [operand.dims[p] for p in perm], [operand.dynamic[p] for p in perm])


@SHAPE_RULES.register(Op.REVERSE)
def _reverse(op: OpView) -> Shape:
    operand = op.array(0)
    dims = op.int_list("dimensions")
    dims_in_range(op, dims, operand.rank, "dimensions", f"the operand {fmt(operand)}")
    dims_unique(op, dims, "dimensions")
    return operand


@SHAPE_RULES.register(Op.SLICE)
def _slice(op: OpView) -> Shape:
    operand = op.array(0)
    ranges = op.attr("slice")
    if len(ranges) != operand.rank:
        raise op.fail(f"'slice' needs one [start:limit] range per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but slice= has {len(ranges)}", attribute="slice")
    dims, dynamic = [], []
    for d, (start, limit, stride) in enumerate(ranges):
        stride = 1 if stride is None else stride
        text = f"[{start}:{limit}]" if stride == 1 else f"[{start}:{limit}:{stride}]"
        if not (0 <= start <= limit <= operand.dims[d]):
            raise op.fail(f"slice range {text} of dimension {d} must satisfy 0 <= start <= limit <= "
                          f"{operand.dims[d]} (the operand is {fmt(operand)})", attribute="slice")
        if stride < 1:
            raise op.fail(f"slice stride of dimension {d} must be positive, got {stride}", attribute="slice")
        size = (limit - start + stride - 1) // stride
        dims.append(size)
        dynamic.append(operand.dynamic[d] and size != 1)
    return array_shape(operand.element_type, dims, dynamic)


@SHAPE_RULES.register(Op.CONCATENATE)
def _concatenate(op: OpView) -> Shape:
    first = op.array(0)
    d = op.one_dimension()
    if first.rank == 0:
        raise op.fail(f"'concatenate' cannot join scalars: operand 0 is {fmt(first)}", operand=0)
    dims_in_range(op, [d], first.rank, "dimensions", f"operand 0 {fmt(first)}")
    size = first.dims[d]
    for i in range(1, op.n):
        shape = op.array(i)
        op.same_type(0, i)
        if shape.rank != first.rank or any(a != b for k, (a, b) in enumerate(zip(shape.dims, first.dims)) if k != d):
            raise op.fail(f"operands of 'concatenate' must have equal dimensions except dimension {d}: "
                          f"operand 0 is {fmt(first)} but operand {i} is {fmt(shape)}", operand=i)
        size += shape.dims[d]
    dims = list(first.dims)
    dims[d] = size
    dynamic = [any(op.shapes[i].dynamic[k] for i in range(op.n)) for k in range(first.rank)]
    return array_shape(first.element_type, dims, dynamic)


@SHAPE_RULES.register(Op.PAD)
def _pad(op: OpView) -> Shape:
    operand = op.array(0)
    op.scalar(1, "padding value")
    op.same_type(0, 1, ("", "padding value"))
    config = op.attr("padding")
    if len(config) != operand.rank:
        raise op.fail(f"'pad' needs one low_high_interior entry per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but padding= has {len(config)}", attribute="padding")
    dims = []
    for d, (lo, hi, interior) in enumerate(config):
        if interior < 0:
            raise op.fail(f"interior padding of dimension {d} must not be negative, got {interior}",
                          attribute="padding")
        n = operand.dims[d]
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise op.fail(f"padding {lo}_{hi}_{interior} of dimension {d} (size {n}) gives a negative size "
                          f"{size}", attribute="padding")
        dims.append(size)
    return array_shape(operand.element_type, dims, operand.dynamic)


@SHAPE_RULES.register(Op.TUPLE)
def _tuple_rule(op: OpView) -> Shape:
    return Shape.tuple_of(op.shapes)


@SHAPE_RULES.register(Op.GET_TUPLE_ELEMENT)
def _get_tuple_element(op: OpView) -> Shape:
    shape = op.shapes[0]
    index = op.int_attr("index")
    if not shape.is_tuple:
        raise op.fail(f"'get-tuple-element' needs a tuple operand, but operand 0 is {fmt(shape)}", operand=0)
    if not 0 <= index < len(shape.tuple_shapes):
        raise op.fail(f"index={index} is out of range for the {len(shape.tuple_shapes)}-element tuple "
                      f"{fmt(shape)}", attribute="index", operand=0)
    return shape.tuple_shapes[index]


@SHAPE_RULES.register(Op.GET_DIMENSION_SIZE)
def _get_dimension_size(op: OpView) -> Shape:
    operand = op.array(0)
    d = op.one_dimension_of([operand])
    if operand.dims[d] > 2**31 - 1:
        raise op.fail(f"dimension {d} of {fmt(operand)} does not fit in s32", attribute="dimensions")
    return scalar_shape(S32)


@SHAPE_RULES.register(Op.SET_DIMENSION_SIZE)
def _set_dimension_size(op: OpView) -> Shape:
    operand = op.array(0)
    _size_operand(op, 1)
    d = op.one_dimension_of([operand])
    dynamic = list(operand.dynamic)
    dynamic[d] = True
    return array_shape(operand.element_type, operand.dims, dynamic)
