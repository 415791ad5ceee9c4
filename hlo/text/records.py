"""Records: the rule callbacks that turn the grammar's parse into plain records.

The LALR driver (hlo/text/lalr.py) calls one callback per reduced rule. `Records`
holds Lark's callbacks (one method per rule of grammar/hlo.lark); FAST_CALLBACKS
are direct ones for the rules every instruction line goes through. They build
plain records (HeaderRec, CompRec, InstrRec, OperandRef, LiteralOperand), shapes
and layouts, and the generic attribute values of hlo.values; the IR builder
(hlo/text/builder.py) turns records into a Module. The callbacks keep no state,
so one table serves every thread, and records are never mutated afterwards, so
they can be cached and shared (hlo/text/parser.py).

A callback that finds a syntax error the grammar cannot express (a negative
dimension, a bad layout) raises SyntaxInCallback with the offending offset.
"""
from __future__ import annotations

import functools
import re
from typing import Optional

from lark import Transformer, Token, v_args

from .. import values as V
from ..shapes import Layout, PRIMITIVE_TYPES, Shape, Tile, UNBOUNDED, primitive_type
from ..textutil import unescape
from .lexer import Tok, int_value


class SyntaxInCallback(Exception):
    """A syntax error found by a callback, at `offset` in the text (-1: unknown)."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


def _syntax(tok, message):
    return SyntaxInCallback(tok.start_pos if tok is not None and tok.start_pos is not None else -1, message)


class OperandRef:
    __slots__ = ("name", "pos", "shape")

    def __init__(self, name: str, pos: int, shape: Optional[Shape]):
        self.name, self.pos, self.shape = name, pos, shape


class InstrRec:
    __slots__ = ("is_root", "name", "pos", "shape", "opcode", "opcode_pos", "operands", "attrs")

    def __init__(self, is_root, name, pos, shape, opcode, opcode_pos, operands, attrs):
        self.is_root, self.name, self.pos, self.shape = is_root, name, pos, shape
        self.opcode, self.opcode_pos, self.operands, self.attrs = opcode, opcode_pos, operands, attrs


class CompRec:
    __slots__ = ("is_entry", "name", "pos", "signature", "instructions", "attrs")

    def __init__(self, is_entry, name, pos, signature, instructions, attrs):
        self.is_entry, self.name, self.pos, self.signature = is_entry, name, pos, signature
        self.instructions, self.attrs = instructions, attrs


class HeaderRec:
    __slots__ = ("name", "pos", "attrs", "stack_frames")

    def __init__(self, name, pos, attrs, stack_frames=None):
        self.name, self.pos, self.attrs, self.stack_frames = name, pos, attrs, stack_frames


class LiteralOperand:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _OperandList(list):
    """The operands of one instruction (distinguishes them from other children)."""
    __slots__ = ()


class _AttrList(list):
    """(name, value, offset) attribute records."""
    __slots__ = ()


class _InstrList(list):
    """The instruction records of one computation."""
    __slots__ = ()


_NAME_IN_LIST = re.compile(r"%([A-Za-z_][A-Za-z0-9_.\-]*)")
_MAX_DIM = (1 << 63) - 1


_to_int = int_value

# The value of an attribute written as a single token, by terminal (the `value` rule's callbacks
# below use these, and so does the line fast path, hlo/text/fastpath.py).
TOKEN_VALUES = {
    "INT": int_value,
    "DECIMAL": float,
    "NAN": lambda text: V.NanValue(text),
    "INF": lambda text: V.Inf("inf"),
    "NEG_INF": lambda text: V.Inf("-inf"),
    "TRUE": lambda text: True,
    "FALSE": lambda text: False,
    "STRING": lambda text: V.Str(unescape(text[1:-1])),
    "NAME": lambda name: V.Ref(name),
    "IDENT": lambda text: V.Ident(text),
    "DXD": lambda text: V.Dxd(tuple(int(x) for x in text.split("x"))),
    "PAD": lambda text: V.Pad(tuple(tuple(int(x) for x in d.split("_")) for d in re.split(r"x(?=-?\d)", text))),
    "DIM_LABELS": lambda text: V.DimLabelsText(text),
}


def int_list_value(text: str) -> V.Braced:
    """The value of an INT_LIST token `{1, 2}`."""
    body = text[1:-1].strip()
    return V.Braced(tuple(_to_int(x) for x in body.split(",")) if body else ())


@functools.lru_cache(maxsize=4096)
def shape_from_text(text: str) -> Shape:
    """The Shape of a SHAPE_TEXT token such as `f32[8,128]{1,0}` (cached: dumps repeat shapes)."""
    bracket = text.index("[")
    close = text.index("]")
    et = PRIMITIVE_TYPES[text[:bracket]]
    dims_text = text[bracket + 1:close]
    dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
    if len(text) > close + 1:
        m2m = tuple(int(d) for d in text[close + 2:-1].split(","))
        layout = _checked_layout(Layout(m2m), len(dims), bracket)
    elif et.is_array_type:
        layout = Layout(tuple(range(len(dims) - 1, -1, -1)))
    else:
        layout = None
    for d in dims:
        if d > _MAX_DIM:
            raise SyntaxInCallback(-1, f"dimension size {d} is too large")
    if not et.is_array_type and dims:
        raise SyntaxInCallback(-1, f"{et.name} shapes have no dimensions: write {et.name}[]")
    return Shape(et, dims, (False,) * len(dims), layout, None)


def _checked_layout(layout: Layout, rank: int, pos) -> Layout:
    m2m = layout.minor_to_major
    if sorted(m2m) != list(range(rank)):
        what = "does not list each dimension once" if len(m2m) == rank else f"has {len(m2m)} entries"
        raise SyntaxInCallback(pos if isinstance(pos, int) else -1,
                                f"layout {{{','.join(map(str, m2m))}}} {what} for a shape of rank {rank}")
    return layout


@v_args(inline=True)
class Records(Transformer):
    """Rule callbacks: build plain records and generic values (no state)."""

    # ---- module level
    def start(self, module):
        return module

    def module(self, *children):
        header = children[0] if isinstance(children[0], HeaderRec) else None
        comps = [c for c in children if isinstance(c, CompRec)]
        return header, comps

    def header(self, kw, name, *rest):
        attrs = next((r for r in rest if type(r) is _AttrList), [])
        frames = next((r for r in rest if type(r) is list), None)
        return HeaderRec(name[0], name[1], attrs, frames)

    def module_name(self, tok):
        return str(tok), tok.start_pos

    def stack_frame_index(self, *tables):
        return list(tables)

    def stack_frame_table(self, name, *entries):
        return str(name), list(entries)

    def stack_frame_entry(self, index, value):
        return int(index), (V.Str(unescape(value[1:-1])) if isinstance(value, Token) else value)

    # ---- computations
    def computation(self, *children):
        is_entry = isinstance(children[0], Token) and children[0].type == "ENTRY"
        rest = children[1:] if is_entry else children
        name, pos = rest[0]
        signature = None
        instructions, attrs = [], []
        for child in rest[1:]:
            if type(child) is _InstrList:
                instructions = child
            elif type(child) is _AttrList:
                attrs = child
            else:
                signature = child
        return CompRec(is_entry, name, pos, signature, instructions, attrs)

    # Left-recursive sequences: (x,) starts a list, (list, x) appends to it.
    def instructions(self, *children):
        if len(children) == 1:
            return _InstrList(children)
        children[0].append(children[1])
        return children[0]

    def instruction_lines(self, tok):
        return _InstrList(tok.value)

    def more_instruction_lines(self, instructions, tok):
        instructions.extend(tok.value)
        return instructions

    def attributes(self, *children):
        if len(children) == 1:
            return _AttrList(children)
        children[0].append(children[1])
        return children[0]

    def operand_seq(self, *children):
        if len(children) == 1:
            return _OperandList(children)
        children[0].append(children[1])
        return children[0]

    def literal_seq(self, *children):
        item = children[-1]
        if type(item) is Tok:
            if item.type == "COMMA":
                return children[0] if len(children) == 2 else []
            item = V.EllipsisValue()
        if len(children) == 1:
            return [item]
        children[0].append(item)
        return children[0]

    def brace_seq(self, *children):
        item = children[-1]
        if len(children) == 1:
            return [] if type(item) is Tok else [item]
        if type(item) is not Tok:  # commas between items are dropped
            children[0].append(item)
        return children[0]

    def comp_name(self, tok):
        return str(tok), tok.start_pos

    def signature(self, *children):
        params = [c for c in children if isinstance(c, tuple)]
        arrow = next(c for c in children if isinstance(c, Token))
        return params, children[-1], arrow.start_pos

    def param(self, tok, shape):
        return (str(tok), shape)

    def instruction(self, *children):
        i = 0
        first = children[0]
        is_root = first.type == "ROOT"
        if is_root:
            first = children[1]
            i = 1
        i += 2  # the name and the '='
        shape = None
        if type(children[i]) is Shape:
            shape = children[i]
            i += 1
        opcode = children[i]
        operands = _operand_list(children[i + 1])
        attrs = children[i + 2] if len(children) > i + 2 else ()
        return InstrRec(is_root, first.value, first.start_pos, shape, opcode.value, opcode.start_pos, operands, attrs)

    def operands(self, ops=None):
        return ops if ops is not None else _OperandList()

    def ref_operand(self, *children):
        tok = children[-1]
        return OperandRef(tok.value, tok.start_pos, children[0] if len(children) == 2 else None)

    def nested_instruction(self, *children):
        shape = children[0] if type(children[0]) is Shape else None
        opcode = children[1] if shape is not None else children[0]
        operands = _operand_list(children[-1])
        return InstrRec(False, None, opcode.start_pos, shape, opcode.value, opcode.start_pos, operands, [])

    def literal_operand(self, value):
        return LiteralOperand(value)

    def literal_braces(self, items=None):
        return items if items is not None else []

    def literal_paren(self, *items):
        return V.Paren(tuple(items))

    # ---- shapes
    def array_shape(self, prim, *rest):
        et = primitive_type(prim.value)
        layout = None
        dims, dyn = [], []
        for r in rest:
            if type(r) is Layout:
                layout = r
            else:
                dims.append(r[0])
                dyn.append(r[1])
        if layout is None:
            if et.is_array_type:
                layout = Layout(tuple(range(len(dims) - 1, -1, -1)))
        else:
            _checked_layout(layout, len(dims), prim.start_pos)
        if not et.is_array_type and dims:
            raise SyntaxInCallback(prim.start_pos, f"{et.name} shapes have no dimensions: write {et.name}[]")
        return Shape(et, tuple(dims), tuple(dyn), layout, None)

    def shape_text(self, tok):
        try:
            return shape_from_text(tok.value)
        except SyntaxInCallback as exc:
            raise SyntaxInCallback(tok.start_pos, exc.message) from None

    def tuple_shape(self, *shapes):
        return Shape.tuple_of(shapes)

    def buffer_shape(self, tok, shape):
        if tok.value != "b":
            raise _syntax(tok, f"unexpected '{tok}(' in a shape; buffer shapes are written b(shape)")
        return shape

    def dim(self, tok):
        return _dim_size(tok), False

    def bounded_dim(self, le, tok):
        return _dim_size(tok), True

    def unbounded_dim(self, q):
        return UNBOUNDED, True

    def layout(self, lbrace, *rest):
        m2m, attrs = [], []
        for r in rest:
            if type(r) is Tok:
                if r.type == "INT":
                    m2m.append(int(r))
            else:
                attrs.append(r)
        return _make_layout(tuple(m2m), attrs, lbrace)

    def layout_attr(self, name, *groups):
        return name.value, groups, name.start_pos

    def layout_group(self, *args):
        return list(args)

    def index_type_attr(self, hash_, prim):
        return "#", prim.value, hash_.start_pos

    def pointer_type_attr(self, star, prim):
        return "*", prim.value, star.start_pos

    def split_arg(self, a, colon, b):
        return (int(a), int(b))

    def dlt(self, name, *mods):
        return name.value + "".join(m.value for m in mods)

    # ---- attributes
    def attribute(self, name, value):
        return name.value, value, name.start_pos

    def shaped_literal_attr(self, name, shape, value):
        return name.value, V.ShapedLiteral(shape, value), name.start_pos

    def int_(self, tok):
        return _to_int(tok)

    def float_(self, tok):
        return float(tok)

    def nan(self, tok):
        return TOKEN_VALUES["NAN"](tok.value)

    def inf(self, tok):
        return TOKEN_VALUES["INF"](tok.value)

    def neg_inf(self, tok):
        return TOKEN_VALUES["NEG_INF"](tok.value)

    def true(self, tok):
        return True

    def false(self, tok):
        return False

    def string(self, tok):
        return TOKEN_VALUES["STRING"](tok.value)

    def ref(self, tok):
        return V.Ref(tok.value)

    def ident(self, tok):
        return V.Ident(tok.value)

    def dxd(self, tok):
        return TOKEN_VALUES["DXD"](tok.value)

    def pad(self, tok):
        return TOKEN_VALUES["PAD"](tok.value)

    def dim_labels(self, tok):
        return V.DimLabelsText(tok.value)

    def raw_braces(self, tok):
        return V.RawBraces(tok.value, tok.start_pos)

    def int_list(self, tok):
        return int_list_value(tok.value)

    def braced(self, items=()):
        return V.Braced(tuple(items))

    def keyed(self, name, value):
        return V.Keyed(name.value, value)

    def mapping(self, key, colon, value):
        return V.Mapping(key, value)

    def program_shape(self, params, arrow, result):
        return V.ProgramShapeValue(params, result)

    def ellipsis(self, tok):
        return V.EllipsisValue()

    def inline_computation(self, instructions):
        return V.InlineComputation(tuple(instructions), instructions[0].pos)

    def paren(self, *items):
        return V.Paren(tuple(items))

    def shaped_literal(self, shape, value):
        return V.ShapedLiteral(shape, value)

    def bracketed(self, *items):
        return V.Bracketed(tuple(items))

    def range2(self, a, colon, b):
        return V.Range(int(a), int(b))

    def range3(self, a, c1, b, c2, s):
        return V.Range(int(a), int(b), int(s), True)

    def mesh_groups(self, tok):
        return V.MeshGroups(re.sub(r"\s+", " ", str(tok).strip()))

    def iota_list(self, dims, le, reshape, *transpose):
        perm = tuple(transpose[1].items) if transpose else ()
        if not all(type(x) is int for x in dims.items + reshape.items + perm):
            raise _syntax(le, "iota device lists take integers: [2,4]<=[8] or [4,2]<=[2,4]T(1,0)")
        return V.Iota(tuple(dims.items), tuple(reshape.items), perm)


# Direct callbacks for the rules every instruction line goes through. Each gets the raw
# children of its rule (punctuation included) and returns what the Records method of
# the same name returns, without Lark's per-call filtering and wrapping.

def _fast_instruction(c):
    first = c[0]
    i = 1
    is_root = first.type == "ROOT"
    if is_root:
        first = c[1]
        i = 2
    i += 1  # the '='
    shape = None
    if type(c[i]) is Shape:
        shape = c[i]
        i += 1
    opcode = c[i]
    attrs = c[i + 2] if len(c) > i + 2 else ()
    return InstrRec(is_root, first.value, first.start_pos, shape, opcode.value, opcode.start_pos,
                    _operand_list(c[i + 1]), attrs)


def _fast_sequence(kind):
    def seq(c):
        if len(c) == 1 or (len(c) == 2 and type(c[0]) is Tok):  # (x) or (',' x)
            return kind((c[-1],))
        c[0].append(c[-1])
        return c[0]
    return seq


def _fast_operands(c):
    return c[1] if len(c) == 3 else _OperandList()


def _fast_attribute(c):
    name = c[0]
    return name.value, c[1], name.start_pos


def _fast_shape_text(c):
    tok = c[0]
    try:
        return shape_from_text(tok.value)
    except SyntaxInCallback as exc:
        raise SyntaxInCallback(tok.start_pos, exc.message) from None


FAST_CALLBACKS = {
    "instruction": _fast_instruction,
    "instructions": _fast_sequence(lambda items: _InstrList(items)),
    "attributes": _fast_sequence(lambda items: _AttrList(items)),
    "operand_seq": _fast_sequence(lambda items: _OperandList(items)),
    "operands": _fast_operands,
    "attribute": _fast_attribute,
    "shape_text": _fast_shape_text,
    "raw_braces": lambda c: V.RawBraces(c[0].value, c[0].start_pos),
    "int_": lambda c: _to_int(c[0]),
    "float_": lambda c: float(c[0]),
    "literal_operand": lambda c: LiteralOperand(c[0]),
}
# The expansions each direct callback was written for (checked when the table is built).
FAST_EXPANSIONS = {
    "instruction": lambda e: "EQUAL" in e and "operand_list" in e,
    "instructions": lambda e: e in (("instruction",), ("instructions", "instruction")),
    "attributes": lambda e: e in (("COMMA", "attribute"), ("attributes", "COMMA", "attribute")),
    "operand_seq": lambda e: e in (("operand",), ("operand_seq", "COMMA", "operand")),
    "operands": lambda e: e in (("LPAR", "operand_seq", "RPAR"), ("LPAR", "RPAR")),
    "attribute": lambda e: e == ("ATTR_NAME", "value"),
    "shape_text": lambda e: e == ("SHAPE_TEXT",),
    "raw_braces": lambda e: e == ("BRACED",),
    "int_": lambda e: e == ("INT",),
    "float_": lambda e: e == ("DECIMAL",),
    "literal_operand": lambda e: len(e) == 1,
}


def _operand_list(child) -> list:
    """Operand records of an OPERAND_NAMES or LITERAL_TEXT token or of a parsed operand list."""
    if type(child) is Tok:
        if child.type == "LITERAL_TEXT":
            return [LiteralOperand(child.value)]
        base = child.start_pos  # OPERAND_NAMES: (%a, %b, ...)
        return [OperandRef(m.group(1), base + m.start(), None) for m in _NAME_IN_LIST.finditer(child.value)]
    return child


def _dim_size(tok) -> int:
    d = int(tok)
    if d < 0:
        raise _syntax(tok, f"dimension sizes cannot be negative, got {tok}")
    if d > _MAX_DIM:
        raise _syntax(tok, f"dimension size {tok} is too large")
    return d


_LAYOUT_INT_FIELDS = {"L": "tail_padding_alignment", "E": "element_size_bits", "S": "memory_space",
                      "M": "dynamic_shape_metadata_prefix_bytes"}


def _make_layout(m2m, attrs, tok) -> Layout:
    """A Layout from minor_to_major and the `name(args)(args)...` attributes after ':'."""
    kw = {}
    for name, groups, pos in attrs:
        at = _Pos(pos)
        if name in kw or (name in _LAYOUT_INT_FIELDS and _LAYOUT_INT_FIELDS[name] in kw):
            raise _syntax(at, f"layout attribute '{name}' is given twice")
        if name == "T":
            kw["tiles"] = tuple(Tile(tuple(_tile_dim(x, at) for x in g)) for g in groups)
            if any(not t.dims for t in kw["tiles"]):
                raise _syntax(at, "a tile needs at least one dimension: T(8,128)")
        elif name in _LAYOUT_INT_FIELDS:
            if len(groups) != 1 or len(groups[0]) != 1 or not _is_int_tok(groups[0][0]):
                raise _syntax(at, f"layout attribute {name}(...) takes one integer, e.g. {name}(1)")
            kw[_LAYOUT_INT_FIELDS[name]] = int(groups[0][0])
        elif name == "#":
            kw["index_type"] = groups
        elif name == "*":
            kw["pointer_type"] = groups
        elif name == "D":
            if len(groups) != 1 or not all(isinstance(x, str) and not isinstance(x, Token) for x in groups[0]):
                raise _syntax(at, "D(...) takes dim level types such as D(D,C+~)")
            kw["dim_level_types"] = tuple(groups[0])
        elif name == "SC":
            kw["split_configs"] = tuple(_split_config(g, at) for g in groups)
        elif name == "P":
            if len(groups) != 1 or len(groups[0]) != 1 or not isinstance(groups[0][0], Shape):
                raise _syntax(at, "P(...) takes one shape")
            kw["physical_shape"] = groups[0][0]
        else:
            raise _syntax(at, f"unknown layout attribute '{name}'; expected T, L, E, S, SC, P, M, D, # or *")
    return Layout(m2m, **kw)


class _Pos:
    """A bare position, for errors that point at a layout attribute."""
    __slots__ = ("start_pos",)

    def __init__(self, pos):
        self.start_pos = pos


def _is_int_tok(x) -> bool:
    return isinstance(x, Token) and x.type == "INT"


def _tile_dim(x, at) -> int:
    if isinstance(x, Token) and x.type == "STAR":
        return -1
    if not _is_int_tok(x):
        raise _syntax(at, "tile dimensions are integers or '*'")
    return int(x)


def _split_config(group, at) -> tuple:
    out = []
    for x in group:
        if isinstance(x, tuple) and not out:
            out.extend(x)
        elif _is_int_tok(x) and out:
            out.append(int(x))
        else:
            raise _syntax(at, "split configs are written SC(dim:index,index...)")
    return tuple(out)
