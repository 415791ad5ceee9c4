"""The elementwise family: every elementwise op's handler; the compare, select and clamp kernels.

The kernels compute XLA's semantics for every element type: the arithmetic ops' are in
arithmetic.py (UNARY and BINARY, with the decisions taken), convert and friends' in
conversions.py, compare/select/clamp's here (clamp(lo, x, hi) = minimum(maximum(lo, x), hi)).
Where numpy computes exactly what XLA does (IEEE f32/f64 arithmetic, wrapping integer
arithmetic ...), the handlers call numpy directly (the fast paths below), and the
generated code of a plan writes that numpy call out (`written_as`, see handlers.py).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..opcodes import Op, Trait, ops_with
from ..shapes import PrimitiveType
from .arithmetic import BINARY, UNARY
from .conversions import bitcast_convert, convert, reduce_precision, stochastic_convert
from .handlers import HANDLERS, Source, written_as
from .numerics import (BOOL, F32, IEEE_FLOATS, NATIVE_INTS, REAL_FLOATS, bit_patterns, quiet, same_type,
                       sign_extend, widen)
from .values import as_array


# --------------------------------------------------------------------------- compare / select / clamp

_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
               "GT": np.greater, "LE": np.less_equal, "LT": np.less}


def default_compare_type(t: PrimitiveType) -> str:
    """The comparison type used when `type=` is absent (XLA's default)."""
    if t.is_float or t.is_complex:
        return "FLOAT"
    return "SIGNED" if t.is_signed_int else "UNSIGNED"


def _total_order_key(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Signed keys ordering -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN."""
    bits = bit_patterns(x, t)
    if t.name == "f8e8m0fnu":  # no sign bit: the bit pattern already orders it
        return bits.astype(np.int64)
    key = sign_extend(bits, t.bits)
    return np.where(key < 0, key ^ ((1 << (t.bits - 1)) - 1), key)


@quiet
def compare(x: np.ndarray, y: np.ndarray, direction: str, compare_type: Optional[str] = None) -> np.ndarray:
    """HLO compare: a pred array. compare_type None means the type's default."""
    x, y = np.asarray(x), np.asarray(y)
    t = same_type(x, y, "compare")
    op = _DIRECTIONS.get(direction)
    if op is None:
        raise ValueError(f"unknown comparison direction {direction!r}")
    kind = compare_type or default_compare_type(t)
    if t.is_complex:
        if kind != "FLOAT" or direction not in ("EQ", "NE"):
            raise ValueError(f"compare {direction} type={kind} is not defined for {t.name}")
        return np.asarray(op(x, y))
    if kind in ("FLOAT", "TOTALORDER") and not t.is_float:
        raise ValueError(f"compare type={kind} needs floating-point operands, got {t.name}")
    if kind == "FLOAT":
        return np.asarray(op(widen(x, t), widen(y, t)))
    if kind == "TOTALORDER":
        return np.asarray(op(_total_order_key(x, t), _total_order_key(y, t)))
    if kind in ("SIGNED", "UNSIGNED") and t.is_float:
        raise ValueError(f"compare type={kind} is not defined for {t.name}")
    if kind == "SIGNED":
        return np.asarray(op(sign_extend(bit_patterns(x, t), t.bits), sign_extend(bit_patterns(y, t), t.bits)))
    if kind == "UNSIGNED":
        return np.asarray(op(bit_patterns(x, t), bit_patterns(y, t)))
    raise ValueError(f"unknown comparison type {kind!r}")


@quiet
def select(pred: np.ndarray, on_true: np.ndarray, on_false: np.ndarray) -> np.ndarray:
    """out = on_true where pred else on_false (a rank-0 pred selects whole arrays)."""
    pred, on_true, on_false = np.asarray(pred), np.asarray(on_true), np.asarray(on_false)
    if pred.dtype != np.bool_:
        raise ValueError(f"select predicate must be pred, got {pred.dtype}")
    if on_true.dtype != on_false.dtype:
        raise ValueError(f"select branches differ in type ({on_true.dtype} vs {on_false.dtype})")
    return np.asarray(np.where(pred, on_true, on_false)).astype(on_true.dtype, copy=False)


@quiet
def clamp(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """minimum(maximum(lo, x), hi) with NaN-propagating max/min; lo/hi may be rank 0."""
    lo, x, hi = np.asarray(lo), np.asarray(x), np.asarray(hi)
    t = same_type(lo, x, "clamp")
    same_type(x, hi, "clamp")
    out = BINARY[Op.MINIMUM](BINARY[Op.MAXIMUM](lo, x, t), hi, t)
    return np.array(np.broadcast_to(out, x.shape), dtype=t.dtype)


# --------------------------------------------------------------------------- fast paths

# Binary ops numpy computes exactly as XLA does for these dtypes (IEEE arithmetic,
# two's-complement wrapping): the handlers call numpy directly for them.
_FAST_BINARY = {
    Op.ADD: (np.add, IEEE_FLOATS | NATIVE_INTS),
    Op.SUBTRACT: (np.subtract, IEEE_FLOATS | NATIVE_INTS),
    Op.MULTIPLY: (np.multiply, IEEE_FLOATS | NATIVE_INTS),
    Op.DIVIDE: (np.divide, IEEE_FLOATS),
    Op.MAXIMUM: (np.maximum, NATIVE_INTS),
    Op.MINIMUM: (np.minimum, NATIVE_INTS),
    Op.AND: (np.bitwise_and, NATIVE_INTS | {BOOL}),
    Op.OR: (np.bitwise_or, NATIVE_INTS | {BOOL}),
    Op.XOR: (np.bitwise_xor, NATIVE_INTS | {BOOL}),
}


def _ieee_extremum(ufunc: np.ufunc, merge_bits: np.ufunc, is_max: bool) -> Callable:
    """IEEE-754-2019 maximum/minimum (NaN propagates, -0 < +0) of float arrays (f32/f64, and
    f16, bf16 and the other ml_dtypes floats, whose numpy ufuncs tie zeros the same way).

    numpy's np.maximum/np.minimum propagate NaN but return one operand *by position*
    when -0 meets +0. Calling them with both operand orders gives both zeros there
    and the same value everywhere else, so merging the two results' bits (AND keeps
    +0 for maximum, OR keeps -0 for minimum) gives the IEEE result. (Two NaNs merge
    into a NaN as long as they are quiet, as numpy produces them.) One call is
    enough when an operand is a broadcast constant (relu's max(x, 0), clamps)."""
    def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        for constant in (y, x):
            c = _broadcast_constant(constant)
            if c is None:
                continue
            if c != 0:  # also NaN: no zero can tie with c
                return as_array(ufunc(x, y))
            if is_max and not np.signbit(c):  # max(v, +0) is never -0
                return as_array(ufunc(x, y)) + c
            break
        uint = np.dtype(f"u{x.dtype.itemsize}")
        first, second = np.asarray(ufunc(x, y)), np.asarray(ufunc(y, x))
        return merge_bits(first.view(uint), second.view(uint)).view(x.dtype)

    def given_constant(c) -> Optional[Callable]:
        """The kernel's one-call form when an operand is the constant c, or None."""
        if c != 0:
            return ufunc
        if is_max and not np.signbit(c):
            return lambda x, y: ufunc(x, y) + c
        return None

    kernel.given_constant = given_constant
    return kernel


def extremum_given(kernel: Callable, operand: np.ndarray) -> Callable:
    """kernel (an _ieee_extremum) specialised for one operand's value, known in advance."""
    c = _broadcast_constant(operand)
    return (kernel.given_constant(c) if c is not None else None) or kernel


def _broadcast_constant(a: np.ndarray):
    """The one value of an array that is a single value broadcast (all strides 0, or a
    single element that numpy broadcasts), else None."""
    if a.size == 1 or (a.size and not any(a.strides)):
        return a[(0,) * a.ndim]
    return None


# IEEE maximum/minimum of f32/f64 arrays (numpy's are not: see _ieee_extremum).
FAST_FLOAT_BINARY = {
    Op.MAXIMUM: _ieee_extremum(np.maximum, np.bitwise_and, True),
    Op.MINIMUM: _ieee_extremum(np.minimum, np.bitwise_or, False),
}
_FAST_UNARY = {
    Op.NEGATE: (np.negative, IEEE_FLOATS | NATIVE_INTS),
}
# Float functions as the elementwise kernels compute them (bit for bit): exact ones
# in the operand's type, the others in f64 and rounded once to f32.
_FAST_FLOAT_UNARY = {
    Op.EXPONENTIAL: (np.exp, True), Op.LOG: (np.log, True), Op.TANH: (np.tanh, True),
    Op.SINE: (np.sin, True), Op.COSINE: (np.cos, True), Op.LOG_PLUS_ONE: (np.log1p, True),
    Op.EXPONENTIAL_MINUS_ONE: (np.expm1, True),
    Op.SQRT: (np.sqrt, False), Op.ABS: (np.abs, False), Op.FLOOR: (np.floor, False), Op.CEIL: (np.ceil, False),
}


def _fast_compare(kind: Optional[str], x: np.dtype, y: np.dtype) -> bool:
    """Whether numpy's comparison of these dtypes is the HLO one of comparison type `kind`."""
    return x == y and ((kind in (None, "FLOAT") and x in REAL_FLOATS) or (kind is None and x in NATIVE_INTS))


def _fast_select(pred: np.dtype, on_true: np.dtype, on_false: np.dtype) -> bool:
    """Whether np.where is the HLO select of these dtypes (not for ml_dtypes' structured 'V' kind)."""
    return pred == BOOL and on_true == on_false and on_true.kind != "V"


# --------------------------------------------------------------------------- writers

def _write_unary(src: Source) -> Optional[str]:
    dtype, opcode, bind, x = src.in_types[0], src.inst.opcode, src.bind, src.args[0]
    fast = _FAST_UNARY.get(opcode)
    if fast is not None and dtype in fast[1]:
        return f"{bind(fast[0])}({x})"
    if dtype in REAL_FLOATS and opcode in _FAST_FLOAT_UNARY:
        fn, in_f64 = _FAST_FLOAT_UNARY[opcode]
        if in_f64 and dtype == F32:
            return f"{bind(fn)}({x}.astype({bind(np.float64)})).astype({bind(F32)})"
        return f"{bind(fn)}({x})"
    return None


def _write_binary(src: Source) -> Optional[str]:
    x, y = src.in_types
    if x != y:
        return None
    opcode, bind, args = src.inst.opcode, src.bind, src.args
    fast = _FAST_BINARY.get(opcode)
    if fast is not None and x in fast[1]:
        return f"{bind(fast[0])}({args[0]}, {args[1]})"
    if x in REAL_FLOATS and opcode in FAST_FLOAT_BINARY:
        if src.static_args:  # max(x, 0) and the like: decide once per evaluator how to compute it
            kernel = src.setup(f"{bind(extremum_given)}({bind(FAST_FLOAT_BINARY[opcode])}, {src.static_args[0]})")
            return f"{kernel}({args[0]}, {args[1]})"
        return f"{bind(FAST_FLOAT_BINARY[opcode])}({args[0]}, {args[1]})"
    return None


def _write_compare(src: Source) -> Optional[str]:
    if not _fast_compare(src.inst.attrs.get("type"), *src.in_types):
        return None
    return f"{src.bind(_DIRECTIONS[src.inst.attrs['direction']])}({src.args[0]}, {src.args[1]})"


def _write_select(src: Source) -> Optional[str]:
    if not _fast_select(*src.in_types):
        return None
    return f"{src.bind(np.where)}({', '.join(src.args)})"


# --------------------------------------------------------------------------- handlers

@HANDLERS.register(frozenset(UNARY) - ops_with(Trait.PASS_THROUGH))
@written_as(_write_unary)
def run_unary(ev, inst, ops):
    x = ops[0]
    fast = _FAST_UNARY.get(inst.opcode)
    if fast is not None and x.dtype in fast[1]:
        return as_array(fast[0](x))
    if x.dtype in REAL_FLOATS and inst.opcode in _FAST_FLOAT_UNARY:
        fn, in_f64 = _FAST_FLOAT_UNARY[inst.opcode]
        if in_f64 and x.dtype == F32:
            return as_array(fn(x.astype(np.float64))).astype(F32)
        return as_array(fn(x))
    return UNARY[inst.opcode](x, inst.shape.element_type)


@HANDLERS.register(frozenset(BINARY), broadcasts=True)
@written_as(_write_binary)
def run_binary(ev, inst, ops):
    x, y = ops
    if x.dtype == y.dtype:
        fast = _FAST_BINARY.get(inst.opcode)
        if fast is not None and x.dtype in fast[1]:
            return as_array(fast[0](x, y))
        if x.dtype in REAL_FLOATS and inst.opcode in FAST_FLOAT_BINARY:
            return FAST_FLOAT_BINARY[inst.opcode](x, y)
    return BINARY[inst.opcode](x, y, inst.shape.element_type)


@HANDLERS.register(Op.COMPARE, broadcasts=True)
@written_as(_write_compare)
def run_compare(ev, inst, ops):
    x, y = ops
    direction = inst.attrs["direction"]
    kind = inst.attrs.get("type")
    if _fast_compare(kind, x.dtype, y.dtype):
        return as_array(_DIRECTIONS[direction](x, y))
    return compare(x, y, direction, kind)


@HANDLERS.register(Op.SELECT, broadcasts=True)
@written_as(_write_select)
def run_select(ev, inst, ops):
    pred, on_true, on_false = ops
    if _fast_select(pred.dtype, on_true.dtype, on_false.dtype):
        return as_array(np.where(pred, on_true, on_false))
    return select(pred, on_true, on_false)


@HANDLERS.register(Op.CLAMP)
def run_clamp(ev, inst, ops):
    lo, x, hi = ops
    if lo.ndim > x.ndim or hi.ndim > x.ndim:  # vectorised scalars with the batch in lo/hi
        lo, x, hi = np.broadcast_arrays(lo, x, hi)
    return clamp(lo, x, hi)


@HANDLERS.register(Op.CONVERT)
def run_convert(ev, inst, ops):
    return convert(ops[0], inst.operands[0].shape.element_type, inst.shape.element_type)


@HANDLERS.register(Op.BITCAST_CONVERT)
def run_bitcast_convert(ev, inst, ops):
    return bitcast_convert(ops[0], inst.operands[0].shape.element_type, inst.shape.element_type)


@HANDLERS.register(Op.REDUCE_PRECISION)
def run_reduce_precision(ev, inst, ops):
    return reduce_precision(ops[0], inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"])


@HANDLERS.register(Op.STOCHASTIC_CONVERT)
def run_stochastic_convert(ev, inst, ops):
    return stochastic_convert(ops[0], ops[1], inst.shape.element_type)
