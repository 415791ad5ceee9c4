"""Literals: constant values, numpy-backed, and their text form.

A Literal is an array (a numpy array of the element type's storage dtype, in
logical row-major order whatever the layout) or a tuple of literals. A constant
written `{...}` in a dump is *elided*: its shape is known but its data is not.
"""
from __future__ import annotations

import math
import re
from typing import Optional

import ml_dtypes
import numpy as np

from . import values as V
from .shapes import PrimitiveType, Shape, TypeKind


class Literal:
    def __init__(self, shape: Shape, array: Optional[np.ndarray] = None, elements=None, elided: bool = False):
        self.shape = shape
        self.array = array
        self.elements: Optional[list[Literal]] = elements
        self.elided = elided

    @staticmethod
    def tuple_of(elements) -> "Literal":
        elements = list(elements)
        return Literal(Shape.tuple_of(e.shape for e in elements), elements=elements)

    @staticmethod
    def from_array(array: np.ndarray, shape: Shape) -> "Literal":
        return Literal(shape, np.asarray(array, dtype=shape.element_type.dtype).reshape(shape.dims))

    @property
    def is_tuple(self) -> bool:
        return self.elements is not None

    def value(self):
        """numpy array, or a tuple of values for tuple literals."""
        if self.elided:
            raise ValueError("the constant's data was elided ({...}) in the text")
        if self.is_tuple:
            return tuple(e.value() for e in self.elements)
        return self.array

    def __eq__(self, other) -> bool:
        if not isinstance(other, Literal) or not self.shape.compatible(other.shape) or self.elided != other.elided:
            return False
        if self.is_tuple:
            return all(a == b for a, b in zip(self.elements, other.elements))
        if self.elided:
            return True
        a, b = self.array, other.array
        if a.dtype.kind == "f" or a.dtype.kind == "c" or a.dtype.name in _SMALL_FLOAT_NAMES:
            return np.array_equal(a.view(_uint_view(a.dtype)), b.view(_uint_view(b.dtype)))
        return np.array_equal(a, b)

    def __hash__(self):
        return hash(self.shape.without_layout())


_SMALL_FLOAT_NAMES = {"bfloat16"} | {n for n in dir(ml_dtypes) if n.startswith("float")}


def _uint_view(dtype: np.dtype):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}.get(dtype.itemsize, np.uint8) \
        if dtype.kind != "c" else dtype


# --------------------------------------------------------------------------- parsing

def literal_from_value(shape: Shape, value) -> Literal:
    """Build the literal of `shape` from its parsed text (ValueError if it does not fit)."""
    if shape.is_tuple:
        items = value.items if isinstance(value, V.Paren) else None
        if items is None or len(items) != len(shape.tuple_shapes):
            raise ValueError(f"expected a tuple literal with {len(shape.tuple_shapes)} elements")
        return Literal(shape, elements=[literal_from_value(s, v) for s, v in zip(shape.tuple_shapes, items)])
    et = shape.element_type
    if et.kind is TypeKind.TOKEN:
        return Literal(shape, np.zeros((), np.uint8))
    if not et.is_array_type:
        raise ValueError(f"no literal of type {et.name}")
    if shape.rank == 0:
        if isinstance(value, (list, V.Braced)):
            raise ValueError("expected a scalar literal for a rank-0 shape")
        return Literal(shape, np.asarray(_scalar(value, et), dtype=et.dtype).reshape(()))
    items = _as_list(value)
    if items is None:
        raise ValueError(f"expected a literal in braces for shape with rank {shape.rank}")
    if len(items) == 1 and isinstance(items[0], V.EllipsisValue):
        return Literal(shape, None, elided=True)
    flat: list = []
    _collect(items, shape.dims, 0, flat)
    return Literal(shape, _to_array(flat, et).reshape(shape.dims))


def _as_list(value):
    if isinstance(value, list):
        return value
    if isinstance(value, V.Braced):
        return [_as_list(i) if isinstance(i, V.Braced) else i for i in value.items]
    return None


def _collect(items, dims, depth, flat):
    if len(items) != dims[depth]:
        raise ValueError(f"literal dimension {depth} has {len(items)} elements, expected {dims[depth]}")
    last = depth == len(dims) - 1
    for item in items:
        if last:
            if isinstance(item, (list, V.Braced)):
                raise ValueError(f"literal is nested deeper than the shape's rank {len(dims)}")
            flat.append(item)
        else:
            sub = _as_list(item)
            if sub is None:
                raise ValueError(f"literal needs {len(dims)} levels of braces")
            _collect(sub, dims, depth + 1, flat)


def _to_array(flat, et: PrimitiveType) -> np.ndarray:
    # Fast path: plain numbers of the right kind go through numpy in one call.
    if et.is_integral or et.is_pred:
        if all(type(x) is int for x in flat):
            return _checked_ints(flat, et)
    return np.array([_scalar(x, et) for x in flat], dtype=et.dtype) if flat else np.zeros((0,), et.dtype)


def _checked_ints(flat, et: PrimitiveType) -> np.ndarray:
    if et.is_pred:
        if any(x not in (0, 1) for x in flat):
            raise ValueError("pred literal elements must be 0/1 or true/false")
        return np.array(flat, dtype=np.bool_)
    lo, hi = int_range(et)
    if flat and (min(flat) < lo or max(flat) > hi):
        bad = next(x for x in flat if x < lo or x > hi)
        # XLA accepts u64-range values for s64 (bit-cast), as it stores 64-bit INTs bit-cast.
        if not (et.name == "s64" and 0 <= bad < 2 ** 64):
            raise ValueError(f"value {bad} is out of range for {et.name}")
        return np.array([x - 2 ** 64 if x >= 2 ** 63 else x for x in flat], dtype=np.int64)
    return np.array(flat, dtype=et.dtype)


def int_range(et: PrimitiveType) -> tuple[int, int]:
    if et.is_signed_int:
        return -(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1
    return 0, (1 << et.bits) - 1


def _scalar(x, et: PrimitiveType):
    """A Python/numpy scalar of type et from one parsed literal element."""
    if et.is_pred:
        if isinstance(x, bool):
            return x
        if type(x) is int and x in (0, 1):
            return bool(x)
        raise ValueError(f"expected true/false or 0/1 for pred, got {V.format_value(x)}")
    if et.is_integral:
        if isinstance(x, bool) or type(x) is not int:
            raise ValueError(f"expected an integer for {et.name}, got {_show(x)}")
        lo, hi = int_range(et)
        if not lo <= x <= hi:
            raise ValueError(f"value {x} is out of range for {et.name}")
        return x
    if et.is_complex:
        if isinstance(x, V.Paren) and len(x.items) == 2:
            re_, im = (_float(v, et) for v in x.items)
            return complex(re_, im)
        return complex(_float(x, et), 0.0)
    if isinstance(x, V.NanValue):
        return _nan_with_payload(x.text, et)
    return _float_in_range(_float(x, et), et)


def _show(x) -> str:
    try:
        return V.format_value(x)
    except TypeError:
        return repr(x)


def _float(x, et) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, V.NanValue)):
        raise ValueError(f"expected a number for {et.name}, got {_show(x)}")
    if isinstance(x, V.NanValue):
        return float("-nan") if x.text.startswith("-") else float("nan")
    return float(x)


def _float_in_range(v: float, et: PrimitiveType) -> float:
    if math.isfinite(v) and et.bits < 64:
        finfo = ml_dtypes.finfo(et.dtype)
        if abs(v) > float(finfo.max):
            # XLA rejects values beyond the finite range unless they round to it.
            rounded = float(np.asarray(v, dtype=np.float64).astype(et.dtype))
            if not math.isfinite(rounded) or abs(rounded) > float(finfo.max):
                raise ValueError(f"value {v!r} is out of range for {et.name}")
    return v


_NAN_RE = re.compile(r"(-?)nan(?:\(0x([0-9a-fA-F]+)\))?")


def _nan_with_payload(text: str, et: PrimitiveType):
    m = _NAN_RE.fullmatch(text)
    negative, payload = m.group(1) == "-", m.group(2)
    if payload is None or et.name not in _FLOAT_BITS:
        value = np.asarray(float("nan"), dtype=et.dtype)
        return -value if negative else value
    total, mant = _FLOAT_BITS[et.name]
    bits = ((1 << (total - 1 - mant)) - 1) << mant | (int(payload, 16) & ((1 << mant) - 1))
    if negative:
        bits |= 1 << (total - 1)
    uint = {16: np.uint16, 32: np.uint32, 64: np.uint64}[total]
    return np.asarray(bits, dtype=uint).view(et.dtype)


_FLOAT_BITS = {"f16": (16, 10), "bf16": (16, 7), "f32": (32, 23), "f64": (64, 52)}


# --------------------------------------------------------------------------- printing

def max_digits10(type_name: str) -> int:
    if type_name == "f64":
        return 17
    if type_name == "f32":
        return 9
    from .shapes import primitive_type
    nmant = ml_dtypes.finfo(primitive_type(type_name).dtype).nmant + 1
    return math.ceil(nmant * math.log10(2) + 1)


def format_float(v, type_name: str = "f32") -> str:
    """XLA's RoundTripFpToString: %g with digits10, else max_digits10 (f16 and smaller: max_digits10)."""
    f = float(v)
    if math.isnan(f):
        return _format_nan(v, type_name)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if type_name in ("f32", "f64"):
        short = "%.*g" % (6 if type_name == "f32" else 15, f)
        if _round_trips(short, f, type_name):
            return short
        return "%.*g" % (9 if type_name == "f32" else 17, f)
    return "%.*g" % (max_digits10(type_name), f)


def _round_trips(text: str, f: float, type_name: str) -> bool:
    if type_name == "f32":
        return np.float32(float(text)) == np.float32(f)
    return float(text) == f


def _format_nan(v, type_name: str) -> str:
    arr = np.asarray(v)
    sign = "-" if np.signbit(arr) else ""
    if type_name in _FLOAT_BITS and arr.dtype.itemsize * 8 == _FLOAT_BITS[type_name][0]:
        total, mant = _FLOAT_BITS[type_name]
        uint = {16: np.uint16, 32: np.uint32, 64: np.uint64}[total]
        bits = int(arr.view(uint))
        payload = bits & ((1 << mant) - 1)
        if payload != 1 << (mant - 1):
            return f"{sign}nan(0x{payload:x})"
    return f"{sign}nan"


def format_scalar(x, et: PrimitiveType, in_array: bool = False) -> str:
    if et.is_pred:
        b = bool(x)
        return ("1" if b else "0") if in_array else ("true" if b else "false")
    if et.is_integral:
        return str(int(x))
    if et.is_complex:
        c = complex(x)
        part = "f32" if et.name == "c64" else "f64"
        return f"({format_float(np.asarray(x).real, part)}, {format_float(np.asarray(x).imag, part)})"
    return format_float(x, et.name)


def format_literal(lit: Literal, with_shape: bool = False) -> str:
    """One-line text of a literal, as XLA prints it inside instructions."""
    from .printer import format_shape
    prefix = format_shape(lit.shape) + " " if with_shape and not lit.is_tuple else ""
    if lit.is_tuple:
        return "( " + ", ".join(format_literal(e, with_shape) for e in lit.elements) + " )"
    if lit.elided:
        return prefix + "{...}"
    et = lit.shape.element_type
    if et.kind is TypeKind.TOKEN:
        return "token"
    if lit.shape.rank == 0:
        return prefix + format_scalar(lit.array.reshape(()).item() if et.is_pred or et.is_integral
                                      else lit.array.reshape(())[()], et)
    return prefix + _format_dense(lit.array, et)


def _format_dense(array: np.ndarray, et: PrimitiveType) -> str:
    rank = array.ndim
    if et.is_pred or et.is_integral:
        elems = [str(int(x)) for x in array.reshape(-1).tolist()]
    else:
        flat = array.reshape(-1)
        elems = [format_scalar(flat[i], et, in_array=True) for i in range(flat.size)]
    pieces: list[str] = []
    counter = iter(elems)

    def brace(b: str, dims_left: tuple, accum: list) -> str:
        if rank == 1:
            return b
        if len(dims_left) == 1:
            return ("{" + ("" if dims_left[0] <= 1 else " ")) if b == "{" else (("" if dims_left[0] <= 1 else " ") + "}")
        if b == "{":
            if rank > 3 and accum:
                return "{ " + f"/*i{len(accum) - 1}={accum[-1]}*/ "
            return "{ "
        return " }"

    def rec(dims_left: tuple, accum: list):
        if not dims_left:
            pieces.append(next(counter))
            return
        pieces.append(brace("{", dims_left, accum))
        for i in range(dims_left[0]):
            accum.append(i)
            rec(dims_left[1:], accum)
            accum.pop()
            if i < dims_left[0] - 1:
                pieces.append(", ")
        pieces.append(brace("}", dims_left, accum))

    rec(tuple(array.shape), [])
    return re.sub(r" +", " ", "".join(pieces))
