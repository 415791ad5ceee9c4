"""Generic attribute values, as the grammar's `value` rule produces them.

The grammar does not know attribute names; it turns `{size=3x3 stride=2x2}`,
`{{0,1},{2,3}}` or `[2,4]<=[8]` into these small nodes, and hlo/attributes.py
gives them a type per attribute. Attributes of kind GENERIC (domain,
result_accuracy, statistics, origin, sharding) keep these nodes and the
printer writes them back with `format_value`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .shapes import Shape, format_shape
from .textutil import escape_string, format_float


@dataclass(frozen=True)
class Ref:            # %name
    name: str


@dataclass(frozen=True)
class Ident:          # bare word: enum values, names without %
    text: str


@dataclass(frozen=True)
class Str:            # "string" (already unescaped)
    text: str


@dataclass(frozen=True)
class Dxd:            # 3x3
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class Pad:            # 0_1x1_1 or 0_0_1x2_2
    dims: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class DimLabelsText:  # b01f_01io->b01f
    text: str


@dataclass(frozen=True)
class RawBraces:      # captured verbatim: metadata, frontend_attributes, JSON backend_config
    text: str
    offset: int = field(default=-1, compare=False)   # where the '{' is in the source, if known


@dataclass(frozen=True)
class Braced:         # { items }
    items: tuple


@dataclass(frozen=True)
class Keyed:          # key=value inside braces
    key: str
    value: Any


@dataclass(frozen=True)
class Mapping:        # {0}: value
    key: Any
    value: Any


@dataclass(frozen=True)
class Paren:          # ( items )
    items: tuple


@dataclass(frozen=True)
class Bracketed:      # [ items ]
    items: tuple


@dataclass(frozen=True)
class Range:          # 0:8 or 0:8:2 inside brackets
    start: int
    limit: int
    stride: int = 1
    has_stride: bool = False


@dataclass(frozen=True)
class Iota:           # [2,4]<=[8] or [2,4]<=[2,4]T(1,0)
    dims: tuple[int, ...]
    reshape_dims: tuple[int, ...]
    transpose: tuple[int, ...] = ()


@dataclass(frozen=True)
class MeshGroups:     # mesh['x'=2,'y'=4] {'y'} (XLA's mesh-form collective groups), as written
    text: str


@dataclass(frozen=True)
class ShapedLiteral:  # shape literal (custom-call literal=)
    shape: Shape
    value: Any


@dataclass(frozen=True)
class ProgramShapeValue:  # (shapes)->shape
    params: Paren
    result: Any


@dataclass(frozen=True)
class EllipsisValue:
    pass


@dataclass(frozen=True)
class NanValue:       # nan, -nan, nan(0x1)
    text: str


@dataclass(frozen=True)
class InlineComputation:
    instructions: tuple   # raw instruction records from the parser
    offset: int


class Inf(float):
    """inf / -inf as written (a float subclass so arithmetic works)."""


class NegativeZero(int):
    """The integer token `-0`: 0 where an integer is expected, -0.0 where a float is.

    XLA reads `-0` as the integer 0 and so turns a printed f32 -0.0 into +0.0; keeping
    the sign here makes print/parse of float literals exact (the printer writes -0.0
    as `-0`, like XLA).
    """

    def __repr__(self) -> str:
        return "NEG_ZERO"

    def __float__(self) -> float:
        return -0.0


NEG_ZERO = NegativeZero(0)


def format_value(v) -> str:
    """Print a generic value in XLA's canonical spelling."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v, "f64")
    if isinstance(v, Ref):
        return "%" + v.name
    if isinstance(v, Ident):
        return v.text
    if isinstance(v, Str):
        return '"' + escape_string(v.text) + '"'
    if isinstance(v, Dxd):
        return "x".join(map(str, v.sizes))
    if isinstance(v, Pad):
        return "x".join("_".join(map(str, d)) for d in v.dims)
    if isinstance(v, DimLabelsText):
        return v.text
    if isinstance(v, RawBraces):
        return v.text
    if isinstance(v, Braced):
        return _format_braced(v)
    if isinstance(v, Keyed):
        return f"{v.key}={format_value(v.value)}"
    if isinstance(v, Mapping):
        return f"{format_value(v.key)}: {format_value(v.value)}"
    if isinstance(v, Paren):
        return "(" + ", ".join(format_value(i) for i in v.items) + ")"
    if isinstance(v, Bracketed):
        return "[" + ",".join(format_value(i) for i in v.items) + "]"
    if isinstance(v, Range):
        return f"{v.start}:{v.limit}" + (f":{v.stride}" if v.has_stride else "")
    if isinstance(v, Iota):
        text = "[" + ",".join(map(str, v.dims)) + "]<=[" + ",".join(map(str, v.reshape_dims)) + "]"
        if v.transpose:
            text += "T(" + ",".join(map(str, v.transpose)) + ")"
        return text
    if isinstance(v, MeshGroups):
        return v.text
    if isinstance(v, Shape):
        return format_shape(v)
    if isinstance(v, ProgramShapeValue):
        return format_value(v.params) + "->" + format_value(v.result)
    if isinstance(v, EllipsisValue):
        return "..."
    if isinstance(v, NanValue):
        return v.text
    if isinstance(v, ShapedLiteral):
        return format_shape(v.shape) + " " + format_value(v.value)
    raise TypeError(f"cannot print value {v!r}")


def _format_braced(v: Braced) -> str:
    items = v.items
    # Space-separated forms: windows and sharding/metadata-like key lists.
    if items and all(isinstance(i, (Keyed, Ident, int)) for i in items) and any(isinstance(i, Keyed) for i in items):
        return "{" + _format_sharding_like(items) + "}"
    if items and all(isinstance(i, Ident) for i in items) and len(items) == 1:
        return "{" + items[0].text + "}"
    return "{" + ", ".join(format_value(i) for i in items) + "}"


def _format_sharding_like(items) -> str:
    """`devices=[2,1]0,1 last_tile_dim_replicate`: ints after a key join with commas."""
    parts: list[str] = []
    for item in items:
        if isinstance(item, int) and parts and not parts[-1].endswith(" "):
            sep = "," if parts[-1][-1:].isdigit() else ""
            parts[-1] += sep + str(item)
        else:
            parts.append(format_value(item))
    return " ".join(parts)
