"""Shape rules of linear algebra: fft, cholesky, triangular-solve and the batch-norm ops."""
from __future__ import annotations

from typing import Sequence

from ..attributes import format_int_list
from ..opcodes import Op, TypeClass
from ..shapes import Shape, complex_type_of, real_type_of
from .core import SHAPE_RULES, OpView, array_shape, fmt


@SHAPE_RULES.register(Op.FFT)
def _fft(op: OpView) -> Shape:
    operand = op.array(0)
    kind = op.attr("fft_type")
    lengths = op.int_list("fft_length")
    rank = len(lengths)
    if not 1 <= rank <= 3:
        raise op.fail(f"fft_length={format_int_list(lengths)} must have 1 to 3 entries", attribute="fft_length")
    if operand.rank < rank:
        raise op.fail(f"an fft over {rank} dimensions needs an operand of rank >= {rank}, got {fmt(operand)}",
                      operand=0)
    inner = operand.dims[operand.rank - rank:]
    t = operand.element_type
    if kind in ("FFT", "IFFT"):
        if not t.is_complex:
            raise op.fail(f"{kind} needs a complex operand, got {fmt(operand)}", operand=0)
        return operand
    if kind == "RFFT":
        if t.name not in ("f32", "f64"):
            raise op.fail(f"RFFT needs an f32 or f64 operand, got {fmt(operand)}", operand=0)
        if tuple(inner) != lengths:
            raise op.fail(f"RFFT needs the innermost dimensions of {fmt(operand)} to equal fft_length="
                          f"{format_int_list(lengths)}", attribute="fft_length")
        dims = list(operand.dims)
        if lengths[-1] != 0:
            dims[-1] = lengths[-1] // 2 + 1
        return array_shape(complex_type_of(t), dims)
    if not t.is_complex:
        raise op.fail(f"IRFFT needs a complex operand, got {fmt(operand)}", operand=0)
    if tuple(inner[:-1]) != lengths[:-1]:
        raise op.fail(f"IRFFT needs the innermost dimensions of {fmt(operand)} but the last to equal "
                      f"{format_int_list(lengths[:-1])}", attribute="fft_length")
    last = operand.dims[-1]
    if (last != 0 or lengths[-1] != 0) and last != lengths[-1] // 2 + 1:
        raise op.fail(f"IRFFT with fft_length={format_int_list(lengths)} needs the last dimension of the operand to be "
                      f"{lengths[-1] // 2 + 1}, but the operand is {fmt(operand)}", attribute="fft_length")
    return array_shape(real_type_of(t), operand.dims[:-1] + (lengths[-1],))


# --------------------------------------------------------------------------- factorisations and solves


def _square_matrices(op: OpView, i: int, role: str) -> Shape:
    shape = op.types(i, TypeClass.INEXACT, role)
    if shape.rank < 2:
        raise op.fail(f"operand {i} ({role}) of '{op.opcode}' must have rank >= 2, got {fmt(shape)}", operand=i)
    if shape.dims[-1] != shape.dims[-2]:
        raise op.fail(f"the two minor dimensions of operand {i} ({role}) of '{op.opcode}' must be equal (square "
                      f"matrices), got {fmt(shape)}", operand=i)
    return shape


@SHAPE_RULES.register(Op.CHOLESKY)
def _cholesky(op: OpView) -> Shape:
    return _square_matrices(op, 0, "a")


@SHAPE_RULES.register(Op.TRIANGULAR_SOLVE)
def _triangular_solve(op: OpView) -> Shape:
    a = _square_matrices(op, 0, "a")
    b = op.types(1, TypeClass.INEXACT, "b")
    op.same_type(0, 1, ("a", "b"))
    if b.rank != a.rank:
        raise op.fail(f"'triangular-solve' needs a and b of equal rank, got {fmt(a)} and {fmt(b)}", operand=1)
    left = bool(op.attr("left_side"))
    shared = b.dims[-2] if left else b.dims[-1]
    if shared != a.dims[-1]:
        which = "second-to-last" if left else "last"
        raise op.fail(f"with left_side={'true' if left else 'false'} the {which} dimension of b {fmt(b)} must equal "
                      f"the size {a.dims[-1]} of a {fmt(a)}", operand=1)
    if a.dims[:-2] != b.dims[:-2]:
        raise op.fail(f"the batch dimensions of a {fmt(a)} and b {fmt(b)} must be equal", operand=1)
    if op.attr("transpose_a") not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise op.fail("'triangular-solve' needs transpose_a=NO_TRANSPOSE, TRANSPOSE or ADJOINT",
                      attribute="transpose_a")
    return b


# --------------------------------------------------------------------------- batch normalisation


def _feature_count(op: OpView, operand: Shape) -> int:
    index = op.int_attr("feature_index")
    if not 0 <= index < operand.rank:
        raise op.fail(f"feature_index={index} is out of range for the operand {fmt(operand)}",
                      attribute="feature_index")
    return operand.dims[index]


def _feature_vectors(op: OpView, operands: Sequence[tuple[int, str]], features: int) -> None:
    for i, role in operands:
        shape = op.array(i, role)
        op.same_type(0, i, ("operand", role))
        if shape.dims != (features,):
            raise op.fail(f"operand {i} ({role}) of '{op.opcode}' must be a vector of the {features} features, "
                          f"{fmt(array_shape(shape.element_type, (features,)))}, but it is {fmt(shape)}", operand=i)


@SHAPE_RULES.register(Op.BATCH_NORM_TRAINING)
def _batch_norm_training(op: OpView) -> Shape:
    operand = op.types(0, TypeClass.FLOAT, "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "offset")), features)
    vector = array_shape(operand.element_type, (features,))
    return Shape.tuple_of([operand, vector, vector])


@SHAPE_RULES.register(Op.BATCH_NORM_INFERENCE)
def _batch_norm_inference(op: OpView) -> Shape:
    operand = op.types(0, TypeClass.FLOAT, "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")), features)
    return operand


@SHAPE_RULES.register(Op.BATCH_NORM_GRAD)
def _batch_norm_grad(op: OpView) -> Shape:
    operand = op.types(0, TypeClass.FLOAT, "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "mean"), (3, "variance")), features)
    grad = op.array(4, "grad_output")
    op.same_type(0, 4, ("operand", "grad_output"))
    if grad.dims != operand.dims:
        raise op.fail(f"grad_output {fmt(grad)} of 'batch-norm-grad' must have the operand's dimensions "
                      f"{fmt(operand)}", operand=4)
    vector = array_shape(operand.element_type, (features,))
    return Shape.tuple_of([operand, vector, vector])
