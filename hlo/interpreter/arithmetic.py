"""The kernels of the arithmetic elementwise ops, in two tables keyed by opcode:

    UNARY[opcode](x, result_type)            abs, ceil, ..., sinh (and copy)
    BINARY[opcode](x, y, result_type)        add, ..., shift-right-logical, complex

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
  -0 < +0 (what XLA:CPU emits).
* Denormals are never flushed (the HloEvaluator does not flush; note that the
  PjRt CPU client runs compiled code with FTZ/DAZ set).
"""
from __future__ import annotations

import math

import numpy as np

from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES, PrimitiveType, complex_type_of, real_type_of
from .numerics import (C128, F64, U64, BinaryKernel, TypeLike, UnaryKernel, bit_patterns, check_result,
                       compute_dtype, from_bit_patterns, int_values, mask, quiet, round_to, same_type,
                       sign_extend, type_of, undefined_for, widen, wrap)


# --------------------------------------------------------------------------- kernel builders


def _unary(name: str, *, pred=None, integer=None, real=None, complex_=None,
           exact: bool = False, result=None) -> UnaryKernel:
    """A UNARY kernel dispatching on the operand's type class.

    integer(x, t) works on the storage array; real/complex_ get the operand widened
    to its compute dtype and return a wide result that is rounded once.
    result(t) gives the result type when it is not the operand type.
    """
    @quiet
    def kernel(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x = np.asarray(x)
        t = type_of(x)
        expected = result(t) if result is not None else t
        check_result(f"{name}({t.name})", expected, result_type)
        if t.is_pred and pred is not None:
            out = pred(x)
        elif t.is_integral and integer is not None:
            out = integer(x, t)
        elif t.is_float and real is not None:
            out = round_to(real(x.astype(compute_dtype(t, exact))), expected)
        elif t.is_complex and complex_ is not None:
            out = round_to(complex_(x.astype(C128)), expected)
        else:
            raise undefined_for(name, t)
        return np.asarray(out).astype(expected.dtype, copy=False)
    kernel.__name__ = f"unary_{name.replace('-', '_')}"
    return kernel


def _binary(name: str, *, pred=None, integer=None, real=None, complex_=None,
            exact: bool = False) -> BinaryKernel:
    """A BINARY kernel (same operand and result type) dispatching on type class."""
    @quiet
    def kernel(x: np.ndarray, y: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x, y = np.asarray(x), np.asarray(y)
        t = same_type(x, y, name)
        check_result(f"{name}({t.name})", t, result_type)
        if t.is_pred and pred is not None:
            out = pred(x, y)
        elif t.is_integral and integer is not None:
            out = integer(x, y, t)
        elif t.is_float and real is not None:
            dt = compute_dtype(t, exact)
            out = round_to(real(x.astype(dt), y.astype(dt)), t)
        elif t.is_complex and complex_ is not None:
            out = round_to(complex_(x.astype(C128), y.astype(C128)), t)
        else:
            raise undefined_for(name, t)
        return np.asarray(out).astype(t.dtype, copy=False)
    kernel.__name__ = f"binary_{name.replace('-', '_')}"
    return kernel


# --------------------------------------------------------------------------- integer kernels


def _int_abs(x, t):
    if t.is_unsigned_int:
        return x.copy()
    bits = bit_patterns(x, t)
    return from_bit_patterns(np.where(int_values(x, t) < 0, U64(0) - bits, bits), t)


def _int_negate(x, t):
    return from_bit_patterns(U64(0) - bit_patterns(x, t), t)


def _int_sign(x, t):
    v = int_values(x, t)
    return wrap((v > 0).astype(np.int64) - (v < 0).astype(np.int64), t)


def _int_not(x, t):
    return from_bit_patterns(~bit_patterns(x, t), t)


def _popcount(x, t):
    return from_bit_patterns(np.bitwise_count(bit_patterns(x, t)), t)


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0), by binary search."""
    v = np.asarray(v, dtype=U64)
    n = np.zeros(v.shape, dtype=np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= U64(1 << step)
        n += np.where(big, step, 0)
        v = np.where(big, v >> U64(step), v)
    return n + (v > 0)


def _count_leading_zeros(x, t):
    return wrap(t.bits - _bit_length(bit_patterns(x, t)), t)


def _int_add(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) + bit_patterns(y, t), t)


def _int_subtract(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) - bit_patterns(y, t), t)


def _int_multiply(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) * bit_patterns(y, t), t)


def _int_divide(x, y, t):
    a, b = int_values(x, t), int_values(y, t)
    zero = b == 0
    if t.is_unsigned_int:
        q = a // np.where(zero, U64(1), b)
        return from_bit_patterns(np.where(zero, mask(t.bits), q), t)
    minus_one = b == -1
    safe_b = np.where(zero | minus_one, 1, b)
    q = (a - np.fmod(a, safe_b)) // safe_b  # C division: truncate toward zero
    q = np.where(minus_one, -a, q)  # wraps INT_MIN to INT_MIN below
    return wrap(np.where(zero, -1, q), t)


def _int_remainder(x, y, t):
    a, b = int_values(x, t), int_values(y, t)
    zero = b == 0
    if t.is_unsigned_int:
        return wrap(np.where(zero, a, a % np.where(zero, U64(1), b)), t)
    minus_one = b == -1
    r = np.fmod(a, np.where(zero | minus_one, 1, b))  # C remainder: sign of dividend
    return wrap(np.where(zero, a, np.where(minus_one, 0, r)), t)


def _int_power(x, y, t):
    base = bit_patterns(x, t)
    exponent = int_values(y, t)
    e = exponent.astype(U64) if t.is_unsigned_int else np.where(exponent < 0, 0, exponent).astype(U64)
    acc = np.ones(np.broadcast_shapes(base.shape, e.shape), dtype=U64)
    while np.any(e):  # exponentiation by squaring, wrapping mod 2^64
        acc = np.where(e & U64(1), acc * base, acc)
        base = base * base
        e = e >> U64(1)
    if t.is_signed_int:
        a = int_values(x, t)
        odd = (exponent & 1) == 1
        negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return wrap(np.where(exponent < 0, negative, acc.view(np.int64)), t)
    return from_bit_patterns(acc, t)


def _int_maximum(x, y, t):
    return np.where(int_values(x, t) >= int_values(y, t), x, y)


def _int_minimum(x, y, t):
    return np.where(int_values(x, t) <= int_values(y, t), x, y)


def _int_and(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) & bit_patterns(y, t), t)


def _int_or(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) | bit_patterns(y, t), t)


def _int_xor(x, y, t):
    return from_bit_patterns(bit_patterns(x, t) ^ bit_patterns(y, t), t)


def _shift_amounts(y, t):
    """(safe amount, out-of-range mask); amounts are read as unsigned."""
    amount = bit_patterns(y, t)
    out_of_range = amount >= U64(t.bits)
    return np.where(out_of_range, U64(0), amount), out_of_range


def _shift_left(x, y, t):
    amount, oob = _shift_amounts(y, t)
    return from_bit_patterns(np.where(oob, U64(0), bit_patterns(x, t) << amount), t)


def _shift_right_logical(x, y, t):
    amount, oob = _shift_amounts(y, t)
    return from_bit_patterns(np.where(oob, U64(0), bit_patterns(x, t) >> amount), t)


def _shift_right_arithmetic(x, y, t):
    amount, oob = _shift_amounts(y, t)
    value = sign_extend(bit_patterns(x, t), t.bits)  # unsigned types shift their sign bit too
    saturated = np.where(value < 0, -1, 0)
    return wrap(np.where(oob, saturated, value >> amount.astype(np.int64)), t)


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
    return np.asarray(_erf_elementwise(x), dtype=F64)


def _float_maximum(x, y):
    equal_pick_x = ~(np.signbit(x) & ~np.signbit(y))  # max(-0, +0) = +0
    take_x = np.isnan(x) | (~np.isnan(y) & ((x > y) | ((x == y) & equal_pick_x)))
    return np.where(take_x, x, y)


def _float_minimum(x, y):
    equal_pick_x = ~(~np.signbit(x) & np.signbit(y))  # min(+0, -0) = -0
    take_x = np.isnan(x) | (~np.isnan(y) & ((x < y) | ((x == y) & equal_pick_x)))
    return np.where(take_x, x, y)


def _complex_maximum(x, y):
    """XLA:CPU compares complex numbers by their real parts, the left one winning a tie (a NaN
    loses every comparison)."""
    return np.where(x.real >= y.real, x, y)


def _complex_minimum(x, y):
    return np.where(x.real <= y.real, x, y)


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
    @quiet
    def kernel(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
        x = np.asarray(x)
        t = type_of(x)
        if not (t.is_float or t.is_complex):
            raise undefined_for(name, t)
        check_result(f"{name}({t.name})", real_type_of(t), result_type)
        return take(x, t)
    kernel.__name__ = f"unary_{name}"
    return kernel


@quiet
def _is_finite(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x = np.asarray(x)
    t = type_of(x)
    if not t.is_float:
        raise undefined_for("is-finite", t)
    check_result(f"is-finite({t.name})", PRIMITIVE_TYPES["pred"], result_type)
    return np.asarray(np.isfinite(widen(x, t)))


def _copy(x: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x = np.asarray(x)
    check_result("copy", type_of(x), result_type)
    return x.copy()


def _transcendental(name: str, real_fn, complex_fn=None) -> UnaryKernel:
    return _unary(name, real=real_fn, complex_=complex_fn if complex_fn is not None else real_fn)


UNARY: dict[Op, UnaryKernel] = {
    Op.ABS: _unary(Op.ABS, integer=_int_abs, real=np.abs, complex_=np.abs, exact=True, result=real_type_of),
    Op.CEIL: _unary(Op.CEIL, real=np.ceil, exact=True),
    Op.FLOOR: _unary(Op.FLOOR, real=np.floor, exact=True),
    Op.COUNT_LEADING_ZEROS: _unary(Op.COUNT_LEADING_ZEROS, integer=_count_leading_zeros),
    Op.POPCNT: _unary(Op.POPCNT, integer=_popcount),
    Op.IMAG: _component_kernel(Op.IMAG, _imag),
    Op.REAL: _component_kernel(Op.REAL, _real),
    Op.IS_FINITE: _is_finite,
    Op.NEGATE: _unary(Op.NEGATE, integer=_int_negate, real=np.negative, complex_=np.negative, exact=True),
    Op.NOT: _unary(Op.NOT, pred=np.logical_not, integer=_int_not),
    Op.ROUND_NEAREST_AFZ: _unary(Op.ROUND_NEAREST_AFZ, real=_round_half_away, exact=True),
    Op.ROUND_NEAREST_EVEN: _unary(Op.ROUND_NEAREST_EVEN, real=np.rint, exact=True),
    Op.SIGN: _unary(Op.SIGN, integer=_int_sign, real=_float_sign, complex_=_complex_sign, exact=True),
    Op.COPY: _copy,
    Op.CBRT: _unary(Op.CBRT, real=np.cbrt),
    Op.COSINE: _transcendental(Op.COSINE, np.cos),
    Op.SINE: _transcendental(Op.SINE, np.sin),
    Op.TAN: _transcendental(Op.TAN, np.tan),
    Op.TANH: _transcendental(Op.TANH, np.tanh),
    Op.EXPONENTIAL: _transcendental(Op.EXPONENTIAL, np.exp),
    Op.EXPONENTIAL_MINUS_ONE: _transcendental(Op.EXPONENTIAL_MINUS_ONE, np.expm1),
    Op.LOG: _transcendental(Op.LOG, np.log),
    Op.LOG_PLUS_ONE: _transcendental(Op.LOG_PLUS_ONE, np.log1p),
    Op.LOGISTIC: _transcendental(Op.LOGISTIC, _logistic, _complex_logistic),
    Op.RSQRT: _transcendental(Op.RSQRT, _rsqrt),
    Op.SQRT: _unary(Op.SQRT, real=np.sqrt, complex_=np.sqrt, exact=True),
    Op.ERF: _unary(Op.ERF, real=_erf),
    Op.ACOS: _transcendental(Op.ACOS, np.arccos),
    Op.ACOSH: _transcendental(Op.ACOSH, np.arccosh),
    Op.ASIN: _transcendental(Op.ASIN, np.arcsin),
    Op.ASINH: _transcendental(Op.ASINH, np.arcsinh),
    Op.ATAN: _transcendental(Op.ATAN, np.arctan),
    Op.ATANH: _transcendental(Op.ATANH, np.arctanh),
    Op.COSH: _transcendental(Op.COSH, np.cosh),
    Op.SINH: _transcendental(Op.SINH, np.sinh),
}


@quiet
def _complex(x: np.ndarray, y: np.ndarray, result_type: TypeLike) -> np.ndarray:
    x, y = np.asarray(x), np.asarray(y)
    t = same_type(x, y, "complex")
    if t.name not in ("f32", "f64"):
        raise undefined_for("complex", t)
    ct = complex_type_of(t)
    check_result(f"complex({t.name})", ct, result_type)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype=ct.dtype)
    out.real, out.imag = x, y  # not x + 1j*y: inf * 1j would make NaNs
    return out


BINARY: dict[Op, BinaryKernel] = {
    Op.ADD: _binary(Op.ADD, pred=np.logical_or, integer=_int_add, real=np.add, complex_=np.add, exact=True),
    Op.SUBTRACT: _binary(Op.SUBTRACT, integer=_int_subtract, real=np.subtract, complex_=np.subtract, exact=True),
    Op.MULTIPLY: _binary(Op.MULTIPLY, pred=np.logical_and, integer=_int_multiply, real=np.multiply,
                        complex_=np.multiply, exact=True),
    Op.DIVIDE: _binary(Op.DIVIDE, integer=_int_divide, real=np.divide, complex_=np.divide, exact=True),
    Op.REMAINDER: _binary(Op.REMAINDER, integer=_int_remainder, real=np.fmod, exact=True),
    Op.POWER: _binary(Op.POWER, integer=_int_power, real=np.power, complex_=_complex_power),
    Op.ATAN2: _binary(Op.ATAN2, real=np.arctan2, complex_=_complex_atan2),
    Op.COMPLEX: _complex,
    Op.MAXIMUM: _binary(Op.MAXIMUM, pred=np.logical_or, integer=_int_maximum, real=_float_maximum,
                        complex_=_complex_maximum, exact=True),
    Op.MINIMUM: _binary(Op.MINIMUM, pred=np.logical_and, integer=_int_minimum, real=_float_minimum,
                        complex_=_complex_minimum, exact=True),
    Op.AND: _binary(Op.AND, pred=np.logical_and, integer=_int_and),
    Op.OR: _binary(Op.OR, pred=np.logical_or, integer=_int_or),
    Op.XOR: _binary(Op.XOR, pred=np.logical_xor, integer=_int_xor),
    Op.SHIFT_LEFT: _binary(Op.SHIFT_LEFT, integer=_shift_left),
    Op.SHIFT_RIGHT_ARITHMETIC: _binary(Op.SHIFT_RIGHT_ARITHMETIC, integer=_shift_right_arithmetic),
    Op.SHIFT_RIGHT_LOGICAL: _binary(Op.SHIFT_RIGHT_LOGICAL, integer=_shift_right_logical),
}
