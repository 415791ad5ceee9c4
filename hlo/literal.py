"""Literals: constant values, numpy-backed, and their text form.

A Literal is an array (a numpy array of the element type's storage dtype, in
logical row-major order whatever the layout) or a tuple of literals. A constant
written `{...}` in a dump is *elided*: its shape is known but its data is not.
"""
from __future__ import annotations

import functools
import math
import re
from typing import Optional

import ml_dtypes
import numpy as np

from . import values as V
from .shapes import PRIMITIVE_TYPES, PrimitiveType, Shape, TypeKind, format_shape
from .textutil import NAN_PAYLOAD_BITS, SIGNED_NAN_ONLY, format_float, uint_of


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
        # Bit equality: NaN payloads and the sign of zero count.
        return a.shape == b.shape and a.dtype == b.dtype and \
            np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()

    def __hash__(self):
        return hash(self.shape.without_layout())


# --------------------------------------------------------------------------- parsing

class LiteralError(ValueError):
    """A literal that does not fit its shape; `index` is the row-major element at fault, if any."""

    def __init__(self, message: str, index: Optional[int] = None):
        super().__init__(message)
        self.index = index


def literal_from_value(shape: Shape, value) -> Literal:
    """Build the literal of `shape` from its parsed text (LiteralError if it does not fit)."""
    if shape.is_tuple:
        items = value.items if isinstance(value, V.Paren) else None
        if items is None or len(items) != len(shape.tuple_shapes):
            raise LiteralError(f"expected a tuple literal ( ... ) with {len(shape.tuple_shapes)} elements")
        return Literal(shape, elements=[literal_from_value(s, v) for s, v in zip(shape.tuple_shapes, items)])
    et = shape.element_type
    if et.kind is TypeKind.TOKEN:
        return Literal(shape, np.zeros((), np.uint8))
    if not et.is_array_type:
        raise LiteralError(f"no literal of type {et.name}")
    if shape.rank == 0:
        if isinstance(value, (list, V.Braced)):
            raise LiteralError("expected a scalar literal for a rank-0 shape, not braces")
        return Literal(shape, _to_array([value], et).reshape(()))
    items = _as_list(value)
    if items is None:
        raise LiteralError(f"expected a literal in braces for shape with rank {shape.rank}")
    if len(items) == 1 and isinstance(items[0], V.EllipsisValue):
        return Literal(shape, None, elided=True)
    if any(d < 0 for d in shape.dims) or shape.is_dynamic:
        raise LiteralError("literals of dynamic shapes are not supported")
    flat: list = []
    _collect(items, shape.dims, 0, flat)
    return Literal(shape, _to_array(flat, et).reshape(shape.dims))


def _as_list(value):
    if isinstance(value, list):
        return value
    if isinstance(value, V.Braced):
        return [_as_list(i) if isinstance(i, V.Braced) else i for i in value.items]
    return None


_NESTED = (list, V.Braced, V.EllipsisValue)


def _collect(items, dims, depth, flat):
    if depth and len(items) == 1 and isinstance(items[0], V.EllipsisValue):
        raise LiteralError("'...' (elided data) must be the whole literal: {...}")
    if len(items) != dims[depth]:
        raise LiteralError(f"literal dimension {depth} has {len(items)} elements, expected {dims[depth]}",
                           len(flat) if depth and items else None)
    if depth == len(dims) - 1:
        for item in items:
            if isinstance(item, _NESTED):
                if isinstance(item, V.EllipsisValue):
                    raise LiteralError("'...' (elided data) must be the whole literal: {...}")
                raise LiteralError(f"literal is nested deeper than the shape's rank {len(dims)}")
        flat.extend(items)
        return
    for item in items:
        if isinstance(item, V.EllipsisValue):
            raise LiteralError("'...' (elided data) must be the whole literal: {...}")
        else:
            sub = _as_list(item)
            if sub is None:
                raise LiteralError(f"literal needs {len(dims)} levels of braces", len(flat))
            _collect(sub, dims, depth + 1, flat)


_INT_TYPES = (int, V.NegativeZero)


def _to_array(flat, et: PrimitiveType) -> np.ndarray:
    """A 1-D array of type et from parsed elements (LiteralError naming the element at fault)."""
    if not flat:
        return np.zeros((0,), et.dtype)
    if et.is_integral:
        for i, x in enumerate(flat):
            if type(x) not in _INT_TYPES:
                raise LiteralError(f"expected an integer for {et.name}, got {_show(x)}", i)
        return _checked_ints([int(x) for x in flat], et)
    if et.is_pred:
        return np.array([_pred(x, i) for i, x in enumerate(flat)], dtype=np.bool_)
    if et.is_complex:
        part = "f32" if et.name == "c64" else "f64"
        re_, im = [], []
        for i, x in enumerate(flat):
            if isinstance(x, V.Paren) and len(x.items) == 2:
                re_.append(x.items[0])
                im.append(x.items[1])
            elif isinstance(x, V.Paren):
                raise LiteralError("a complex number is written (real, imag)", i)
            else:
                re_.append(x)
                im.append(0)
        out = np.empty(len(flat), dtype=et.dtype)
        ctype = _COMPONENT[part]
        out.real = _floats(re_, ctype, part)
        out.imag = _floats(im, ctype, part)
        return out
    return _floats(flat, et, et.name)


_COMPONENT = {"f32": PRIMITIVE_TYPES["f32"], "f64": PRIMITIVE_TYPES["f64"]}


def _pred(x, i) -> bool:
    if isinstance(x, bool):
        return x
    if type(x) in _INT_TYPES:
        return x != 0  # (XLA reads any integer: nonzero is true)
    raise LiteralError(f"expected true/false or an integer for pred, got {_show(x)}", i)


def _checked_ints(flat, et: PrimitiveType) -> np.ndarray:
    lo, hi = int_range(et)
    if min(flat) < lo or max(flat) > hi:
        bad = next(i for i, x in enumerate(flat) if x < lo or x > hi)
        # XLA accepts u64-range values for s64 (bit-cast), as it stores 64-bit INTs bit-cast.
        if not (et.name == "s64" and all(lo <= x < 2 ** 64 for x in flat)):
            raise LiteralError(f"value {flat[bad]} is out of range for {et.name}", bad)
        return np.array([x - 2 ** 64 if x >= 2 ** 63 else x for x in flat], dtype=np.int64)
    return np.array(flat, dtype=et.dtype)


def int_range(et: PrimitiveType) -> tuple[int, int]:
    if et.is_signed_int:
        return -(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1
    return 0, (1 << et.bits) - 1


def _show(x) -> str:
    try:
        return V.format_value(x)
    except TypeError:
        return repr(x)


_PLAIN_NUMBERS = {int, float}


def _floats(flat, et: PrimitiveType, type_name: str) -> np.ndarray:
    """Array of float type et; NaNs get their exact bits (sign, payload) written afterwards."""
    if set(map(type, flat)) <= _PLAIN_NUMBERS:  # no NaN, inf, -0 or non-numbers: convert at once
        values = flat
        _check_overflow(values, et)
        with np.errstate(over="ignore"):
            arr = np.array(values, dtype=np.float64).astype(et.dtype)
        _check_range(values, arr, et)
        return arr
    values = []
    nans = []
    for i, x in enumerate(flat):
        if isinstance(x, V.NanValue):
            nans.append((i, _nan_bits(x.text, et, i)))
            values.append(1.0)  # placeholder every float type can hold; the bits are written below
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            raise LiteralError(f"expected a number for {et.name}, got {_show(x)}", i)
        else:
            if type(x) is float and math.isinf(x):
                _check_overflow([x], et, i)
            v = float(x)  # V.NEG_ZERO gives -0.0
            if math.isinf(v) and not _has_inf(et):
                raise LiteralError(f"{et.name} has no infinity", i)
            values.append(v)
    with np.errstate(over="ignore"):
        arr = np.array(values, dtype=np.float64).astype(et.dtype)
    _check_range(values, arr, et)
    if nans:
        bits = arr.view(uint_of(et))
        for i, b in nans:
            bits[i] = b
    return arr


def _check_overflow(values, et: PrimitiveType, first: int = 0) -> None:
    """A written number too large for a double reads as a plain infinity (`inf` itself is a
    values.Inf): XLA refuses it whatever the type."""
    infinite = np.nonzero(np.isinf(np.asarray(values, dtype=np.float64)))[0]
    if infinite.size:
        raise LiteralError(f"value is out of range for {et.name}: beyond the double range (+/-1.79769e+308)",
                           first + int(infinite[0]))


def _check_range(values, arr, et: PrimitiveType) -> None:
    """XLA rejects finite values that do not round to a finite value of the type."""
    if et.bits >= 64:
        return
    finite_in = np.isfinite(np.asarray(values, dtype=np.float64))
    finite_out = np.isfinite(arr.astype(np.float64))
    bad = np.nonzero(finite_in & ~finite_out)[0]
    if bad.size:
        i = int(bad[0])
        raise LiteralError(f"value {values[i]!r} is out of range for {et.name}", i)


def _has_inf(et: PrimitiveType) -> bool:
    return bool(np.isinf(np.asarray(float("inf")).astype(et.dtype)))


_NAN_RE = re.compile(r"(-?)nan(?:\(0x([0-9a-fA-F]+)\))?")


def _nan_bits(text: str, et: PrimitiveType, index: int) -> int:
    """The bit pattern of `nan`, `-nan` or `nan(0x...)` for type et."""
    m = _NAN_RE.fullmatch(text)
    negative, payload = m.group(1) == "-", m.group(2)
    base = np.asarray(float("nan")).astype(et.dtype)
    if not np.isnan(base.astype(np.float64)):
        raise LiteralError(f"{et.name} has no NaN", index)
    total = et.dtype.itemsize * 8
    mant = NAN_PAYLOAD_BITS.get(et.name)
    if mant is None:
        if payload is not None:
            raise LiteralError(f"{et.name} NaNs have no payload bits", index)
        bits = int(base.view(uint_of(et)))
        if et.name in SIGNED_NAN_ONLY:
            bits = bits & ~(1 << (total - 1)) | ((1 << (total - 1)) if negative else 0)
        return bits
    value = 1 << (mant - 1) if payload is None else int(payload, 16)
    if not 0 < value < (1 << mant):
        raise LiteralError(f"NaN payload 0x{value:x} does not fit the {mant} payload bits of {et.name} "
                           f"(and must not be 0)", index)
    exponent_ones = ((1 << (total - 1 - mant)) - 1) << mant
    return exponent_ones | value | ((1 << (total - 1)) if negative else 0)


# --------------------------------------------------------------------------- printing

def format_scalar(x, et: PrimitiveType, in_array: bool = False) -> str:
    if et.is_pred:
        b = bool(x)
        return ("1" if b else "0") if in_array else ("true" if b else "false")
    if et.is_integral:
        return str(int(x))
    if et.is_complex:
        part = "f32" if et.name == "c64" else "f64"
        return f"({format_float(np.asarray(x).real, part)}, {format_float(np.asarray(x).imag, part)})"
    return format_float(x, et.name)


def format_literal(lit: Literal, with_shape: bool = False) -> str:
    """One-line text of a literal, as XLA prints it inside instructions."""
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
