"""The kernels of the conversions: convert, bitcast-convert, reduce-precision, stochastic-convert.

Decisions (XLA's HloEvaluator and XLA:CPU agree unless said otherwise):

* convert: float -> int truncates, saturates, NaN -> 0; int -> float and
  f64 -> a float narrower than f32 go through f32 (as XLA literals and ml_dtypes
  do); complex -> real keeps the real part; anything -> pred is x != 0.
* bitcast-convert: one wide element is a run of narrow ones along a new minor
  dimension, element 0 holding the least-significant bits (little-endian),
  sub-byte types included (XLA's BitcastDtypesExpander).
* reduce-precision: XLA's bit algorithm; stochastic-convert: XLA's evaluator and
  StochasticConvertDecomposer.
"""
from __future__ import annotations

import sys

import numpy as np

from ..shapes import PrimitiveType, real_type_of
from .numerics import (F32, F64, U64, UINT_OF_WIDTH, TypeLike, as_type, bit_patterns, from_bit_patterns,
                       int_range, int_values, quiet, round_to, type_of, undefined_for, widen, wrap)


# --------------------------------------------------------------------------- convert


def _checked_operand(what: str, x: np.ndarray, from_type: TypeLike, to_type: TypeLike
                     ) -> tuple[np.ndarray, PrimitiveType, PrimitiveType]:
    """(x as an array, from type, to type) once x is known to hold array elements of from_type."""
    x = np.asarray(x)
    frm, to = as_type(from_type), as_type(to_type)
    if not (frm.is_array_type and to.is_array_type):
        raise ValueError(f"cannot {what} {frm.name} to {to.name}")
    if x.dtype != frm.dtype:
        raise ValueError(f"{what}: operand is {x.dtype}, expected {frm.name}")
    return x, frm, to


def _float_to_int(x: np.ndarray, to: PrimitiveType) -> np.ndarray:
    """Truncate toward zero, saturate to the range of `to`, NaN -> 0."""
    whole = np.trunc(x.astype(F64))
    lo, hi = int_range(to)
    wide = np.int64 if to.is_signed_int else U64
    nan = np.isnan(whole)
    too_big = whole >= float(hi)  # float(hi) may round up (64-bit): then '>=' is exact
    too_small = whole <= float(lo)
    inside = np.where(nan | too_big | too_small, 0, whole).astype(wide)
    out = np.where(too_big, wide(hi), np.where(too_small, wide(lo), inside))
    return wrap(np.where(nan, wide(0), out), to)


def _int_to_float(x: np.ndarray, frm: PrimitiveType, to: PrimitiveType) -> np.ndarray:
    values = int_values(x, frm)
    if to.name == "f64":
        return values.astype(F64)
    return values.astype(F32).astype(to.dtype)  # narrow types round via f32, like XLA literals


def _float_to_float(x: np.ndarray, to: PrimitiveType) -> np.ndarray:
    if to.name == "f64":
        return x.astype(F64)
    # Every type but f64 widens exactly to f32; ml_dtypes rounds from f32 to the
    # target with its own overflow rules (inf, NaN or saturation).
    return x.astype(F32).astype(to.dtype)


def _nonzero(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    if t.is_float:
        return np.asarray(widen(x, t) != 0)  # NaN -> true
    return np.asarray(int_values(x, t) != 0)


@quiet
def convert(x: np.ndarray, from_type: TypeLike, to_type: TypeLike) -> np.ndarray:
    """HLO convert (element-type conversion) with XLA's rounding and saturation."""
    x, frm, to = _checked_operand("convert", x, from_type, to_type)
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
        return wrap(int_values(x, frm), to)
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
    bits = bit_patterns(x, frm)
    if frm.bits > to.bits:
        shifts = np.arange(frm.bits // to.bits, dtype=U64) * U64(to.bits)
        return from_bit_patterns(bits[..., None] >> shifts, to)
    if frm.bits < to.bits:
        shifts = np.arange(to.bits // frm.bits, dtype=U64) * U64(frm.bits)
        return from_bit_patterns(np.bitwise_or.reduce(bits << shifts, axis=-1), to)
    return from_bit_patterns(bits, to).reshape(shape)


@quiet
def bitcast_convert(x: np.ndarray, from_type: TypeLike, to_type: TypeLike) -> np.ndarray:
    """Reinterpret the bits; a width change adds/removes a minor dimension."""
    x, frm, to = _checked_operand("bitcast-convert", x, from_type, to_type)
    shape = _bitcast_shape(x.shape, frm, to)
    if frm.bits % 8 == 0 and to.bits % 8 == 0:
        return _bitcast_bytes(x, frm, to, shape)
    return _bitcast_bits(x, frm, to, shape)


# --------------------------------------------------------------------------- reduce-precision


def _reduce_precision_bits(v: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's bit algorithm on an f32 or f64 array (no subnormals in the small format)."""
    nbits = v.dtype.itemsize * 8
    uint = UINT_OF_WIDTH[nbits]
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


@quiet
def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round x as if through a float format with the given field widths, bit-exact with XLA."""
    x = np.asarray(x)
    t = type_of(x)
    if not t.is_float:
        raise undefined_for("reduce-precision", t)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    wide = x if t.name == "f64" else x.astype(F32)  # narrow types work on their f32 value
    return round_to(_reduce_precision_bits(wide, exponent_bits, mantissa_bits), t)


# --------------------------------------------------------------------------- stochastic-convert


@quiet
def stochastic_convert(x: np.ndarray, random_bits: np.ndarray, to_type: TypeLike) -> np.ndarray:
    """Float -> signed int, rounding |x| up when random < fraction * 2^bits.

    Saturates (inf and values beyond the range go to min/max), NaN -> 0, as XLA's
    evaluator and StochasticConvertDecomposer define it.
    """
    x, random_bits = np.asarray(x), np.asarray(random_bits)
    t, r, to = type_of(x), type_of(random_bits), as_type(to_type)
    if not t.is_float:
        raise undefined_for("stochastic-convert operand", t)
    if not (r.is_unsigned_int and r.bits == t.bits):
        raise ValueError(f"stochastic-convert of {t.name} needs u{t.bits} random bits, got {r.name}")
    if not to.is_signed_int:
        raise ValueError(f"stochastic-convert to {to.name} is not implemented by XLA (signed integers only)")
    v = x.astype(F64)
    lo, hi = int_range(to)
    magnitude = np.abs(v)
    whole = np.floor(magnitude)
    fraction = magnitude - whole  # exact
    threshold = np.where(np.isfinite(fraction), np.floor(np.ldexp(fraction, r.bits)), 0)
    round_up = int_values(random_bits, r) < threshold.astype(U64)
    finite = np.isfinite(v) & (v < float(hi)) & (v > float(lo))
    rounded = np.where(finite, whole, 0).astype(np.int64) + round_up
    out = np.where(np.signbit(v), -rounded, rounded)
    out = np.where(v >= float(hi), hi, np.where(v <= float(lo), lo, out))
    return wrap(np.where(np.isnan(v), 0, out), to)
