"""Every HLO elementwise operation as a numpy kernel, with XLA's semantics.

Values are numpy arrays in the storage dtype of their HLO element type (see
`hlo.shapes`). The evaluator reaches the kernels through two dispatch tables
keyed by opcode text, plus a few functions for ops that do not fit them:

    UNARY[opcode](x, result_type)            abs, ceil, ..., sinh
    BINARY[opcode](x, y, result_type)        add, ..., shift-right-logical
    compare, select, clamp, convert, bitcast_convert, reduce_precision,
    stochastic_convert, iota

Decisions (XLA's HloEvaluator and XLA:CPU agree unless said otherwise):

* Integers wrap (two's complement) at their own width, sub-byte widths included:
  results are computed on 64-bit patterns and cut down to the type's width.
  x / 0 = -1 (all ones), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  Shift amounts are read as unsigned; amounts >= the width give 0 (or -1 for an
  arithmetic shift of a negative value). Integer power is exact (wrapping) for
  exponents >= 0; a negative exponent gives 1 for base 1, +-1 by parity for base
  -1 (XLA:CPU's current lowering) and 0 otherwise. (XLA:CPU's codegen only looks
  at the low 6 exponent bits; we follow the evaluator's exact power there.)
* f16, bf16, the f8 types and f4e2m1fn are computed in f32 and rounded once to
  their type, as the HloEvaluator does. (XLA:CPU codegen routes f8/f4 through
  f16, so a value on an f8 rounding tie may differ by one ulp.) f32
  transcendental ops are computed in f64 and rounded, i.e. nearly correctly
  rounded; XLA:CPU uses its own approximations, so the last ulp may differ.
  c64 is computed in c128.
* maximum/minimum are IEEE-754-2019 maximum/minimum: NaN propagates and
  -0 < +0 (what XLA:CPU emits). clamp(lo, x, hi) = minimum(maximum(lo, x), hi).
* Denormals are never flushed (the HloEvaluator does not flush; note that the
  PjRt CPU client runs compiled code with FTZ/DAZ set).
* convert: float -> int truncates, saturates, NaN -> 0; int -> float and
  f64 -> a float narrower than f32 go through f32 (as XLA literals and ml_dtypes
  do); complex -> real keeps the real part; anything -> pred is x != 0.
* bitcast-convert: one wide element is a run of narrow ones along a new minor
  dimension, element 0 holding the least-significant bits (little-endian),
  sub-byte types included (XLA's BitcastDtypesExpander).
"""
from __future__ import annotations

import functools
import math
import sys
from typing import Callable, Optional, Union

import numpy as np

from ..shapes import (PRIMITIVE_TYPES, PrimitiveType, Shape, complex_type_of,
                      primitive_type, real_type_of, type_of_dtype)

UnaryKernel = Callable[[np.ndarray, PrimitiveType], np.ndarray]
BinaryKernel = Callable[[np.ndarray, np.ndarray, PrimitiveType], np.ndarray]
TypeLike = Union[PrimitiveType, str]

_U64 = np.uint64
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_C128 = np.dtype(np.complex128)
_UINT_OF_WIDTH = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_S64 = PRIMITIVE_TYPES["s64"]
_PRED = PRIMITIVE_TYPES["pred"]


# --------------------------------------------------------------------------- plumbing


def _quiet(fn):
    """Run fn with numpy floating-point warnings silenced (inf/NaN are expected)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return wrapper


def _as_type(t: TypeLike) -> PrimitiveType:
    return primitive_type(t) if isinstance(t, str) else t


def _type_of(x: np.ndarray) -> PrimitiveType:
    try:
        return type_of_dtype(x.dtype)
    except KeyError:
        raise ValueError(f"numpy dtype {x.dtype} is not the storage of an HLO element type") from None


def _same_type(x: np.ndarray, y: np.ndarray, what: str) -> PrimitiveType:
    t, u = _type_of(x), _type_of(y)
    if t != u:
        raise ValueError(f"{what}: operand types differ ({t.name} vs {u.name})")
    return t


def _check_result(what: str, expected: PrimitiveType, result_type: TypeLike) -> None:
    if _as_type(result_type) != expected:
        raise ValueError(f"{what} yields {expected.name}, not {_as_type(result_type).name}")


def _unsupported(what: str, t: PrimitiveType) -> ValueError:
    return ValueError(f"{what} is not defined for element type {t.name}")


# --------------------------------------------------------------------------- bit patterns


def _mask(bits: int) -> np.uint64:
    return _U64((1 << bits) - 1)


def _bits(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """The element bit patterns as uint64, limited to the type's width."""
    x = np.asarray(x)
    if t.is_pred or t.is_unsigned_int:
        return x.astype(_U64)
    if t.is_signed_int:
        v = x.astype(np.int64).astype(_U64)  # two's complement
        return v & _mask(t.bits) if t.bits < 64 else v
    if t.is_float:
        if t.bits < 8:  # ml_dtypes keeps a sub-byte float in the low bits of a byte
            return x.view(np.uint8).astype(_U64) & _mask(t.bits)
        return x.view(_UINT_OF_WIDTH[t.bits]).astype(_U64)
    raise _unsupported("bit-level access", t)


def _sign_extend(bits: np.ndarray, width: int) -> np.ndarray:
    """Read the low `width` bits (uint64) as a signed number (int64)."""
    bits = np.asarray(bits)
    if width == 64:
        return bits.view(np.int64)
    sign = 1 << (width - 1)
    return (bits.astype(np.int64) ^ sign) - sign


def _from_bits(bits: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Elements of type t whose bit patterns are the low t.bits bits of `bits`."""
    bits = np.asarray(bits).astype(_U64)
    if t.bits < 64:
        bits = bits & _mask(t.bits)
    if t.is_pred:
        return bits != 0
    if t.is_signed_int:
        return _sign_extend(bits, t.bits).astype(t.dtype)
    if t.is_unsigned_int:
        return bits.astype(t.dtype)
    if t.is_float:
        storage = np.uint8 if t.bits < 8 else _UINT_OF_WIDTH[t.bits]
        return bits.astype(storage).view(t.dtype)
    raise _unsupported("bit-level access", t)


def _int_values(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Exact integer values: int64 for signed types, uint64 for unsigned and pred."""
    return np.asarray(x).astype(np.int64 if t.is_signed_int else _U64)


def _wrap(values: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Two's-complement wrap of int64/uint64 values to type t."""
    return _from_bits(np.asarray(values).astype(_U64), t)


def _int_range(t: PrimitiveType) -> tuple[int, int]:
    if t.is_signed_int:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


# --------------------------------------------------------------------------- float plumbing


def _compute_dtype(t: PrimitiveType, exact: bool) -> np.dtype:
    """Where a float op is evaluated: f64 unless f32 already rounds correctly."""
    if t.is_complex:
        return _C128
    if t.name == "f64" or not exact:
        return _F64
    return _F32


def _round_to(y, t: PrimitiveType) -> np.ndarray:
    """Round a wide result once to t (narrow floats via their f32 value)."""
    y = np.asarray(y)
    if t.is_float and t.name not in ("f32", "f64") and y.dtype == _F64:
        y = y.astype(_F32)
    return y.astype(t.dtype)


def _widen(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Exact upcast of a float array for comparisons (narrow types to f32)."""
    return x if t.name in ("f32", "f64") else x.astype(_F32)


# --------------------------------------------------------------------------- kernel builders


def _unary(name: str, *, pred=None, integer=None, real=None, complex_=None,
           exact: bool = False, result=None) -> UnaryKernel:
    """A UNARY kernel dispatching on the operand's type class.

    integer(x, t) works on the storage array; real/complex_ get the operand widened
    to its compute dtype and return a wide result that is rounded once.
    result(t) gives the result type when it is not the operand type.
    """
    @_quiet
    def kernel(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x = np.asarray(x)
        t = _type_of(x)
        expected = result(t) if result is not None else t
        _check_result(f"{name}({t.name})", expected, result_type)
        if t.is_pred and pred is not None:
            out = pred(x)
        elif t.is_integral and integer is not None:
            out = integer(x, t)
        elif t.is_float and real is not None:
            out = _round_to(real(x.astype(_compute_dtype(t, exact))), expected)
        elif t.is_complex and complex_ is not None:
            out = _round_to(complex_(x.astype(_C128)), expected)
        else:
            raise _unsupported(name, t)
        return np.asarray(out).astype(expected.dtype, copy=False)
    kernel.__name__ = f"unary_{name.replace('-', '_')}"
    return kernel


def _binary(name: str, *, pred=None, integer=None, real=None, complex_=None,
            exact: bool = False) -> BinaryKernel:
    """A BINARY kernel (same operand and result type) dispatching on type class."""
    @_quiet
    def kernel(x: np.ndarray, y: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x, y = np.asarray(x), np.asarray(y)
        t = _same_type(x, y, name)
        _check_result(f"{name}({t.name})", t, result_type)
        if t.is_pred and pred is not None:
            out = pred(x, y)
        elif t.is_integral and integer is not None:
            out = integer(x, y, t)
        elif t.is_float and real is not None:
            dt = _compute_dtype(t, exact)
            out = _round_to(real(x.astype(dt), y.astype(dt)), t)
        elif t.is_complex and complex_ is not None:
            out = _round_to(complex_(x.astype(_C128), y.astype(_C128)), t)
        else:
            raise _unsupported(name, t)
        return np.asarray(out).astype(t.dtype, copy=False)
    kernel.__name__ = f"binary_{name.replace('-', '_')}"
    return kernel


# --------------------------------------------------------------------------- integer kernels


def _int_abs(x, t):
    if t.is_unsigned_int:
        return x.copy()
    bits = _bits(x, t)
    return _from_bits(np.where(_int_values(x, t) < 0, _U64(0) - bits, bits), t)


def _int_negate(x, t):
    return _from_bits(_U64(0) - _bits(x, t), t)


def _int_sign(x, t):
    v = _int_values(x, t)
    return _wrap((v > 0).astype(np.int64) - (v < 0).astype(np.int64), t)


def _int_not(x, t):
    return _from_bits(~_bits(x, t), t)


def _popcount(x, t):
    return _from_bits(np.bitwise_count(_bits(x, t)), t)


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0), by binary search."""
    v = np.asarray(v, dtype=_U64)
    n = np.zeros(v.shape, dtype=np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= _U64(1 << step)
        n += np.where(big, step, 0)
        v = np.where(big, v >> _U64(step), v)
    return n + (v > 0)


def _count_leading_zeros(x, t):
    return _wrap(t.bits - _bit_length(_bits(x, t)), t)


def _int_add(x, y, t):
    return _from_bits(_bits(x, t) + _bits(y, t), t)


def _int_subtract(x, y, t):
    return _from_bits(_bits(x, t) - _bits(y, t), t)


def _int_multiply(x, y, t):
    return _from_bits(_bits(x, t) * _bits(y, t), t)


def _int_divide(x, y, t):
    a, b = _int_values(x, t), _int_values(y, t)
    zero = b == 0
    if t.is_unsigned_int:
        q = a // np.where(zero, _U64(1), b)
        return _from_bits(np.where(zero, _mask(t.bits), q), t)
    minus_one = b == -1
    safe_b = np.where(zero | minus_one, 1, b)
    q = (a - np.fmod(a, safe_b)) // safe_b  # C division: truncate toward zero
    q = np.where(minus_one, -a, q)  # wraps INT_MIN to INT_MIN below
    return _wrap(np.where(zero, -1, q), t)


def _int_remainder(x, y, t):
    a, b = _int_values(x, t), _int_values(y, t)
    zero = b == 0
    if t.is_unsigned_int:
        return _wrap(np.where(zero, a, a % np.where(zero, _U64(1), b)), t)
    minus_one = b == -1
    r = np.fmod(a, np.where(zero | minus_one, 1, b))  # C remainder: sign of dividend
    return _wrap(np.where(zero, a, np.where(minus_one, 0, r)), t)


def _int_power(x, y, t):
    base = _bits(x, t)
    exponent = _int_values(y, t)
    e = exponent.astype(_U64) if t.is_unsigned_int else np.where(exponent < 0, 0, exponent).astype(_U64)
    acc = np.ones(np.broadcast_shapes(base.shape, e.shape), dtype=_U64)
    while np.any(e):  # exponentiation by squaring, wrapping mod 2^64
        acc = np.where(e & _U64(1), acc * base, acc)
        base = base * base
        e = e >> _U64(1)
    if t.is_signed_int:
        a = _int_values(x, t)
        odd = (exponent & 1) == 1
        negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return _wrap(np.where(exponent < 0, negative, acc.view(np.int64)), t)
    return _from_bits(acc, t)


def _int_maximum(x, y, t):
    return np.where(_int_values(x, t) >= _int_values(y, t), x, y)


def _int_minimum(x, y, t):
    return np.where(_int_values(x, t) <= _int_values(y, t), x, y)


def _int_and(x, y, t):
    return _from_bits(_bits(x, t) & _bits(y, t), t)


def _int_or(x, y, t):
    return _from_bits(_bits(x, t) | _bits(y, t), t)


def _int_xor(x, y, t):
    return _from_bits(_bits(x, t) ^ _bits(y, t), t)


def _shift_amounts(y, t):
    """(safe amount, out-of-range mask); amounts are read as unsigned."""
    amount = _bits(y, t)
    out_of_range = amount >= _U64(t.bits)
    return np.where(out_of_range, _U64(0), amount), out_of_range


def _shift_left(x, y, t):
    amount, oob = _shift_amounts(y, t)
    return _from_bits(np.where(oob, _U64(0), _bits(x, t) << amount), t)


def _shift_right_logical(x, y, t):
    amount, oob = _shift_amounts(y, t)
    return _from_bits(np.where(oob, _U64(0), _bits(x, t) >> amount), t)


def _shift_right_arithmetic(x, y, t):
    amount, oob = _shift_amounts(y, t)
    value = _sign_extend(_bits(x, t), t.bits)  # unsigned types shift their sign bit too
    saturated = np.where(value < 0, -1, 0)
    return _wrap(np.where(oob, saturated, value >> amount.astype(np.int64)), t)


# --------------------------------------------------------------------------- float kernels


def _round_half_away(x):
    whole = np.trunc(x)
    frac = x - whole  # exact
    return np.where(np.abs(frac) >= 0.5, whole + np.copysign(1.0, x), whole).astype(x.dtype)


def _float_sign(x):
    return np.where(np.isnan(x), x, np.copysign((x != 0).astype(x.dtype), x))


def _complex_sign(z):
    magnitude = np.abs(z)
    return np.where(magnitude == 0, 0, z / np.where(magnitude == 0, 1, magnitude))


def _logistic(x):
    # Branch on the sign so that exp never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _complex_logistic(z):
    return 1 / (1 + np.exp(-z))


def _rsqrt(x):
    return 1 / np.sqrt(x)


_erf_elementwise = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    # numpy has no erf; C's erf (math.erf) is what the HloEvaluator calls.
    return np.asarray(_erf_elementwise(x), dtype=_F64)


def _float_maximum(x, y):
    equal_pick_x = ~(np.signbit(x) & ~np.signbit(y))  # max(-0, +0) = +0
    take_x = np.isnan(x) | (~np.isnan(y) & ((x > y) | ((x == y) & equal_pick_x)))
    return np.where(take_x, x, y)


def _float_minimum(x, y):
    equal_pick_x = ~(~np.signbit(x) & np.signbit(y))  # min(+0, -0) = -0
    take_x = np.isnan(x) | (~np.isnan(y) & ((x < y) | ((x == y) & equal_pick_x)))
    return np.where(take_x, x, y)


def _complex_power(a, b):
    out = np.power(a, b)
    # XLA's special cases: 1^z = z^0 = 1, inf^(positive real) = inf, inf^(negative real) = 0.
    base_is_inf = (a.imag == 0) & np.isposinf(a.real)
    exponent_real = b.imag == 0
    out = np.where(base_is_inf & exponent_real & (b.real > 0), a, out)
    out = np.where(base_is_inf & exponent_real & (b.real < 0), 0, out)
    return np.where((a == 1) | (b == 0), 1, out)


def _complex_atan2(y, x):
    # atan2(y, x) = -i * log((x + i*y) / sqrt(x^2 + y^2)), as the HloEvaluator does.
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _real(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    return x.real.copy() if t.is_complex else x.copy()


def _imag(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    return x.imag.copy() if t.is_complex else np.zeros_like(x)


def _component_kernel(name: str, take) -> UnaryKernel:
    """real/imag: the component type for complex, identity/zeros for floats."""
    @_quiet
    def kernel(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x = np.asarray(x)
        t = _type_of(x)
        if not (t.is_float or t.is_complex):
            raise _unsupported(name, t)
        _check_result(f"{name}({t.name})", real_type_of(t), result_type)
        return take(x, t)
    kernel.__name__ = f"unary_{name}"
    return kernel


@_quiet
def _is_finite(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x = np.asarray(x)
    t = _type_of(x)
    if not t.is_float:
        raise _unsupported("is-finite", t)
    _check_result(f"is-finite({t.name})", _PRED, result_type)
    return np.asarray(np.isfinite(_widen(x, t)))


def _copy(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x = np.asarray(x)
    _check_result("copy", _type_of(x), result_type)
    return x.copy()


def _transcendental(name: str, real_fn, complex_fn=None) -> UnaryKernel:
    return _unary(name, real=real_fn, complex_=complex_fn if complex_fn is not None else real_fn)


UNARY: dict[str, UnaryKernel] = {
    "abs": _unary("abs", integer=_int_abs, real=np.abs, complex_=np.abs, exact=True, result=real_type_of),
    "ceil": _unary("ceil", real=np.ceil, exact=True),
    "floor": _unary("floor", real=np.floor, exact=True),
    "count-leading-zeros": _unary("count-leading-zeros", integer=_count_leading_zeros),
    "popcnt": _unary("popcnt", integer=_popcount),
    "imag": _component_kernel("imag", _imag),
    "real": _component_kernel("real", _real),
    "is-finite": _is_finite,
    "negate": _unary("negate", integer=_int_negate, real=np.negative, complex_=np.negative, exact=True),
    "not": _unary("not", pred=np.logical_not, integer=_int_not),
    "round-nearest-afz": _unary("round-nearest-afz", real=_round_half_away, exact=True),
    "round-nearest-even": _unary("round-nearest-even", real=np.rint, exact=True),
    "sign": _unary("sign", integer=_int_sign, real=_float_sign, complex_=_complex_sign, exact=True),
    "copy": _copy,
    "cbrt": _unary("cbrt", real=np.cbrt),
    "cosine": _transcendental("cosine", np.cos),
    "sine": _transcendental("sine", np.sin),
    "tan": _transcendental("tan", np.tan),
    "tanh": _transcendental("tanh", np.tanh),
    "exponential": _transcendental("exponential", np.exp),
    "exponential-minus-one": _transcendental("exponential-minus-one", np.expm1),
    "log": _transcendental("log", np.log),
    "log-plus-one": _transcendental("log-plus-one", np.log1p),
    "logistic": _transcendental("logistic", _logistic, _complex_logistic),
    "rsqrt": _transcendental("rsqrt", _rsqrt),
    "sqrt": _unary("sqrt", real=np.sqrt, complex_=np.sqrt, exact=True),
    "erf": _unary("erf", real=_erf),
    "acos": _transcendental("acos", np.arccos),
    "acosh": _transcendental("acosh", np.arccosh),
    "asin": _transcendental("asin", np.arcsin),
    "asinh": _transcendental("asinh", np.arcsinh),
    "atan": _transcendental("atan", np.arctan),
    "atanh": _transcendental("atanh", np.arctanh),
    "cosh": _transcendental("cosh", np.cosh),
    "sinh": _transcendental("sinh", np.sinh),
}


@_quiet
def _complex(x: np.ndarray, y: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x, y = np.asarray(x), np.asarray(y)
    t = _same_type(x, y, "complex")
    if t.name not in ("f32", "f64"):
        raise _unsupported("complex", t)
    ct = complex_type_of(t)
    _check_result(f"complex({t.name})", ct, result_type)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype=ct.dtype)
    out.real, out.imag = x, y  # not x + 1j*y: inf * 1j would make NaNs
    return out


BINARY: dict[str, BinaryKernel] = {
    "add": _binary("add", pred=np.logical_or, integer=_int_add, real=np.add, complex_=np.add, exact=True),
    "subtract": _binary("subtract", integer=_int_subtract, real=np.subtract, complex_=np.subtract, exact=True),
    "multiply": _binary("multiply", pred=np.logical_and, integer=_int_multiply, real=np.multiply,
                        complex_=np.multiply, exact=True),
    "divide": _binary("divide", integer=_int_divide, real=np.divide, complex_=np.divide, exact=True),
    "remainder": _binary("remainder", integer=_int_remainder, real=np.fmod, exact=True),
    "power": _binary("power", integer=_int_power, real=np.power, complex_=_complex_power),
    "atan2": _binary("atan2", real=np.arctan2, complex_=_complex_atan2),
    "complex": _complex,
    "maximum": _binary("maximum", pred=np.logical_or, integer=_int_maximum, real=_float_maximum, exact=True),
    "minimum": _binary("minimum", pred=np.logical_and, integer=_int_minimum, real=_float_minimum, exact=True),
    "and": _binary("and", pred=np.logical_and, integer=_int_and),
    "or": _binary("or", pred=np.logical_or, integer=_int_or),
    "xor": _binary("xor", pred=np.logical_xor, integer=_int_xor),
    "shift-left": _binary("shift-left", integer=_shift_left),
    "shift-right-arithmetic": _binary("shift-right-arithmetic", integer=_shift_right_arithmetic),
    "shift-right-logical": _binary("shift-right-logical", integer=_shift_right_logical),
}


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
    bits = _bits(x, t)
    if t.name == "f8e8m0fnu":  # no sign bit: the bit pattern already orders it
        return bits.astype(np.int64)
    key = _sign_extend(bits, t.bits)
    return np.where(key < 0, key ^ ((1 << (t.bits - 1)) - 1), key)


@_quiet
def compare(x: np.ndarray, y: np.ndarray, direction: str, compare_type: Optional[str] = None) -> np.ndarray:
    """HLO compare: a pred array. compare_type None means the type's default."""
    x, y = np.asarray(x), np.asarray(y)
    t = _same_type(x, y, "compare")
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
        return np.asarray(op(_widen(x, t), _widen(y, t)))
    if kind == "TOTALORDER":
        return np.asarray(op(_total_order_key(x, t), _total_order_key(y, t)))
    if kind in ("SIGNED", "UNSIGNED") and t.is_float:
        raise ValueError(f"compare type={kind} is not defined for {t.name}")
    if kind == "SIGNED":
        return np.asarray(op(_sign_extend(_bits(x, t), t.bits), _sign_extend(_bits(y, t), t.bits)))
    if kind == "UNSIGNED":
        return np.asarray(op(_bits(x, t), _bits(y, t)))
    raise ValueError(f"unknown comparison type {kind!r}")


@_quiet
def select(pred: np.ndarray, on_true: np.ndarray, on_false: np.ndarray) -> np.ndarray:
    """out = on_true where pred else on_false (a rank-0 pred selects whole arrays)."""
    pred, on_true, on_false = np.asarray(pred), np.asarray(on_true), np.asarray(on_false)
    if pred.dtype != np.bool_:
        raise ValueError(f"select predicate must be pred, got {pred.dtype}")
    if on_true.dtype != on_false.dtype:
        raise ValueError(f"select branches differ in type ({on_true.dtype} vs {on_false.dtype})")
    return np.asarray(np.where(pred, on_true, on_false)).astype(on_true.dtype, copy=False)


def _maximum(x, y, t):
    if t.is_pred:
        return np.logical_or(x, y)
    if t.is_integral:
        return _int_maximum(x, y, t)
    if t.is_float:
        return _round_to(_float_maximum(_widen(x, t), _widen(y, t)), t)
    raise _unsupported("maximum", t)


def _minimum(x, y, t):
    if t.is_pred:
        return np.logical_and(x, y)
    if t.is_integral:
        return _int_minimum(x, y, t)
    if t.is_float:
        return _round_to(_float_minimum(_widen(x, t), _widen(y, t)), t)
    raise _unsupported("minimum", t)


@_quiet
def clamp(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """minimum(maximum(lo, x), hi) with NaN-propagating max/min; lo/hi may be rank 0."""
    lo, x, hi = np.asarray(lo), np.asarray(x), np.asarray(hi)
    t = _same_type(lo, x, "clamp")
    _same_type(x, hi, "clamp")
    out = _minimum(_maximum(lo, x, t), hi, t)
    return np.array(np.broadcast_to(out, x.shape), dtype=t.dtype)


# --------------------------------------------------------------------------- convert


def _float_to_int(x: np.ndarray, to: PrimitiveType) -> np.ndarray:
    """Truncate toward zero, saturate to the range of `to`, NaN -> 0."""
    whole = np.trunc(x.astype(_F64))
    lo, hi = _int_range(to)
    wide = np.int64 if to.is_signed_int else _U64
    nan = np.isnan(whole)
    too_big = whole >= float(hi)  # float(hi) may round up (64-bit): then '>=' is exact
    too_small = whole <= float(lo)
    inside = np.where(nan | too_big | too_small, 0, whole).astype(wide)
    out = np.where(too_big, wide(hi), np.where(too_small, wide(lo), inside))
    return _wrap(np.where(nan, wide(0), out), to)


def _int_to_float(x: np.ndarray, frm: PrimitiveType, to: PrimitiveType) -> np.ndarray:
    values = _int_values(x, frm)
    if to.name == "f64":
        return values.astype(_F64)
    return values.astype(_F32).astype(to.dtype)  # narrow types round via f32, like XLA literals


def _float_to_float(x: np.ndarray, to: PrimitiveType) -> np.ndarray:
    if to.name == "f64":
        return x.astype(_F64)
    # Every type but f64 widens exactly to f32; ml_dtypes rounds from f32 to the
    # target with its own overflow rules (inf, NaN or saturation).
    return x.astype(_F32).astype(to.dtype)


def _nonzero(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    if t.is_float:
        return np.asarray(_widen(x, t) != 0)  # NaN -> true
    return np.asarray(_int_values(x, t) != 0)


@_quiet
def convert(x: np.ndarray, from_type: TypeLike, to_type: TypeLike) -> np.ndarray:
    """HLO convert (element-type conversion) with XLA's rounding and saturation."""
    x = np.asarray(x)
    frm, to = _as_type(from_type), _as_type(to_type)
    if not (frm.is_array_type and to.is_array_type):
        raise ValueError(f"cannot convert {frm.name} to {to.name}")
    if x.dtype != frm.dtype:
        raise ValueError(f"convert: operand is {x.dtype}, expected {frm.name}")
    if frm == to:
        return x.copy()
    if frm.is_complex:
        if to.is_complex:
            return x.astype(to.dtype)
        return convert(x.real.copy(), real_type_of(frm), to)  # keep the real part
    if to.is_pred:
        return _nonzero(x, frm)
    if to.is_complex:
        return convert(x, frm, real_type_of(to)).astype(to.dtype)
    if frm.is_float:
        return _float_to_int(x, to) if to.is_integral else _float_to_float(x, to)
    if to.is_integral:
        return _wrap(_int_values(x, frm), to)
    return _int_to_float(x, frm, to)


# --------------------------------------------------------------------------- bitcast-convert


def _bitcast_shape(shape: tuple[int, ...], frm: PrimitiveType, to: PrimitiveType) -> tuple[int, ...]:
    if frm.is_complex != to.is_complex:
        raise ValueError(f"bitcast-convert between {frm.name} and {to.name}: complex only to complex")
    wide, narrow = max(frm.bits, to.bits), min(frm.bits, to.bits)
    if wide % narrow:
        raise ValueError(f"bitcast-convert {frm.name} -> {to.name}: widths {frm.bits} and {to.bits} do not divide")
    ratio = wide // narrow
    if frm.bits > to.bits:
        return shape + (ratio,)
    if frm.bits < to.bits:
        if not shape or shape[-1] != ratio:
            raise ValueError(f"bitcast-convert {frm.name} -> {to.name} needs a last dimension of {ratio}, "
                             f"got shape {list(shape)}")
        return shape[:-1]
    return shape


def _bitcast_bytes(x: np.ndarray, frm: PrimitiveType, to: PrimitiveType, shape) -> np.ndarray:
    """Byte-sized types: reinterpret memory (host must be little-endian, like XLA:CPU)."""
    if frm.bits != to.bits and sys.byteorder != "little":
        raise ValueError("width-changing bitcast-convert needs a little-endian host")
    src = np.ascontiguousarray(x)
    if frm.is_pred:
        src = src.view(np.uint8)
    target = np.dtype(np.uint8) if to.is_pred else to.dtype
    out = src.reshape(-1).view(target).reshape(shape)
    return out != 0 if to.is_pred else out.copy()


def _bitcast_bits(x: np.ndarray, frm: PrimitiveType, to: PrimitiveType, shape) -> np.ndarray:
    """Sub-byte types: element 0 of a run holds the least-significant bits."""
    bits = _bits(x, frm)
    if frm.bits > to.bits:
        shifts = np.arange(frm.bits // to.bits, dtype=_U64) * _U64(to.bits)
        return _from_bits(bits[..., None] >> shifts, to)
    if frm.bits < to.bits:
        shifts = np.arange(to.bits // frm.bits, dtype=_U64) * _U64(frm.bits)
        return _from_bits(np.bitwise_or.reduce(bits << shifts, axis=-1), to)
    return _from_bits(bits, to).reshape(shape)


@_quiet
def bitcast_convert(x: np.ndarray, from_type: TypeLike, to_type: TypeLike) -> np.ndarray:
    """Reinterpret the bits; a width change adds/removes a minor dimension."""
    x = np.asarray(x)
    frm, to = _as_type(from_type), _as_type(to_type)
    if not (frm.is_array_type and to.is_array_type):
        raise ValueError(f"cannot bitcast-convert {frm.name} to {to.name}")
    if x.dtype != frm.dtype:
        raise ValueError(f"bitcast-convert: operand is {x.dtype}, expected {frm.name}")
    shape = _bitcast_shape(x.shape, frm, to)
    if frm.bits % 8 == 0 and to.bits % 8 == 0:
        return _bitcast_bytes(x, frm, to, shape)
    return _bitcast_bits(x, frm, to, shape)


# --------------------------------------------------------------------------- reduce-precision


def _reduce_precision_bits(v: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's bit algorithm on an f32 or f64 array (no subnormals in the small format)."""
    nbits = v.dtype.itemsize * 8
    uint = _UINT_OF_WIDTH[nbits]
    src_m = 23 if nbits == 32 else 52
    src_e = nbits - 1 - src_m
    bits = np.asarray(v).view(uint).copy()
    if mantissa_bits < src_m:
        drop = src_m - mantissa_bits
        last_kept = uint(1 << drop)
        bias = uint((1 << (drop - 1)) - 1) + ((bits & last_kept) >> uint(drop))  # ties to even
        bits = (bits + bias) & uint(((1 << nbits) - 1) ^ ((1 << drop) - 1))
    if exponent_bits < src_e:
        sign_mask = uint(1 << (nbits - 1))
        exp_mask = uint(((1 << src_e) - 1) << src_m)
        src_bias = (1 << (src_e - 1)) - 1
        small_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > uint((src_bias + small_bias) << src_m)
        underflow = exponent <= uint((src_bias - small_bias) << src_m)
        signed_zero = bits & sign_mask
        bits = np.where(overflow, signed_zero | exp_mask, bits)
        bits = np.where(underflow, signed_zero, bits)
    out = np.asarray(bits).view(v.dtype)
    # NaNs stay NaN, except that a format without mantissa bits cannot hold one.
    return np.where(np.isnan(v), v if mantissa_bits > 0 else v.dtype.type(np.inf), out)


@_quiet
def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round x as if through a float format with the given field widths, bit-exact with XLA."""
    x = np.asarray(x)
    t = _type_of(x)
    if not t.is_float:
        raise _unsupported("reduce-precision", t)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    wide = x if t.name == "f64" else x.astype(_F32)  # narrow types work on their f32 value
    return _round_to(_reduce_precision_bits(wide, exponent_bits, mantissa_bits), t)


# --------------------------------------------------------------------------- stochastic-convert


@_quiet
def stochastic_convert(x: np.ndarray, random_bits: np.ndarray, to_type: TypeLike) -> np.ndarray:
    """Float -> signed int, rounding |x| up when random < fraction * 2^bits.

    Saturates (inf and values beyond the range go to min/max), NaN -> 0, as XLA's
    evaluator and StochasticConvertDecomposer define it.
    """
    x, random_bits = np.asarray(x), np.asarray(random_bits)
    t, r, to = _type_of(x), _type_of(random_bits), _as_type(to_type)
    if not t.is_float:
        raise _unsupported("stochastic-convert operand", t)
    if not (r.is_unsigned_int and r.bits == t.bits):
        raise ValueError(f"stochastic-convert of {t.name} needs u{t.bits} random bits, got {r.name}")
    if not to.is_signed_int:
        raise ValueError(f"stochastic-convert to {to.name} is not implemented by XLA (signed integers only)")
    v = x.astype(_F64)
    lo, hi = _int_range(to)
    magnitude = np.abs(v)
    whole = np.floor(magnitude)
    fraction = magnitude - whole  # exact
    threshold = np.where(np.isfinite(fraction), np.floor(np.ldexp(fraction, r.bits)), 0)
    round_up = _int_values(random_bits, r) < threshold.astype(_U64)
    finite = np.isfinite(v) & (v < float(hi)) & (v > float(lo))
    rounded = np.where(finite, whole, 0).astype(np.int64) + round_up
    out = np.where(np.signbit(v), -rounded, rounded)
    out = np.where(v >= float(hi), hi, np.where(v <= float(lo), lo, out))
    return _wrap(np.where(np.isnan(v), 0, out), to)


# --------------------------------------------------------------------------- iota


@_quiet
def iota(shape: Shape, iota_dimension: int) -> np.ndarray:
    """out[idx] = idx[iota_dimension], converted to the element type."""
    t, dims = shape.element_type, tuple(shape.dims)
    if t is None or t.is_pred or not t.is_array_type:
        raise ValueError(f"iota is not defined for element type {t}")
    if not 0 <= iota_dimension < len(dims):
        raise ValueError(f"iota_dimension {iota_dimension} out of range for rank {len(dims)}")
    index_shape = [-1 if i == iota_dimension else 1 for i in range(len(dims))]
    index = np.arange(dims[iota_dimension], dtype=np.int64).reshape(index_shape)
    return convert(np.broadcast_to(index, dims), _S64, t)
