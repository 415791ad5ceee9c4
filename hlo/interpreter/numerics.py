"""Element-type plumbing of the elementwise kernels: type checks, bit patterns, float widening.

Values are numpy arrays in the storage dtype of their HLO element type (see `hlo.shapes`).
Integer kernels work on 64-bit patterns (`bit_patterns`) or exact values (`int_values`)
and cut results down to the type's width (`from_bit_patterns`, `wrap`); float kernels
compute in a wider dtype (`compute_dtype`, `widen`) and round once (`round_to`).
"""
from __future__ import annotations

import functools
from typing import Callable, Union

import ml_dtypes
import numpy as np

from ..shapes import PrimitiveType, primitive_type, type_of_dtype

UnaryKernel = Callable[[np.ndarray, PrimitiveType], np.ndarray]
BinaryKernel = Callable[[np.ndarray, np.ndarray, PrimitiveType], np.ndarray]
TypeLike = Union[PrimitiveType, str]

U64 = np.uint64
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
C128 = np.dtype(np.complex128)
UINT_OF_WIDTH = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# --------------------------------------------------------------------------- plumbing


def quiet(fn):
    """Run fn with numpy floating-point warnings silenced (inf/NaN are expected)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return wrapper


def as_type(t: TypeLike) -> PrimitiveType:
    return primitive_type(t) if isinstance(t, str) else t


def type_of(x: np.ndarray) -> PrimitiveType:
    try:
        return type_of_dtype(x.dtype)
    except KeyError:
        raise ValueError(f"numpy dtype {x.dtype} is not the storage of an HLO element type") from None


def same_type(x: np.ndarray, y: np.ndarray, what: str) -> PrimitiveType:
    t, u = type_of(x), type_of(y)
    if t != u:
        raise ValueError(f"{what}: operand types differ ({t.name} vs {u.name})")
    return t


def check_result(what: str, expected: PrimitiveType, result_type: TypeLike) -> None:
    if as_type(result_type) != expected:
        raise ValueError(f"{what} yields {expected.name}, not {as_type(result_type).name}")


def undefined_for(what: str, t: PrimitiveType) -> ValueError:
    return ValueError(f"{what} is not defined for element type {t.name}")


def is_float_like(dtype: np.dtype) -> bool:
    """True for numpy floats and the ml_dtypes float types (bf16, f8, f4)."""
    if dtype.kind == "f":
        return True
    # ml_dtypes floats report kind 'V'; only they are recognised by ml_dtypes.finfo.
    if dtype.kind != "V":
        return False
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- bit patterns


def mask(bits: int) -> np.uint64:
    return U64((1 << bits) - 1)


def bit_patterns(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """The element bit patterns as uint64, limited to the type's width."""
    x = np.asarray(x)
    if t.is_pred or t.is_unsigned_int:
        return x.astype(U64)
    if t.is_signed_int:
        v = x.astype(np.int64).astype(U64)  # two's complement
        return v & mask(t.bits) if t.bits < 64 else v
    if t.is_float:
        if t.bits < 8:  # ml_dtypes keeps a sub-byte float in the low bits of a byte
            return x.view(np.uint8).astype(U64) & mask(t.bits)
        return x.view(UINT_OF_WIDTH[t.bits]).astype(U64)
    raise undefined_for("bit-level access", t)


def sign_extend(bits: np.ndarray, width: int) -> np.ndarray:
    """Read the low `width` bits (uint64) as a signed number (int64)."""
    bits = np.asarray(bits)
    if width == 64:
        return bits.view(np.int64)
    sign = 1 << (width - 1)
    return (bits.astype(np.int64) ^ sign) - sign


def from_bit_patterns(bits: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Elements of type t whose bit patterns are the low t.bits bits of `bits`."""
    bits = np.asarray(bits).astype(U64)
    if t.bits < 64:
        bits = bits & mask(t.bits)
    if t.is_pred:
        return bits != 0
    if t.is_signed_int:
        return sign_extend(bits, t.bits).astype(t.dtype)
    if t.is_unsigned_int:
        return bits.astype(t.dtype)
    if t.is_float:
        storage = np.uint8 if t.bits < 8 else UINT_OF_WIDTH[t.bits]
        return bits.astype(storage).view(t.dtype)
    raise undefined_for("bit-level access", t)


def int_values(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Exact integer values: int64 for signed types, uint64 for unsigned and pred."""
    return np.asarray(x).astype(np.int64 if t.is_signed_int else U64)


def wrap(values: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Two's-complement wrap of int64/uint64 values to type t."""
    return from_bit_patterns(np.asarray(values).astype(U64), t)


def int_range(t: PrimitiveType) -> tuple[int, int]:
    if t.is_signed_int:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


# --------------------------------------------------------------------------- float plumbing


def compute_dtype(t: PrimitiveType, exact: bool) -> np.dtype:
    """Where a float op is evaluated: f64 unless f32 already rounds correctly."""
    if t.is_complex:
        return C128
    if t.name == "f64" or not exact:
        return F64
    return F32


def round_to(y, t: PrimitiveType) -> np.ndarray:
    """Round a wide result once to t (narrow floats via their f32 value)."""
    y = np.asarray(y)
    if t.is_float and t.name not in ("f32", "f64") and y.dtype == F64:
        y = y.astype(F32)
    return y.astype(t.dtype)


def widen(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Exact upcast of a float array for comparisons (narrow types to f32)."""
    return x if t.name in ("f32", "f64") else x.astype(F32)


# --------------------------------------------------------------------------- where numpy is exact

# Storage dtypes on which numpy computes exactly what XLA does (IEEE arithmetic,
# two's-complement wrapping): the handlers' fast paths call numpy directly for them.
IEEE_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
REAL_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))
NATIVE_INTS = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                               np.uint8, np.uint16, np.uint32, np.uint64))
BOOL = np.dtype(np.bool_)
