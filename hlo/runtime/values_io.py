"""Values in and out of the interpreter: npz/npy files, storage dtypes, literal text.

Inside the interpreter every array has the numpy *storage* dtype of its HLO
element type (hlo.shapes: ml_dtypes types for bf16, f8, f4 and sub-byte ints).
Files use plain numpy dtypes, following the corpus convention:

* bf16, the f8 types and f4e2m1fn travel as their raw bits, in an unsigned
  integer array of the same width (bf16 -> uint16, f8/f4 -> uint8);
* sub-byte integers (s1/s2/s4, u1/u2/u4) travel as int8/uint8 values;
* every other type uses its own numpy dtype (pred -> bool, c64 -> complex64 ...).

Inputs are keyed arg0..argN (one per array leaf of the entry parameters, in
parameter order), outputs out0..outM (the result's array leaves, depth-first);
with several devices every key is prefixed with dev{d}_.
"""
from __future__ import annotations

import io
import re
import zipfile
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np

from ..diagnostics import error
from ..literal import Literal, format_literal
from ..shapes import UNBOUNDED, PrimitiveType, Shape, TypeKind, type_of_dtype


class Token:
    """The value of a token[] (ordering only, no data)."""

    _instance: Optional["Token"] = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "token"


TOKEN = Token()


_RAW_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16)}


def file_dtype(t: PrimitiveType) -> np.dtype:
    """The numpy dtype an element type is stored with in npz/npy files."""
    if t.is_float and t.dtype.kind == "V":  # ml_dtypes floats: raw bits
        return _RAW_BITS[max(8, t.bits)]
    if t.is_integral and t.bits < 8:
        return np.dtype(np.int8 if t.is_signed_int else np.uint8)
    return t.dtype


def to_storage(value, shape: Shape):
    """A user value as an interpreter value of `shape`, converting file dtypes
    (raw bits, sub-byte ints) and Python numbers. Values that cannot be converted
    are returned as they are; `check_arguments` then reports the mismatch."""
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)):
            return value
        if len(value) != len(shape.tuple_shapes):
            return tuple(value)
        return tuple(to_storage(v, s) for v, s in zip(value, shape.tuple_shapes))
    if shape.is_token:
        return TOKEN if value is None or value is TOKEN else value
    t = shape.element_type
    if not isinstance(value, np.ndarray):
        try:
            return np.asarray(value, dtype=t.dtype)
        except (TypeError, ValueError):
            return value
    if value.dtype == t.dtype:
        return value
    if value.dtype == file_dtype(t):
        if t.is_float:
            return value.view(t.dtype)
        return value.astype(t.dtype)
    return value


def from_storage(array: np.ndarray) -> np.ndarray:
    """An interpreter array in its file dtype (raw bits for ml_dtypes floats)."""
    array = np.asarray(array)
    if array.dtype.kind != "V":
        return np.asarray(array, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    t = type_of_dtype(array.dtype)
    if t.is_float:
        return np.asarray(array, order="C").view(file_dtype(t))
    return array.astype(file_dtype(t))


# --------------------------------------------------------------------------- keyed files

_KEY = re.compile(r"^(?:dev(\d+)_)?([A-Za-z_]+?)(\d+)$")


def split_key(key: str) -> Optional[tuple[Optional[int], str, int]]:
    """'dev1_arg3' -> (1, 'arg', 3); 'out0' -> (None, 'out', 0); None if malformed."""
    m = _KEY.match(key)
    if not m:
        return None
    return (int(m.group(1)) if m.group(1) is not None else None, m.group(2), int(m.group(3)))


def load_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (or of one .npy file, keyed ''); ValueError if unreadable."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            return {"": np.asarray(data)}
        with data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def load_array(path: str) -> np.ndarray:
    """One array from an .npy file (or a single-array .npz)."""
    arrays = load_arrays(path)
    if len(arrays) != 1:
        raise ValueError(f"{path} holds {len(arrays)} arrays; expected exactly one")
    return next(iter(arrays.values()))


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def array_leaves(value) -> list[np.ndarray]:
    """The array leaves of a value, depth-first (tokens have no data and are skipped)."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in array_leaves(v)]
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return [np.asarray(value)]
    return []


def output_arrays(value, prefix: str = "") -> dict[str, np.ndarray]:
    """{prefix}out0..outM: a result's array leaves in file dtypes."""
    return {f"{prefix}out{i}": from_storage(a) for i, a in enumerate(array_leaves(value))}


def assemble(shapes: Sequence[Shape], arrays: Iterable) -> list:
    """Build one value per shape from array leaves given in depth-first order."""
    it = iter(arrays)
    return [_assemble(s, it) for s in shapes]


def _assemble(shape: Shape, it: Iterator):
    if shape.is_tuple:
        return tuple(_assemble(s, it) for s in shape.tuple_shapes)
    if shape.is_token:
        return TOKEN
    return to_storage(next(it), shape)


def leaf_count(shape: Shape) -> int:
    """Array leaves of a shape (tokens excluded): how many argK keys a parameter takes."""
    return sum(1 for _, s in shape.leaves() if not s.is_token)


# --------------------------------------------------------------------------- text

def literal_of(value, shape: Shape) -> Literal:
    if shape.is_tuple:
        return Literal.tuple_of(literal_of(v, s) for v, s in zip(value, shape.tuple_shapes))
    if shape.is_token:
        return Literal(shape.without_layout(), np.zeros((), np.uint8))
    return Literal(shape.without_layout(), np.asarray(value))


def format_value(value, shape: Shape) -> str:
    """HLO literal text of a value: `f32[2] {1, 2}`, `( s32[] 1, pred[] true )`."""
    return format_literal(literal_of(value, shape), with_shape=True)


# --------------------------------------------------------------------------- random inputs

def random_value(shape: Shape, rng: np.random.Generator, what: str = "a value", loc=None):
    """A random value of `shape`: normal floats, small integers, fair booleans. An unbounded
    dimension (`?`) has no size to draw: an error naming `what` at `loc`."""
    if shape.is_tuple:
        return tuple(random_value(s, rng, what, loc) for s in shape.tuple_shapes)
    if shape.is_token:
        return TOKEN
    check_drawable(shape, what, loc)
    return np.asarray(random_array(shape.element_type, tuple(shape.dims), rng))   # rank 0: an array, not a scalar


def check_drawable(shape: Shape, what: str, loc=None) -> None:
    """Refuse a random value of a shape with an unbounded dimension (`?`): it has no size to draw."""
    for _, leaf in shape.leaves():
        if leaf.is_array and UNBOUNDED in leaf.dims:
            raise error(f"no random input for {what} of shape {shape.without_layout()}: an unbounded "
                        "dimension ('?') has no size to draw; give its value instead", loc)


def random_array(t: PrimitiveType, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if t.kind is TypeKind.PRED:
        return rng.random(dims) < 0.5
    if t.is_float:
        return rng.standard_normal(dims).astype(np.float32).astype(t.dtype)
    if t.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(t.dtype)
    if t.is_integral:
        lo = -(1 << min(t.bits - 1, 4)) if t.is_signed_int else 0
        hi = (1 << min(t.bits - 1, 4)) if t.is_signed_int else (1 << min(t.bits, 4))
        return rng.integers(lo, hi, size=dims).astype(np.int64).astype(t.dtype)
    raise ValueError(f"no random values of type {t.name}")
