"""Typed attribute values and their conversion from / printing to text.

`convert_attribute(spec, value)` turns a generic value (hlo/values.py) into the
typed value for an attribute of the opcode table, or raises ValueError with a
message naming what was expected. `format_attribute(spec, value)` prints it back
in XLA's canonical spelling. The typed classes are shared by every layer:
the checker, the interpreter kernels and the code generator read them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import values as V
from .generic_attributes import (check_generic_attribute, format_generic_attribute, format_int_list,
                                 is_default_result_accuracy)
from .literal import Literal, format_literal, literal_from_value
from .mesh_groups import MeshGroupsText
from .opcodes import AttrKind, AttrSpec
from .shapes import Shape, format_shape
from .textutil import escape_string, format_float, unescape


# --------------------------------------------------------------------------- typed values

@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...]


@dataclass(frozen=True)
class DotDims:
    lhs_batch: tuple[int, ...]
    lhs_contracting: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    rhs_contracting: tuple[int, ...]

    @staticmethod
    def of(inst) -> "DotDims":
        a = inst.attrs
        return DotDims(tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ())),
                       tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ())))

    def lhs_free(self, rank: int) -> list[int]:
        """The lhs dimensions that are neither batch nor contracting, in order."""
        return [d for d in range(rank) if d not in self.lhs_batch and d not in self.lhs_contracting]

    def rhs_free(self, rank: int) -> list[int]:
        return [d for d in range(rank) if d not in self.rhs_batch and d not in self.rhs_contracting]


def _spatial_label(c: str, num_spatial: int, part: str) -> int:
    k = ord(c) - ord("0")
    if not 0 <= k < num_spatial:
        raise ValueError(f"dim_labels part '{part}': unexpected label '{c}' (expected "
                         f"{', '.join(repr(x) for x in _allowed_letters(part))} or a spatial "
                         f"digit below {num_spatial})")
    return k


def _allowed_letters(part: str) -> tuple[str, str]:
    return ("i", "o") if part == "rhs" else ("b", "f")


def _parse_label_part(text: str, part: str, num_spatial: int
                      ) -> tuple[dict[str, int], tuple[int, ...]]:
    """({letter: dim}, spatial dims in spatial order) of one dim_labels part."""
    letters: dict[str, int] = {}
    spatial: dict[int, int] = {}
    for dim, c in enumerate(text):
        if c in _allowed_letters(part):
            if c in letters:
                raise ValueError(f"dim_labels {part} part '{text}': label '{c}' appears twice")
            letters[c] = dim
            continue
        if c == "?":
            raise ValueError(f"dim_labels {part} part '{text}': '?' dimensions are only "
                             f"meaningful for custom calls, not for convolution")
        k = _spatial_label(c, num_spatial, part)
        if k in spatial:
            raise ValueError(f"dim_labels {part} part '{text}': spatial label '{c}' appears twice")
        spatial[k] = dim
    missing = [c for c in _allowed_letters(part) if c not in letters]
    if missing:
        raise ValueError(f"dim_labels {part} part '{text}': missing label '{missing[0]}'")
    return letters, tuple(spatial[k] for k in range(num_spatial))


@dataclass(frozen=True)
class ConvDims:
    """Convolution dimension numbers, as spelled by `dim_labels=b01f_01io->b01f`."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]

    @staticmethod
    def parse(text: str) -> "ConvDims":
        """Parse dim_labels text; ValueError with a message when malformed."""
        lhs_rhs, arrow, out = text.partition("->")
        lhs, underscore, rhs = lhs_rhs.partition("_")
        if not arrow or not underscore or not lhs or not rhs or not out:
            raise ValueError(f"dim_labels '{text}' must look like LHS_RHS->OUT, "
                             f"e.g. b01f_01io->b01f")
        rank = len(lhs)
        if len(rhs) != rank or len(out) != rank:
            raise ValueError(f"dim_labels '{text}': lhs, rhs and output must have the same rank")
        if rank < 2:
            raise ValueError(f"dim_labels '{text}': each part needs at least 2 dimensions")
        n = rank - 2
        (lhs_l, lhs_s) = _parse_label_part(lhs, "lhs", n)
        (rhs_l, rhs_s) = _parse_label_part(rhs, "rhs", n)
        (out_l, out_s) = _parse_label_part(out, "output", n)
        return ConvDims(lhs_l["b"], lhs_l["f"], lhs_s, rhs_l["i"], rhs_l["o"], rhs_s,
                        out_l["b"], out_l["f"], out_s)

    def to_text(self) -> str:
        """Canonical dim_labels text (inverse of parse)."""
        def part(letters_at: dict[int, str], spatial: tuple[int, ...]) -> str:
            labels = dict(letters_at)
            for k, dim in enumerate(spatial):
                labels[dim] = chr(ord("0") + k)
            return "".join(labels[d] for d in range(len(labels)))

        lhs = part({self.input_batch: "b", self.input_feature: "f"}, self.input_spatial)
        rhs = part({self.kernel_input_feature: "i", self.kernel_output_feature: "o"},
                   self.kernel_spatial)
        out = part({self.output_batch: "b", self.output_feature: "f"}, self.output_spatial)
        return f"{lhs}_{rhs}->{out}"

    @property
    def num_spatial(self) -> int:
        return len(self.input_spatial)


@dataclass(frozen=True)
class GatherDims:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()

    @staticmethod
    def of(inst) -> "GatherDims":
        a = inst.attrs
        return GatherDims(tuple(a["offset_dims"]), tuple(a["collapsed_slice_dims"]), tuple(a["start_index_map"]),
                          a["index_vector_dim"], tuple(a.get("operand_batching_dims", ())),
                          tuple(a.get("start_indices_batching_dims", ())))


@dataclass(frozen=True)
class ScatterDims:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()

    @staticmethod
    def of(inst) -> "ScatterDims":
        a = inst.attrs
        return ScatterDims(tuple(a["update_window_dims"]), tuple(a["inserted_window_dims"]),
                           tuple(a["scatter_dims_to_operand_dims"]), a["index_vector_dim"],
                           tuple(a.get("input_batching_dims", ())), tuple(a.get("scatter_indices_batching_dims", ())))


@dataclass(frozen=True)
class ReplicaGroups:
    """replica_groups: explicit `{{0,1},{2,3}}`, iota `[2,2]<=[4]` or mesh `mesh['x'=2,'y'=2] {'y'}`
    (the last two kept as written)."""
    groups: tuple[tuple[int, ...], ...]
    iota: Optional[V.Iota] = None
    mesh: Optional[V.MeshGroups] = None

    @staticmethod
    def from_mesh(v: V.MeshGroups) -> "ReplicaGroups":
        """Groups of the devices along the listed axes (or sub-axes) of a mesh, in XLA's meaning:
        the mesh's device array (iota, a transposed iota `device_ids=([2,4]T(1,0))` or an explicit
        permutation `device_ids=(3,1,2,0)`) with the grouped axes moved last, in the order listed."""
        mesh = MeshGroupsText.parse(v.text)
        groups = mesh.groups()
        return ReplicaGroups(tuple(tuple(int(x) for x in g) for g in groups), None, V.MeshGroups(mesh.text()))

    @staticmethod
    def from_iota(iota: V.Iota) -> "ReplicaGroups":
        if len(iota.dims) != 2:
            raise ValueError("iota replica groups need exactly two leading dims [groups,size]")
        total = 1
        for d in iota.reshape_dims:
            total *= d
        if total != iota.dims[0] * iota.dims[1]:
            raise ValueError(f"iota replica groups: {list(iota.dims)} and {list(iota.reshape_dims)} "
                             "have different element counts")
        ids = np.arange(total).reshape(iota.reshape_dims)
        if iota.transpose:
            if sorted(iota.transpose) != list(range(len(iota.reshape_dims))):
                raise ValueError("iota replica groups: T(...) must be a permutation of the reshape dims")
            ids = ids.transpose(iota.transpose)
        groups = tuple(tuple(int(x) for x in row) for row in ids.reshape(iota.dims))
        return ReplicaGroups(groups, iota)


@dataclass(frozen=True)
class AliasMapEntry:
    output_index: tuple[int, ...]
    operand: int
    operand_index: tuple[int, ...]


_MD_STRING_FIELDS = ("op_type", "op_name", "source_file", "deduplicated_name", "scheduling_name")
_MD_INT_FIELDS = ("source_line", "source_end_line", "source_column", "source_end_column", "stack_frame_id")
_STRING_RE = r'"(?:[^"\\]++|\\.)*+"'  # (possessive: one step per run of characters)
# A whole metadata={...} value whose fields all have the right kind of value: checked with
# one match at parse time, so the fields themselves can be parsed lazily.
METADATA_FIELD_RE = re.compile(
    r"\{[\s,]*(?:(?:(?:" + "|".join(_MD_STRING_FIELDS) + r")=" + _STRING_RE
    + r"|(?:" + "|".join(_MD_INT_FIELDS) + r")=-?[0-9]+"
    + r"|profile_type=\{\s*(?:-?[0-9]+(?:\s*,\s*-?[0-9]+)*)?\s*\})[\s,]*)*\}")
_METADATA_ITEM_RE = re.compile(r'([a-z_]+)=(?:"((?:\\.|[^"\\])*)"|(-?[0-9]+)|\{([^}]*)\})')


def _scan_metadata_fields(raw: str) -> dict:
    """The fields of a metadata text that matches METADATA_FIELD_RE."""
    fields: dict = {}
    for m in _METADATA_ITEM_RE.finditer(raw):
        key, text, number, ints = m.groups()
        if text is not None:
            fields[key] = unescape(text)
        elif number is not None:
            fields[key] = int(number)
        else:
            fields[key] = tuple(int(v) for v in ints.replace(",", " ").split())
    return fields


@dataclass
class Metadata:
    """metadata={...}: kept verbatim until someone needs its fields."""
    raw: str
    _fields: Optional[dict] = field(default=None, repr=False)

    FIELD_ORDER = ("op_type", "op_name", "source_file", "source_line", "source_end_line", "source_column",
                   "source_end_column", "profile_type", "deduplicated_name", "scheduling_name", "stack_frame_id")

    @property
    def fields(self) -> dict:
        if self._fields is None:  # the parser keeps raw text only when it matches METADATA_FIELD_RE
            self._fields = _scan_metadata_fields(self.raw)
        return self._fields

    @staticmethod
    def check_fields(fields: dict) -> None:
        """ValueError unless every field is a known metadata field with the right kind of value."""
        for key, value in fields.items():
            if key in _MD_STRING_FIELDS:
                ok = isinstance(value, str)
                what = "a string"
            elif key in _MD_INT_FIELDS:
                ok = isinstance(value, int) and not isinstance(value, bool)
                what = "an integer"
            elif key == "profile_type":
                ok = isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                what = "a list of integers like {1,2}"
            else:
                raise ValueError(f"unknown metadata field '{key}'; allowed: " + ", ".join(Metadata.FIELD_ORDER))
            if not ok:
                raise ValueError(f"metadata field '{key}' takes {what}")

    def get(self, key: str, default=None):
        return self.fields.get(key, default)

    @staticmethod
    def from_fields(**fields) -> "Metadata":
        m = Metadata("")
        m._fields = {k: v for k, v in fields.items() if v is not None}
        m.raw = m.canonical()
        return m

    def canonical(self) -> str:
        parts = []
        for key in self.FIELD_ORDER:
            v = self.fields.get(key)
            if v is None or v == "" or v == 0:
                continue
            if isinstance(v, str):
                parts.append(f'{key}="{escape_string(v)}"')
            elif isinstance(v, (list, tuple)):
                parts.append(f"{key}={{{','.join(map(str, v))}}}")
            else:
                parts.append(f"{key}={v}")
        return "{" + " ".join(parts) + "}"

    def is_printed(self) -> bool:
        f = self.fields
        return any(f.get(k) for k in ("op_type", "op_name", "source_file", "scheduling_name", "stack_frame_id"))


@dataclass
class FrontendAttributes:
    """frontend_attributes={k="v", k2={json}}: the text as written and its items."""
    raw: str
    items: dict = field(default_factory=dict, repr=False)

    @staticmethod
    def check_items(items: dict) -> None:
        """ValueError unless every value is a string or a {json} dict."""
        for key, value in items.items():
            if not isinstance(value, (str, V.RawBraces)):
                raise ValueError(f"frontend attribute '{key}' must be a string or a {{...}} dict")

    def canonical(self) -> str:
        parts = []
        for key in sorted(self.items):
            v = self.items[key]
            if isinstance(v, V.RawBraces):
                parts.append(f"{key}={v.text}")
            else:
                parts.append(f'{key}="{escape_string(str(v))}"')
        return "{" + ",".join(parts) + "}"


# --------------------------------------------------------------------------- conversion

def convert_attribute(spec: AttrSpec, value, resolve_computation) -> Any:
    """Typed value of attribute `spec` written as generic `value` (ValueError if malformed)."""
    if spec.kind is AttrKind.GENERIC:
        return check_generic_attribute(spec.name, value)
    converter = _CONVERTERS[spec.kind]
    if spec.kind in (AttrKind.COMPUTATION, AttrKind.COMPUTATION_LIST):
        return converter(value, resolve_computation)
    if spec.kind is AttrKind.ENUM:
        return _to_enum(value, spec)
    return converter(value)


def _expect(cond: bool, what: str, value) -> None:
    if not cond:
        raise ValueError(f"expected {what}, got '{V.format_value(value)}'" if _printable(value) else f"expected {what}")


def _printable(value) -> bool:
    try:
        V.format_value(value)
        return True
    except Exception:
        return False


def _to_bool(v):
    _expect(isinstance(v, bool), "true or false", v)
    return v


def _to_int(v):
    _expect(isinstance(v, int) and not isinstance(v, bool), "an integer", v)
    return int(v)


def _to_float(v):
    _expect(isinstance(v, (int, float)) and not isinstance(v, bool), "a number", v)
    return float(v)  # `-0` (V.NEG_ZERO) gives -0.0


def _to_string(v):
    _expect(isinstance(v, V.Str), "a string", v)
    return v.text


def _items(v):
    return [i for i in v.items]


def _to_int_list(v):
    _expect(isinstance(v, V.Braced), "a list of integers like {0,1}", v)
    items = v.items
    _expect(all(isinstance(i, int) and not isinstance(i, bool) for i in items), "a list of integers like {0,1}", v)
    return tuple(int(i) for i in items)


def _to_int_list_list(v):
    _expect(isinstance(v, V.Braced), "a list of integer lists like {{0,1},{2,3}}", v)
    return tuple(_to_int_list(i) for i in _items(v))


def _to_computation(v, resolve):
    _expect(isinstance(v, (V.Ref, V.Ident, V.InlineComputation)), "a computation name", v)
    return resolve(v)


def _to_computation_list(v, resolve):
    _expect(isinstance(v, V.Braced), "a list of computations like {%a, %b}", v)
    return tuple(_to_computation(i, resolve) for i in _items(v))


_WINDOW_KEYS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def _to_window(v) -> Window:
    _expect(isinstance(v, V.Braced), "a window like {size=3x3 stride=2x2}", v)
    fields: dict[str, Any] = {}
    for item in _items(v):
        _expect(isinstance(item, V.Keyed) and item.key in _WINDOW_KEYS,
                "window fields size= stride= pad= lhs_dilate= rhs_dilate= rhs_reversal=", item)
        if item.key in fields:
            raise ValueError(f"window field '{item.key}' given twice")
        fields[item.key] = item.value
    if "size" not in fields:
        if not fields:
            return Window(())
        raise ValueError("window needs size=")
    sizes = _dims_of(fields["size"], "size")
    n = len(sizes)

    def per_dim(key, default):
        if key not in fields:
            return [default] * n
        vals = _dims_of(fields[key], key)
        if len(vals) != n:
            raise ValueError(f"window {key}= has {len(vals)} dimensions but size= has {n}")
        return vals

    strides, lhs, rhs, rev = per_dim("stride", 1), per_dim("lhs_dilate", 1), per_dim("rhs_dilate", 1), per_dim("rhs_reversal", 0)
    pads = [(0, 0)] * n
    if "pad" in fields:
        p = fields["pad"]
        _expect(isinstance(p, V.Pad), "window padding like 0_1x1_1", p)
        if len(p.dims) != n or any(len(d) != 2 for d in p.dims):
            raise ValueError(f"window pad= must give low_high for each of the {n} dimensions")
        pads = [tuple(d) for d in p.dims]
    return Window(tuple(WindowDim(sizes[i], strides[i], pads[i][0], pads[i][1], rhs[i], lhs[i], bool(rev[i]))
                        for i in range(n)))


def _dims_of(v, key):
    if isinstance(v, V.Dxd):
        return list(v.sizes)
    _expect(isinstance(v, int) and not isinstance(v, bool), f"window {key}= like 3 or 3x3", v)
    return [v]


def _to_dim_labels(v) -> ConvDims:
    _expect(isinstance(v, V.DimLabelsText), "dim labels like b01f_01io->b01f", v)
    return ConvDims.parse(v.text)


def _to_padding(v):
    _expect(isinstance(v, V.Pad), "padding like 0_0x1_2_1", v)
    out = []
    for d in v.dims:
        lo, hi, interior = (d + (0,))[:3]
        if interior < 0:
            raise ValueError("interior padding must be non-negative")
        out.append((lo, hi, interior))
    return tuple(out)


def _to_slice(v):
    _expect(isinstance(v, V.Braced), "slice ranges like {[0:2], [1:9:2]}", v)
    out = []
    for item in _items(v):
        _expect(isinstance(item, V.Bracketed) and len(item.items) == 1 and isinstance(item.items[0], V.Range),
                "a range like [start:limit] or [start:limit:stride]", item)
        r = item.items[0]
        out.append((r.start, r.limit, r.stride))
    return tuple(out)


_PRECISIONS = ("default", "high", "highest", "packed_nibble")


def _to_precision_list(v):
    _expect(isinstance(v, V.Braced), "a precision list like {default, highest}", v)
    out = []
    for item in _items(v):
        _expect(isinstance(item, V.Ident) and item.text.lower() in _PRECISIONS,
                "precision default, high or highest", item)
        out.append(item.text.lower())
    return tuple(out)


def to_shape(v) -> Shape:
    if isinstance(v, Shape):
        return v
    _expect(isinstance(v, V.Paren), "a shape", v)
    return Shape.tuple_of(to_shape(i) for i in v.items)


def _to_shape_list(v):
    _expect(isinstance(v, V.Braced), "a list of shapes", v)
    return tuple(to_shape(i) for i in _items(v))


def to_shape_index(v) -> tuple[int, ...]:
    return _to_int_list(v)


def _to_aliasing(v):
    _expect(isinstance(v, V.Braced), "an aliasing map like {{0}: (1, {})}", v)
    out = []
    for item in _items(v):
        _expect(isinstance(item, V.Mapping) and isinstance(item.value, V.Paren) and len(item.value.items) >= 2,
                "an entry like {0}: (1, {})", item)
        operand, operand_index = item.value.items[0], item.value.items[1]
        out.append(AliasMapEntry(to_shape_index(item.key), _to_int(operand), to_shape_index(operand_index)))
    return tuple(out)


def _to_replica_groups(v) -> ReplicaGroups:
    if isinstance(v, V.Iota):
        return ReplicaGroups.from_iota(v)
    if isinstance(v, V.MeshGroups):
        return ReplicaGroups.from_mesh(v)
    return ReplicaGroups(_to_int_list_list(v))


def _to_enum(v, spec: AttrSpec) -> str:
    _expect(isinstance(v, V.Ident), "one of " + ", ".join(spec.enum_values), v)
    text = v.text
    if spec.case_insensitive:
        for allowed in spec.enum_values:
            if allowed.lower() == text.lower():
                return allowed
    elif text in spec.enum_values:
        return text
    raise ValueError(f"unknown value '{text}'; expected one of " + ", ".join(spec.enum_values))


def _to_literal(v):
    _expect(isinstance(v, V.ShapedLiteral) or isinstance(v, V.Paren), "a shape followed by a literal", v)
    if isinstance(v, V.ShapedLiteral):
        return literal_from_value(v.shape, v.value)
    return Literal.tuple_of([_to_literal(i) for i in v.items])


_CONVERTERS = {
    AttrKind.BOOL: _to_bool, AttrKind.INT: _to_int, AttrKind.FLOAT: _to_float, AttrKind.STRING: _to_string,
    AttrKind.INT_LIST: _to_int_list, AttrKind.INT_LIST_LIST: _to_int_list_list,
    AttrKind.COMPUTATION: _to_computation, AttrKind.COMPUTATION_LIST: _to_computation_list,
    AttrKind.WINDOW: _to_window, AttrKind.DIM_LABELS: _to_dim_labels, AttrKind.PADDING: _to_padding,
    AttrKind.SLICE: _to_slice, AttrKind.PRECISION_LIST: _to_precision_list, AttrKind.SHAPE: to_shape,
    AttrKind.SHAPE_LIST: _to_shape_list, AttrKind.ALIASING: _to_aliasing,
    AttrKind.REPLICA_GROUPS: _to_replica_groups, AttrKind.ENUM: None, AttrKind.LITERAL: _to_literal,
    AttrKind.GENERIC: lambda v: v,
}


# --------------------------------------------------------------------------- printing

def is_default(spec: AttrSpec, value) -> bool:
    if spec.print_default or spec.required:
        return False
    if value is None:
        return True
    if spec.name == "result_accuracy":
        return is_default_result_accuracy(value)
    if spec.kind is AttrKind.WINDOW:
        return not value.dims
    if spec.kind is AttrKind.PRECISION_LIST:
        return all(p == "default" for p in value)
    return value == spec.default


def format_attribute(spec: AttrSpec, value) -> str:
    """`name=value` in canonical spelling."""
    if spec.kind is AttrKind.GENERIC:
        return f"{spec.name}={format_generic_attribute(spec.name, value)}"
    return f"{spec.name}={format_attribute_value(spec.kind, value)}"




def format_attribute_value(kind: AttrKind, value) -> str:
    if kind is AttrKind.BOOL:
        return "true" if value else "false"
    if kind is AttrKind.INT:
        return str(value)
    if kind is AttrKind.FLOAT:
        return format_float(value, "f32")
    if kind is AttrKind.STRING:
        return '"' + escape_string(value) + '"'
    if kind is AttrKind.INT_LIST:
        return format_int_list(value)
    if kind is AttrKind.INT_LIST_LIST:
        return "{" + ",".join(format_int_list(g) for g in value) + "}"
    if kind is AttrKind.COMPUTATION:
        return "%" + value.name
    if kind is AttrKind.COMPUTATION_LIST:
        return "{" + ", ".join("%" + c.name for c in value) + "}"
    if kind is AttrKind.WINDOW:
        return format_window(value)
    if kind is AttrKind.DIM_LABELS:
        return value.to_text()
    if kind is AttrKind.PADDING:
        interior = any(d[2] for d in value)
        return "x".join("_".join(map(str, d if interior else d[:2])) for d in value)
    if kind is AttrKind.SLICE:
        strided = any(s != 1 for _, _, s in value)
        return "{" + ", ".join(f"[{a}:{b}:{s}]" if strided else f"[{a}:{b}]" for a, b, s in value) + "}"
    if kind is AttrKind.PRECISION_LIST:
        return "{" + ",".join(value) + "}"
    if kind is AttrKind.SHAPE:
        return format_shape(value)
    if kind is AttrKind.SHAPE_LIST:
        return "{" + ", ".join(format_shape(s) for s in value) + "}"
    if kind is AttrKind.ALIASING:
        return "{" + ", ".join(f"{format_int_list(e.output_index)}: ({e.operand}, {format_int_list(e.operand_index)})"
                               for e in value) + "}"
    if kind is AttrKind.REPLICA_GROUPS:
        if value.iota is not None:
            return V.format_value(value.iota)
        if value.mesh is not None:
            return value.mesh.text
        return "{" + ",".join(format_int_list(g) for g in value.groups) + "}"
    if kind is AttrKind.ENUM:
        return value
    if kind is AttrKind.LITERAL:
        return format_literal(value, with_shape=True)
    return V.format_value(value)


def format_window(w: Window) -> str:
    if not w.dims:
        return "{}"
    parts = ["size=" + "x".join(str(d.size) for d in w.dims)]
    if any(d.stride != 1 for d in w.dims):
        parts.append("stride=" + "x".join(str(d.stride) for d in w.dims))
    if any(d.padding_low or d.padding_high for d in w.dims):
        parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in w.dims))
    if any(d.base_dilation != 1 for d in w.dims):
        parts.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in w.dims))
    if any(d.window_dilation != 1 for d in w.dims):
        parts.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in w.dims))
    if any(d.window_reversal for d in w.dims):
        parts.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in w.dims))
    return "{" + " ".join(parts) + "}"
