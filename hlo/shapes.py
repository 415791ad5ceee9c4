"""Element types, layouts and shapes: the type system of HLO.

A `Shape` is either an array shape (element type, dimensions, optional layout)
or a tuple of shapes. Token and opaque shapes are array shapes of rank 0 whose
element type is TOKEN/OPAQUE. Shapes are immutable and hashable so that passes
and the checker can compare them freely.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterator, Optional

import ml_dtypes
import numpy as np


class TypeKind(enum.Enum):
    PRED = "pred"
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    FLOAT = "float"
    COMPLEX = "complex"
    TOKEN = "token"
    OPAQUE = "opaque"


@dataclass(frozen=True)
class PrimitiveType:
    """One HLO element type: its text name, kind, width and numpy storage dtype."""

    name: str
    kind: TypeKind
    bits: int
    dtype: Optional[np.dtype] = field(default=None, compare=False, repr=False)

    @property
    def is_integral(self) -> bool:
        return self.kind in (TypeKind.SIGNED, TypeKind.UNSIGNED)

    @property
    def is_signed_int(self) -> bool:
        return self.kind is TypeKind.SIGNED

    @property
    def is_unsigned_int(self) -> bool:
        return self.kind is TypeKind.UNSIGNED

    @property
    def is_float(self) -> bool:
        return self.kind is TypeKind.FLOAT

    @property
    def is_complex(self) -> bool:
        return self.kind is TypeKind.COMPLEX

    @property
    def is_pred(self) -> bool:
        return self.kind is TypeKind.PRED

    @property
    def is_array_type(self) -> bool:
        """True for types that can be array elements (not token/opaque)."""
        return self.kind not in (TypeKind.TOKEN, TypeKind.OPAQUE)

    @property
    def is_arithmetic(self) -> bool:
        return self.kind in (TypeKind.SIGNED, TypeKind.UNSIGNED, TypeKind.FLOAT, TypeKind.COMPLEX)

    @property
    def byte_size(self) -> int:
        """Bytes one element occupies in an unpacked buffer (sub-byte types take a byte)."""
        return max(1, (self.bits + 7) // 8)

    def __str__(self) -> str:
        return self.name


def _t(name: str, kind: TypeKind, bits: int, dtype) -> PrimitiveType:
    return PrimitiveType(name, kind, bits, None if dtype is None else np.dtype(dtype))


_ALL_TYPES = [
    _t("pred", TypeKind.PRED, 8, np.bool_),
    _t("s1", TypeKind.SIGNED, 1, ml_dtypes.int1),
    _t("s2", TypeKind.SIGNED, 2, ml_dtypes.int2),
    _t("s4", TypeKind.SIGNED, 4, ml_dtypes.int4),
    _t("s8", TypeKind.SIGNED, 8, np.int8),
    _t("s16", TypeKind.SIGNED, 16, np.int16),
    _t("s32", TypeKind.SIGNED, 32, np.int32),
    _t("s64", TypeKind.SIGNED, 64, np.int64),
    _t("u1", TypeKind.UNSIGNED, 1, ml_dtypes.uint1),
    _t("u2", TypeKind.UNSIGNED, 2, ml_dtypes.uint2),
    _t("u4", TypeKind.UNSIGNED, 4, ml_dtypes.uint4),
    _t("u8", TypeKind.UNSIGNED, 8, np.uint8),
    _t("u16", TypeKind.UNSIGNED, 16, np.uint16),
    _t("u32", TypeKind.UNSIGNED, 32, np.uint32),
    _t("u64", TypeKind.UNSIGNED, 64, np.uint64),
    _t("f16", TypeKind.FLOAT, 16, np.float16),
    _t("bf16", TypeKind.FLOAT, 16, ml_dtypes.bfloat16),
    _t("f32", TypeKind.FLOAT, 32, np.float32),
    _t("f64", TypeKind.FLOAT, 64, np.float64),
    _t("f8e5m2", TypeKind.FLOAT, 8, ml_dtypes.float8_e5m2),
    _t("f8e4m3", TypeKind.FLOAT, 8, ml_dtypes.float8_e4m3),
    _t("f8e4m3fn", TypeKind.FLOAT, 8, ml_dtypes.float8_e4m3fn),
    _t("f8e4m3b11fnuz", TypeKind.FLOAT, 8, ml_dtypes.float8_e4m3b11fnuz),
    _t("f8e3m4", TypeKind.FLOAT, 8, ml_dtypes.float8_e3m4),
    _t("f8e5m2fnuz", TypeKind.FLOAT, 8, ml_dtypes.float8_e5m2fnuz),
    _t("f8e4m3fnuz", TypeKind.FLOAT, 8, ml_dtypes.float8_e4m3fnuz),
    _t("f4e2m1fn", TypeKind.FLOAT, 4, ml_dtypes.float4_e2m1fn),
    _t("f8e8m0fnu", TypeKind.FLOAT, 8, ml_dtypes.float8_e8m0fnu),
    _t("c64", TypeKind.COMPLEX, 64, np.complex64),
    _t("c128", TypeKind.COMPLEX, 128, np.complex128),
    _t("token", TypeKind.TOKEN, 0, None),
    _t("opaque", TypeKind.OPAQUE, 0, None),
]

PRIMITIVE_TYPES: dict[str, PrimitiveType] = {t.name: t for t in _ALL_TYPES}

PRED = PRIMITIVE_TYPES["pred"]
S32 = PRIMITIVE_TYPES["s32"]
U32 = PRIMITIVE_TYPES["u32"]
S64 = PRIMITIVE_TYPES["s64"]
F32 = PRIMITIVE_TYPES["f32"]
F64 = PRIMITIVE_TYPES["f64"]
TOKEN = PRIMITIVE_TYPES["token"]

_BY_DTYPE = {t.dtype: t for t in _ALL_TYPES if t.dtype is not None}


def primitive_type(name: str) -> PrimitiveType:
    """The element type spelled `name` in HLO text (KeyError if none)."""
    return PRIMITIVE_TYPES[name]


def type_of_dtype(dtype) -> PrimitiveType:
    """The HLO element type stored in numpy as `dtype` (KeyError if none)."""
    return _BY_DTYPE[np.dtype(dtype)]


def real_type_of(t: PrimitiveType) -> PrimitiveType:
    """The component type of a complex type (c64 -> f32); other types unchanged."""
    return {"c64": F32, "c128": F64}.get(t.name, t)


def complex_type_of(t: PrimitiveType) -> PrimitiveType:
    """The complex type built from float type t (f32 -> c64, f64 -> c128)."""
    return {"f32": PRIMITIVE_TYPES["c64"], "f64": PRIMITIVE_TYPES["c128"]}[t.name]


# --------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Tile:
    """One tile of a tiled layout; -1 in dims stands for the combine dimension `*`."""

    dims: tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """A layout: minor_to_major order plus the rarely used physical attributes.

    Only minor_to_major matters for semantics (bitcast); the rest is kept so that
    dumps print back as they were read.
    """

    minor_to_major: tuple[int, ...]
    dim_level_types: tuple[str, ...] = ()
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment: int = 1
    index_type: Optional[str] = None
    pointer_type: Optional[str] = None
    element_size_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[tuple[int, ...], ...] = ()
    physical_shape: Optional["Shape"] = None
    dynamic_shape_metadata_prefix_bytes: int = 0

    @staticmethod
    def default(rank: int) -> "Layout":
        return Layout(tuple(range(rank - 1, -1, -1)))

    @property
    def is_default_physical(self) -> bool:
        """True if no attribute other than minor_to_major is set."""
        return self == Layout(self.minor_to_major)


# --------------------------------------------------------------------------- shapes

UNBOUNDED = -1  # size of a `?` dimension


@dataclass(frozen=True)
class Shape:
    """An array shape (element_type set) or a tuple shape (tuple_shapes set).

    dims: sizes; a bounded dynamic dimension `<=N` has size N and is_dynamic True;
    an unbounded `?` dimension has size UNBOUNDED.
    """

    element_type: Optional[PrimitiveType] = None
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Optional[Layout] = None
    tuple_shapes: Optional[tuple["Shape", ...]] = None

    # -- constructors
    @staticmethod
    def array(element_type: PrimitiveType | str, dims=(), layout: Optional[Layout] = None,
              dynamic=None) -> "Shape":
        if isinstance(element_type, str):
            element_type = primitive_type(element_type)
        dims = tuple(int(d) for d in dims)
        dyn = tuple(dynamic) if dynamic is not None else (False,) * len(dims)
        return Shape(element_type, dims, dyn, layout, None)

    @staticmethod
    def tuple_of(shapes) -> "Shape":
        return Shape(None, (), (), None, tuple(shapes))

    @staticmethod
    def token() -> "Shape":
        return Shape(TOKEN, (), (), None, None)

    # -- predicates
    @property
    def is_tuple(self) -> bool:
        return self.tuple_shapes is not None

    @property
    def is_array(self) -> bool:
        return self.tuple_shapes is None and self.element_type.is_array_type

    @property
    def is_token(self) -> bool:
        return self.tuple_shapes is None and self.element_type is TOKEN

    @property
    def is_scalar(self) -> bool:
        return self.is_array and not self.dims

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def is_dynamic(self) -> bool:
        if self.is_tuple:
            return any(s.is_dynamic for s in self.tuple_shapes)
        return any(self.dynamic)

    def element_count(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    def byte_size(self) -> int:
        """Bytes of the dense buffer (tuples: sum of their leaves)."""
        if self.is_tuple:
            return sum(s.byte_size() for s in self.tuple_shapes)
        if not self.element_type.is_array_type:
            return 0
        return self.element_count() * self.element_type.byte_size

    # -- derived shapes
    def with_layout(self, layout: Optional[Layout]) -> "Shape":
        return Shape(self.element_type, self.dims, self.dynamic, layout, self.tuple_shapes)

    def with_element_type(self, element_type: PrimitiveType) -> "Shape":
        return Shape(element_type, self.dims, self.dynamic, self.layout, None)

    def with_dims(self, dims, dynamic=None) -> "Shape":
        dims = tuple(dims)
        dyn = tuple(dynamic) if dynamic is not None else (False,) * len(dims)
        layout = self.layout if self.layout is not None and len(self.layout.minor_to_major) == len(dims) else None
        return Shape(self.element_type, dims, dyn, layout, None)

    def with_default_layouts(self) -> "Shape":
        """Fill every missing layout with the default (descending) one."""
        if self.is_tuple:
            return Shape.tuple_of(s.with_default_layouts() for s in self.tuple_shapes)
        if self.layout is None and self.element_type.is_array_type:
            return self.with_layout(Layout.default(self.rank))
        return self

    def without_layout(self) -> "Shape":
        if self.is_tuple:
            return Shape.tuple_of(s.without_layout() for s in self.tuple_shapes)
        return self.with_layout(None)

    def minor_to_major(self) -> tuple[int, ...]:
        return self.layout.minor_to_major if self.layout is not None else tuple(range(self.rank - 1, -1, -1))

    # -- comparisons
    def compatible(self, other: "Shape") -> bool:
        """Equal ignoring layouts (XLA's ShapeUtil::Compatible)."""
        if self.is_tuple or other.is_tuple:
            if not (self.is_tuple and other.is_tuple) or len(self.tuple_shapes) != len(other.tuple_shapes):
                return False
            return all(a.compatible(b) for a, b in zip(self.tuple_shapes, other.tuple_shapes))
        return self.element_type is other.element_type and self.dims == other.dims and self.dynamic == other.dynamic

    def same_dims(self, other: "Shape") -> bool:
        return not self.is_tuple and not other.is_tuple and self.dims == other.dims

    # -- tuple navigation
    def subshape(self, index) -> "Shape":
        s = self
        for i in index:
            s = s.tuple_shapes[i]
        return s

    def leaves(self, prefix=()) -> Iterator[tuple[tuple[int, ...], "Shape"]]:
        """(shape_index, leaf shape) pairs in depth-first order."""
        if self.is_tuple:
            for i, s in enumerate(self.tuple_shapes):
                yield from s.leaves(prefix + (i,))
        else:
            yield prefix, self

    def __str__(self) -> str:
        return format_shape(self)


# --------------------------------------------------------------------------- text
# Shapes and layouts print themselves, in XLA's spelling (f32[2,3]{1,0}, (s32[], pred[4]{0})).

def format_shape(shape: Shape, with_layout: bool = True) -> str:
    if shape.is_tuple:
        parts = []
        for i, s in enumerate(shape.tuple_shapes):
            prefix = f"/*index={i}*/" if i and i % 5 == 0 else ""
            parts.append(prefix + format_shape(s, with_layout))
        return "(" + ", ".join(parts) + ")"
    dims = ",".join(_format_dim(d, dyn) for d, dyn in zip(shape.dims, shape.dynamic))
    text = f"{shape.element_type.name}[{dims}]"
    if with_layout and shape.layout is not None and shape.rank > 0:
        text += format_layout(shape.layout)
    elif with_layout and shape.layout is not None and not shape.layout.is_default_physical:
        text += format_layout(shape.layout)
    return text


def _format_dim(d: int, dynamic: bool) -> str:
    if d == UNBOUNDED and dynamic:
        return "?"
    return f"<={d}" if dynamic else str(d)


def format_layout(layout: Layout) -> str:
    text = "{" + ",".join(map(str, layout.minor_to_major))
    attrs = []
    if layout.dim_level_types:
        attrs.append("D(" + ",".join(layout.dim_level_types) + ")")
    if layout.tiles:
        attrs.append("T" + "".join("(" + ",".join("*" if d == -1 else str(d) for d in t.dims) + ")"
                                   for t in layout.tiles))
    if layout.tail_padding_alignment != 1:
        attrs.append(f"L({layout.tail_padding_alignment})")
    if layout.index_type:
        attrs.append(f"#({layout.index_type})")
    if layout.pointer_type:
        attrs.append(f"*({layout.pointer_type})")
    if layout.element_size_bits:
        attrs.append(f"E({layout.element_size_bits})")
    if layout.memory_space:
        attrs.append(f"S({layout.memory_space})")
    if layout.split_configs:
        attrs.append("SC" + "".join("(" + ":".join(map(str, c[:1])) + (":" + ",".join(map(str, c[1:])) if len(c) > 1 else "")
                                    + ")" for c in layout.split_configs))
    if layout.physical_shape is not None:
        attrs.append("P(" + format_shape(layout.physical_shape) + ")")
    if layout.dynamic_shape_metadata_prefix_bytes:
        attrs.append(f"M({layout.dynamic_shape_metadata_prefix_bytes})")
    if attrs:
        text += ":" + "".join(attrs)
    return text + "}"
