"""HLO text -> IR.

Three steps:
1. grammar/hlo.lark, compiled by Lark into an LALR(1) table and run by a small
   driver loop over hlo/lexer.py's tokens, turns the text into plain records
   (`_Records` below holds the rule callbacks; it is stateless, so one table
   serves every thread);
2. `_Builder` turns records into Module/Computation/Instruction objects: it
   resolves names (no forward references), converts attributes with the opcode
   table, builds literals, expands async sugar, and collects every error;
3. shapes left out in the text are inferred with hlo/shape_inference.py.

A syntax error does not stop the parse: the broken line is blanked out (or, for
a computation header, replaced by a neutral one) and the text parsed again, so
that every syntax error in a file is reported at once; the recovery rules are
described at `_recover`.

Records of a text are cached by content hash, so loading the same text again
only rebuilds the IR (the IR itself is never shared between calls).
"""
from __future__ import annotations

import difflib
import functools
import gc
import hashlib
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

from lark import Lark, Transformer, Token, v_args
from lark.exceptions import VisitError

from .. import values as V
from ..attributes import (FrontendAttributes, Metadata, check_generic_attribute, convert_attribute, to_shape,
                         to_shape_index, METADATA_FIELD_RE)
from ..diagnostics import Diagnostic, DiagnosticSink, HloError, SourceFile, SourceLoc, error
from ..ir import AliasEntry, Computation, Instruction, Module, NameUniquer, ProgramShape
from ..textutil import unescape
from .lexer import HloLexer, Tok, build_context_regexes, build_token_regex, int_value, make_token, tokenize
from ..literal import literal_from_value
from ..opcodes import GENERIC_ATTRIBUTES, OPCODES, Op, split_async_sugar, wrapped_attr_specs
from ..shapes import Layout, PRIMITIVE_TYPES, Shape, Tile, UNBOUNDED, primitive_type

# --------------------------------------------------------------------------- the grammar


def grammar_text() -> str:
    try:
        from importlib.resources import files
        return (files("hlo_grammar") / "hlo.lark").read_text()
    except (ImportError, ModuleNotFoundError, FileNotFoundError):
        return (Path(__file__).resolve().parent.parent / "grammar" / "hlo.lark").read_text()


_lark_lock = threading.Lock()


def _grammar_cache_file(grammar: str) -> Optional[str]:
    """A file for Lark's compiled LALR tables, keyed by the grammar and Lark's version.

    Building the tables takes about 0.1 s, most of a small tool run; None (no cache)
    when the cache folder cannot be created.
    """
    import hashlib
    import lark as lark_package
    from ..cache import cache_dir
    key = hashlib.sha256(f"{lark_package.__version__}\0{grammar}".encode()).hexdigest()[:24]
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(folder / f"grammar-{key}.lark-cache")


@functools.lru_cache(maxsize=None)
def _lark() -> Lark:
    with _lark_lock:
        grammar = grammar_text()
        cache = _grammar_cache_file(grammar) or False
        lark = Lark(grammar, parser="lalr", lexer=HloLexer, transformer=_Records(), start=["start", "braced"],
                    maybe_placeholders=False, cache=cache)
        patterns = {t.name: t.pattern.to_regexp() for t in lark.terminals}
        HloLexer.token_regex = build_token_regex(patterns)
        HloLexer.context_regexes = build_context_regexes(patterns)
        return lark


class _Tables:
    """Lark's LALR table re-keyed for a tight driver loop.

    states[s][terminal or rule name] is (True, next_state) for a shift or
    (False, (length, callback, rule name)) for a reduction; callbacks are the
    ones Lark built from `_Records` (they drop anonymous punctuation and inline
    `?rules` exactly as lark.parse would).
    """

    def __init__(self, lark: Lark):
        from lark.parsers.lalr_analysis import Shift
        inner = lark.parser.parser.parser
        table, callbacks = inner.parse_table, inner.callbacks
        self.start_states = dict(table.start_states)
        self.end_states = dict(table.end_states)
        self.states = {}
        for state, row in table.states.items():
            # Plain str keys: lark's Token keys would make every lookup call Token.__eq__.
            self.states[state] = {
                str(sym): (True, arg) if action is Shift
                else (False, (len(arg.expansion), _callback(arg, callbacks), str(arg.origin.name)))
                for sym, (action, arg) in row.items()}


def _callback(rule, callbacks):
    """The rule's callback: a direct one from _FAST_CALLBACKS for the hottest rules, else Lark's."""
    name = str(rule.alias or rule.origin.name)
    fast = _FAST_CALLBACKS.get(name)
    if fast is not None and _FAST_EXPANSIONS[name](tuple(str(s.name) for s in rule.expansion)):
        return fast
    if (rule.alias is None and rule.options.expand1 and len(rule.expansion) == 1
            and not rule.expansion[0].is_term):
        return _first_child  # `?rule: other_rule` passes its single child through
    return callbacks[rule]


def _first_child(children):
    return children[0]


@functools.lru_cache(maxsize=None)
def _tables() -> _Tables:
    return _Tables(_lark())


class _UnexpectedToken(Exception):
    def __init__(self, token, expected):
        self.token, self.expected = token, expected


def _drive(tokens, start: str, end_pos: int):
    """Run the LALR table over tokens; the callbacks' value for `start`."""
    tables = _tables()
    states = tables.states
    state_stack = [tables.start_states[start]]
    value_stack: list = []
    end_state = tables.end_states[start]
    for tok in tokens:
        ttype = tok.type
        while True:
            row = states[state_stack[-1]]
            try:
                shift, arg = row[ttype]
            except KeyError:
                raise _UnexpectedToken(tok, row) from None
            if shift:
                state_stack.append(arg)
                value_stack.append(tok)
                break
            size, callback, origin = arg
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            value_stack.append(callback(children))
            state_stack.append(states[state_stack[-1]][origin][1])
    end = make_token("$END", "", end_pos)
    while True:
        row = states[state_stack[-1]]
        try:
            shift, arg = row["$END"]
        except KeyError:
            raise _UnexpectedToken(end, row) from None
        size, callback, origin = arg
        if size:
            children = value_stack[-size:]
            del state_stack[-size:]
            del value_stack[-size:]
        else:
            children = []
        value_stack.append(callback(children))
        state_stack.append(states[state_stack[-1]][origin][1])
        if state_stack[-1] == end_state:
            return value_stack[-1]


# --------------------------------------------------------------------------- records


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
            raise _SyntaxInCallback(-1, f"dimension size {d} is too large")
    if not et.is_array_type and dims:
        raise _SyntaxInCallback(-1, f"{et.name} shapes have no dimensions: write {et.name}[]")
    return Shape(et, dims, (False,) * len(dims), layout, None)


def _checked_layout(layout: Layout, rank: int, pos) -> Layout:
    m2m = layout.minor_to_major
    if sorted(m2m) != list(range(rank)):
        what = "does not list each dimension once" if len(m2m) == rank else f"has {len(m2m)} entries"
        raise _SyntaxInCallback(pos if isinstance(pos, int) else -1,
                                f"layout {{{','.join(map(str, m2m))}}} {what} for a shape of rank {rank}")
    return layout


@v_args(inline=True)
class _Records(Transformer):
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
            raise _SyntaxInCallback(prim.start_pos, f"{et.name} shapes have no dimensions: write {et.name}[]")
        return Shape(et, tuple(dims), tuple(dyn), layout, None)

    def shape_text(self, tok):
        try:
            return shape_from_text(tok.value)
        except _SyntaxInCallback as exc:
            raise _SyntaxInCallback(tok.start_pos, exc.message) from None

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
        return V.NanValue(tok.value)

    def inf(self, tok):
        return V.Inf("inf")

    def neg_inf(self, tok):
        return V.Inf("-inf")

    def true(self, tok):
        return True

    def false(self, tok):
        return False

    def string(self, tok):
        return V.Str(unescape(tok[1:-1]))

    def ref(self, tok):
        return V.Ref(tok.value)

    def ident(self, tok):
        return V.Ident(tok.value)

    def dxd(self, tok):
        return V.Dxd(tuple(int(x) for x in tok.split("x")))

    def pad(self, tok):
        return V.Pad(tuple(tuple(int(x) for x in d.split("_")) for d in re.split(r"x(?=-?\d)", tok.value)))

    def dim_labels(self, tok):
        return V.DimLabelsText(tok.value)

    def raw_braces(self, tok):
        return V.RawBraces(tok.value, tok.start_pos)

    def int_list(self, tok):
        body = tok.value[1:-1].strip()
        return V.Braced(tuple(_to_int(x) for x in body.split(",")) if body else ())

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
# children of its rule (punctuation included) and returns what the _Records method of
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
    except _SyntaxInCallback as exc:
        raise _SyntaxInCallback(tok.start_pos, exc.message) from None


_FAST_CALLBACKS = {
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
_FAST_EXPANSIONS = {
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


class _SyntaxInCallback(Exception):
    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


def _syntax(tok, message):
    return _SyntaxInCallback(tok.start_pos if tok is not None and tok.start_pos is not None else -1, message)


# --------------------------------------------------------------------------- syntax errors

_TERMINAL_WORDS = {
    "NAME": "a %name", "IDENT": "a name", "COLON_NAME": "a parameter 'name:'", "ATTR_NAME": "an attribute 'name='",
    "INT": "an integer", "DECIMAL": "a number", "STRING": "a string", "PRIM": "a shape", "SHAPE_TEXT": "a shape",
    "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "ARROW": "'->'", "LE": "'<='", "ROOT": "ROOT",
    "ENTRY": "ENTRY", "HLOMODULE": "HloModule", "LAYOUT_LBRACE": "'{'", "$END": "end of input",
    "OPERAND_NAMES": "'('", "LITERAL_TEXT": "'('", "INT_LIST": "'{'", "BRACED": "'{'", "STACK_TABLE_NAME": "a stack frame table",
    "QMARK": "'?'", "STAR": "'*'", "HASH": "'#'", "ELLIPSIS": "'...'", "NAN": "a number", "INF": "a number",
    "NEG_INF": "a number", "TRUE": "true", "FALSE": "false", "DXD": "a window size like 3x3",
    "PAD": "a padding like 0_1x1_0", "DIM_LABELS": "dim labels like b01f_01io->b01f", "IOTA_T": "'T('",
}


def _describe_token(tok) -> str:
    if tok.type == "$END":
        return "end of input"
    text = str(tok)
    if tok.type == "ATTR_NAME":
        text += "="
    elif tok.type == "COLON_NAME":
        text += ":"
    elif tok.type == "NAME":
        text = "%" + text
    text = text.replace("\n", " ")
    if len(text) > 40:
        text = text[:37] + "..."
    return f"'{text}'"


def _expected_words(row) -> list[str]:
    return sorted({_TERMINAL_WORDS.get(e, e.lower()) for e in row if e.isupper() or e == "$END"})


def _expected_text(row) -> str:
    words = _expected_words(row)
    if not words or len(words) > 6:
        return ""
    return "; expected " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1])


_STATEMENT_STARTS = {"NAME", "IDENT", "ROOT", "RBRACE"}
_MULTI_LINE_STRING = re.compile(r'"(?:\\.|[^"\\\n])*\n(?:\\.|[^"\\])*"')
_HEADER_LINE = re.compile(r"\s*(ENTRY\s+)?%?[A-Za-z_][A-Za-z0-9_.\-]*\s*(\(.*\)\s*->.*)?\{\s*(//.*)?$")
_BRACE_SCAN = re.compile(r'"(?:\\.|[^"\\])*"|/\*.*?\*/|//[^\n\r]*|[{}]', re.S)


def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    ends = [e for e in (text.find("\n", offset), text.find("\r", offset)) if e >= 0]
    return start, (min(ends) if ends else len(text))


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + re.sub(r"[^\n\r]", " ", text[start:end]) + text[end:]


def _previous_token_end(text: str, offset: int) -> int:
    """Offset just after the last non-space, non-comment character before offset."""
    i = offset
    while True:
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        line_start, _ = _line_bounds(text, j)
        comment = text.find("//", line_start, j)
        if comment >= 0 and '"' not in text[line_start:comment]:
            j = comment
        if j == i:
            return i
        i = j


def _brace_depth(text: str, end: int) -> int:
    depth = 0
    for m in _BRACE_SCAN.finditer(text, 0, end):
        t = m.group()
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
    return depth


class _Recovery:
    """What to report for one syntax error and how to change the text to go on."""

    def __init__(self, diag: Diagnostic, text: Optional[str], key: int):
        self.diag, self.text, self.key = diag, text, key


def _recover(exc: Exception, text: str, source: SourceFile) -> _Recovery:
    """Diagnose a syntax error and blank the culprit so the next parse gets further.

    * a token that starts a line, where the parser still wanted to finish the
      previous line (e.g. a missing ')'), blames the previous line: the error
      points just after its last token and that line is blanked;
    * an error on a computation header line inside an unclosed computation is a
      missing '}': a '}' is put in the whitespace before the header;
    * an error elsewhere in a computation header replaces the header by a
      neutral `_ {` so that its body still parses as a computation;
    * otherwise the line holding the error is blanked;
    * end of input and unterminated comments stop the recovery (text None).
    """
    if isinstance(exc, HloError):
        d = exc.diagnostics[0]
        off = d.loc.offset if d.loc else 0
        stop = d.message.startswith("unterminated /*") or d.message.startswith("unterminated '{'")
        return _Recovery(d, None if stop else _blank(text, *_line_bounds(text, off)), off)
    if isinstance(exc, _SyntaxInCallback):
        off = max(exc.offset, 0)
        return _Recovery(Diagnostic(exc.message, source.loc(off)), _blank_statement_line(text, off), off)
    tok, row = exc.token, exc.expected
    if tok.type == "$END":
        off = _previous_token_end(text, len(text))
        msg = "unexpected end of input" + _expected_text(row)
        if "RBRACE" in row and _brace_depth(text, len(text)) > 0:
            msg = "unexpected end of input: a '}' is missing"
        diag = Diagnostic(msg, source.loc(max(off - 1, 0)))
        multi_line = _MULTI_LINE_STRING.search(text)
        if multi_line:
            diag.notes.append(Diagnostic("this string runs over several lines; is a closing '\"' missing?",
                                         source.loc(multi_line.start()), "note"))
        return _Recovery(diag, None, len(text))
    off = tok.start_pos
    line_start, line_end = _line_bounds(text, off)
    first_on_line = not text[line_start:off].strip()
    line = text[line_start:line_end]
    if _HEADER_LINE.match(line) and _brace_depth(text, line_start) > 0 and "RBRACE" in row:
        where = _previous_token_end(text, line_start)
        name = re.search(r"%?([A-Za-z_][A-Za-z0-9_.\-]*)\s*[({]", line.replace("ENTRY", "", 1))
        what = f"before computation '{name.group(1)}'" if name else "before this computation"
        diag = Diagnostic(f"missing '}}' {what}: the previous computation is not closed",
                          source.loc(max(where - 1, 0)))
        return _Recovery(diag, _close_before(text, line_start, line_end), off)
    if first_on_line and not (_STATEMENT_STARTS & set(row)) and line_start > 0:
        where = _previous_token_end(text, line_start)
        prev_start, prev_end = _line_bounds(text, max(where - 1, 0))
        msg = f"expected {_expected_words_phrase(row)} before {_describe_token(tok)}"
        return _Recovery(Diagnostic(msg, source.loc(where)),
                         _blank(text, prev_start, prev_end), off)
    msg = f"unexpected {_describe_token(tok)}{_expected_text(row)}"
    if tok.type == "ATTR_NAME" and "COMMA" in row:
        msg = f"expected ',' before {_describe_token(tok)}"
    elif tok.type == "ATTR_NAME" and ("EQUAL" in row or "NAME" in row):
        msg += f" (an instruction is written '{tok} = shape opcode(...)' with spaces around '=')"
    return _Recovery(Diagnostic(msg, source.loc(off)), _blank_statement_line(text, off), off)


def _close_before(text: str, line_start: int, line_end: int) -> Optional[str]:
    """The text with a '}' put before the computation header at line_start (same length)."""
    neutral = "} _ {"
    if line_end - line_start >= len(neutral):  # names don't matter once there are syntax errors
        return text[:line_start] + neutral.ljust(line_end - line_start) + text[line_end:]
    if line_start > 0:  # a very short header: the line break before it becomes the '}'
        return text[:line_start - 1] + "}" + text[line_start:]
    return None


def _expected_words_phrase(row) -> str:
    words = _expected_words(row)
    if not words or len(words) > 6:
        return "more input"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _blank_statement_line(text: str, off: int) -> str:
    """Blank the line at off; a computation header is replaced by a neutral `_ {` instead."""
    start, end = _line_bounds(text, off)
    line = text[start:end]
    if _HEADER_LINE.match(line) or (line.rstrip().endswith("{") and "=" not in line and "(" in line
                                    and "->" in line):
        entry = "ENTRY " if line.lstrip().startswith("ENTRY") else ""
        neutral = f"{entry}_ {{"
        if len(neutral) <= len(line):
            return text[:start] + neutral.ljust(len(line)) + text[end:]
    return _blank(text, start, end)


def _parse_records(text: str, source: SourceFile, start: str = "start", raw_dict_values: bool = False,
                   max_errors: int = 50):
    """Records of the text, or raise HloError with every syntax error found."""
    result, diagnostics = _parse_records_recovering(text, source, start, raw_dict_values, max_errors)
    if diagnostics:
        raise HloError(diagnostics)
    return result


def _parse_records_recovering(text: str, source: SourceFile, start: str = "start", raw_dict_values: bool = False,
                              max_errors: int = 50):
    """(records, syntax diagnostics): the records of the text with every broken line blanked out
    (None when recovery had to stop, e.g. at an unexpected end of input)."""
    _lark()
    diagnostics: list[Diagnostic] = []
    work = text
    last_key = None
    extra_blanks = 0
    for _ in range(max_errors * 4):
        try:
            return _drive(tokenize(work, raw_dict_values, source), start, len(work)), diagnostics
        except VisitError as exc:
            err = exc.orig_exc
        except (_UnexpectedToken, HloError, _SyntaxInCallback) as exc:
            err = exc
        rec = _recover(err, work, source)
        if rec.key == last_key and rec.text is not None:
            # Same token fails again: the culprit starts earlier (a multi-line statement).
            extra_blanks += 1
            if extra_blanks > 20:
                break
            start_line, _ = _line_bounds(work, _previous_token_end(work, _line_bounds(work, rec.key)[0]) - 1)
            prev_text = _blank(work, start_line, _line_bounds(work, start_line)[1])
            if prev_text == work:
                break
            work = prev_text
            continue
        extra_blanks = 0
        last_key = rec.key
        diagnostics.append(rec.diag)
        if rec.text is None or rec.text == work or len(diagnostics) >= max_errors:
            break
        work = rec.text
    return None, diagnostics


# --------------------------------------------------------------------------- building the IR

_GENERIC = frozenset(GENERIC_ATTRIBUTES)
_LEAF_OPCODES = frozenset({"parameter", "constant"})  # a number or literal where operands go


class _Builder:
    def __init__(self, source: SourceFile):
        self.source = source
        self.sink = DiagnosticSink()
        self.module: Optional[Module] = None
        self.computations: dict[str, Computation] = {}
        self.anon_counter = 0

    def loc(self, offset: int) -> SourceLoc:
        return SourceLoc(self.source, offset if offset > 0 else 0)

    def err(self, message: str, offset: int, note: str = None, note_offset: int = None) -> None:
        notes = [Diagnostic(note, self.loc(note_offset), "note")] if note and note_offset is not None else []
        self.sink.add(Diagnostic(message, self.loc(offset), "error", notes))

    # ---- module
    def build(self, header: Optional[HeaderRec], comps: list[CompRec]) -> Module:
        entry_rec = next((c for c in comps if c.is_entry), comps[-1])
        name = header.name if header else "module_" + entry_rec.name
        module = self.module = Module(name)
        module.source = self.source
        entries = [c for c in comps if c.is_entry]
        for extra in entries[1:]:
            self.err("more than one ENTRY computation", extra.pos, "the first ENTRY is here", entries[0].pos)
        for rec in comps:
            comp = self.computation(rec)
            if comp is not None:
                module.add_computation(comp)
        if entry_rec.name in self.computations:
            module.entry = self.computations[entry_rec.name]
            module.entry.is_entry = True
        if header:
            self.header_attrs(header)
        self.uniquify_names()
        return module

    def header_attrs(self, header: HeaderRec) -> None:
        cfg = self.module.config
        seen = set()
        for name, value, pos in header.attrs:
            if name in seen:
                self.err(f"module attribute '{name}' given more than once", pos)
                continue
            seen.add(name)
            try:
                self.header_attr(cfg, name, value, pos)
            except ValueError as exc:
                self.err(f"module attribute '{name}': {exc}", pos)
            except HloError as exc:
                self.sink.extend(exc)
        cfg.stack_frame_index = header.stack_frames

    def header_attr(self, cfg, name, value, pos) -> None:
        if name == "is_scheduled":
            cfg.is_scheduled = _bool(value)
        elif name == "replica_count":
            cfg.replica_count = _positive_int(value)
        elif name == "num_partitions":
            cfg.num_partitions = _positive_int(value)
        elif name == "alias_passthrough_params":
            cfg.alias_passthrough_params = _bool(value)
        elif name == "entry_computation_layout":
            if not (isinstance(value, V.Braced) and len(value.items) == 1
                    and isinstance(value.items[0], V.ProgramShapeValue)):
                raise ValueError("expected {(parameter shapes)->result shape}")
            ps = value.items[0]
            cfg.entry_computation_layout = ProgramShape([to_shape(p) for p in ps.params.items], to_shape(ps.result))
        elif name == "input_output_alias":
            cfg.input_output_alias = [_alias_entry(item) for item in _braced_items(value)]
        elif name == "buffer_donor":
            cfg.buffer_donor = [_donor(item) for item in _braced_items(value)]
        elif name in ("allow_spmd_sharding_propagation_to_parameters", "allow_spmd_sharding_propagation_to_output"):
            flags = (value,) if isinstance(value, bool) else tuple(_bool(v) for v in _braced_items(value))
            setattr(cfg, name, flags)
        elif name == "frontend_attributes":
            cfg.frontend_attributes = _frontend(value, self.source)
        elif name == "origin_recovery_table":
            cfg.origin_recovery_table = value
        else:
            raise ValueError("unknown module attribute; allowed: is_scheduled, input_output_alias, buffer_donor, "
                             "alias_passthrough_params, entry_computation_layout, "
                             "allow_spmd_sharding_propagation_to_parameters, "
                             "allow_spmd_sharding_propagation_to_output, replica_count, num_partitions, "
                             "frontend_attributes, origin_recovery_table")

    def uniquify_names(self) -> None:
        """XLA renames instructions that share a name across computations: first one wins."""
        uniquer = NameUniquer([c.name for c in self.module.computations])
        unique = uniquer.unique
        for comp in self.module.computations:
            for inst in comp.instructions:
                inst.name = unique(inst.name)

    # ---- computations
    def computation(self, rec: CompRec, anonymous: bool = False) -> Optional[Computation]:
        if not anonymous and rec.name in self.computations:
            self.err(f"computation '{rec.name}' is defined twice", rec.pos,
                     "first definition is here", self.computations[rec.name].loc.offset)
            return None
        comp = Computation(rec.name, self.loc(rec.pos))
        if not rec.instructions:
            self.err(f"computation '{rec.name}' has no instructions", rec.pos)
        scope: dict[str, Instruction] = {}
        later = {i.name: i.pos for i in rec.instructions}
        roots = [i for i in rec.instructions if i.is_root]
        for extra in roots[1:]:
            self.err(f"computation '{rec.name}' has more than one ROOT", extra.pos,
                     "the first ROOT is here", roots[0].pos)
        for irec in rec.instructions:
            inst = self.instruction(irec, comp, scope, later)
            if inst is not None and irec.is_root and comp.root is None:
                comp.root = inst
        if comp.root is None and comp.instructions:
            comp.root = comp.instructions[-1]
        if rec.signature is not None:
            comp.declared_result_shape = rec.signature[1]
            comp.signature_loc = self.loc(rec.signature[2])
        seen_attrs = set()
        for name, value, pos in rec.attrs:
            if name == "execution_thread" and isinstance(value, V.Str) and name not in seen_attrs:
                comp.execution_thread = value.text
            elif name == "execution_thread" and name not in seen_attrs:
                self.err('execution_thread= takes a string, e.g. execution_thread="host"', pos)
            elif name in seen_attrs:
                self.err(f"computation attribute '{name}' given more than once", pos)
            else:
                self.err(f"unexpected computation attribute '{name}'; only execution_thread= is allowed", pos)
            seen_attrs.add(name)
        if not anonymous:
            self.computations[rec.name] = comp
        return comp

    def resolve_computation(self, value) -> Computation:
        if isinstance(value, V.InlineComputation):
            self.anon_counter += 1
            rec = CompRec(False, f"_.{self.anon_counter}" if self.anon_counter > 1 else "_", value.offset, None,
                          list(value.instructions), [])
            comp = self.computation(rec, anonymous=True)
            comp.name = NameUniquer([c.name for c in self.module.computations]).unique("inlined")
            self.module.add_computation(comp, before=None)
            self.computations[comp.name] = comp
            return comp
        name = value.name if isinstance(value, V.Ref) else value.text
        comp = self.computations.get(name)
        if comp is None:
            raise ValueError(f"computation '{name}' is not defined (computations must be defined before use)")
        return comp

    # ---- instructions
    def instruction(self, rec: InstrRec, comp: Computation, scope: dict, later: dict,
                    name: Optional[str] = None) -> Optional[Instruction]:
        name = name or rec.name
        operands = []
        locs = []
        ok = True
        for op in (rec.operands if rec.opcode not in _LEAF_OPCODES else ()):
            if type(op) is OperandRef:
                target = scope.get(op.name)
                if target is None:
                    ok = False
                    self.undefined_operand(op, rec, later)
                    continue
                if op.shape is not None and target.shape is not None and not op.shape.compatible(target.shape):
                    self.err(f"operand '%{op.name}' is written with shape {op.shape} but has shape "
                             f"{target.shape}", op.pos, "defined here", target.loc.offset)
                operands.append(target)
                locs.append(SourceLoc(self.source, op.pos))
            elif type(op) is InstrRec:  # nested instruction: gets a generated name
                inner = self.instruction(op, comp, scope, later, _nested_name(op.opcode, scope))
                if inner is None:
                    ok = False
                else:
                    operands.append(inner)
                    locs.append(SourceLoc(self.source, op.pos))
        if name in scope:
            self.err(f"instruction name '%{name}' is already defined in computation '{comp.name}'", rec.pos,
                     "previous definition is here", scope[name].loc.offset)
            return None
        if name in PRIMITIVE_TYPES or (name.startswith("__") and not name.startswith("__xla_")):
            self.err(f"illegal instruction name '{name}'", rec.pos)
        opcode = rec.opcode
        sugar = None
        if opcode not in OPCODES:
            sugar = split_async_sugar(opcode)
            if sugar is None:
                self.unknown_opcode(rec)
                return None
        inst = Instruction(name, opcode, rec.shape, loc=SourceLoc(self.source, rec.pos))
        for target in operands:
            inst.operands.append(target)
            target.users.append(inst)
        inst.operand_locs = locs
        if not self.leaf_operand(inst, rec):
            ok = False
        if rec.attrs or sugar is not None:
            self.attributes(inst, rec, scope, sugar)
        else:
            self.required_attributes(inst, rec, wrapped_attr_specs(opcode), ())
        if sugar is not None:
            self.expand_async_sugar(inst, sugar, comp)
        if opcode == Op.SELECT and ok and _legacy_select(inst):
            inst = self.canonical_select(inst, comp, scope)
        comp.add(inst)
        scope[name] = inst
        if inst.shape is None and ok:
            self.infer_shape(inst)
        return inst

    # Old dumps (and XLA's builder) allow a scalar predicate selecting whole arrays, and tuple
    # operands; the verifier no longer does. They become a broadcast predicate and one select
    # per tuple element (ops-2, Select), so everything after the parser sees strict HLO.
    def canonical_select(self, inst: Instruction, comp: Computation, scope: dict) -> Instruction:
        pred, on_true, on_false = inst.operands
        for op in list(inst.operands):
            op.users.remove(inst)
        inst.operands = []
        return self.select_of(pred, on_true, on_false, inst, comp, scope, name=inst.name)

    def select_of(self, pred, on_true, on_false, like: Instruction, comp: Computation, scope: dict,
                  name: Optional[str] = None) -> Instruction:
        """select(pred, on_true, on_false) in strict form; the result is named `name` (and left for
        the caller to add) when given, every other new instruction gets a generated name."""
        def add(opcode, shape, operands, attrs=None, final_name=None):
            new = Instruction(final_name or _nested_name(opcode, scope), opcode, shape, operands, attrs or {},
                              loc=like.loc)
            if final_name is None:
                comp.add(new)
                scope[new.name] = new
            return new

        shape = on_true.shape
        if shape.is_tuple:
            parts = []
            for k, sub in enumerate(shape.tuple_shapes):
                t = add("get-tuple-element", sub, [on_true], {"index": k})
                f = add("get-tuple-element", on_false.shape.tuple_shapes[k], [on_false], {"index": k})
                parts.append(self.select_of(pred, t, f, like, comp, scope))
            return add("tuple", shape, parts, final_name=name)
        if pred.shape.rank == 0 and shape.rank > 0:
            pred = add("broadcast", Shape.array(pred.shape.element_type, shape.dims).with_default_layouts(), [pred],
                       {"dimensions": ()})
        return add("select", shape, [pred, on_true, on_false], final_name=name)

    def undefined_operand(self, op: OperandRef, rec: InstrRec, later: dict) -> None:
        if op.name in later and later[op.name] > rec.pos:
            self.err(f"'%{op.name}' is used before it is defined", op.pos, "defined here", later[op.name])
        elif op.name in self.computations:
            self.err(f"'%{op.name}' is a computation, not an instruction of this computation", op.pos)
        else:
            close = difflib.get_close_matches(op.name, list(later), n=1)
            hint = f"; did you mean '%{close[0]}'?" if close else ""
            self.err(f"use of undefined instruction '%{op.name}'{hint}", op.pos)

    def unknown_opcode(self, rec: InstrRec) -> None:
        close = difflib.get_close_matches(rec.opcode, list(OPCODES), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        self.err(f"unknown opcode '{rec.opcode}'{hint}", rec.opcode_pos)

    def leaf_operand(self, inst: Instruction, rec: InstrRec) -> bool:
        """parameter(N) and constant(literal): the number/literal where operands go."""
        opcode = inst.opcode
        if opcode == Op.PARAMETER:
            ops = rec.operands
            if len(ops) != 1 or type(ops[0]) is not LiteralOperand or not _is_plain_int(ops[0].value):
                self.err("parameter takes one integer: parameter(N)", rec.opcode_pos)
                return False
            number = int(ops[0].value)
            inst.attrs["parameter_number"] = number
            if number < 0:
                self.err("parameter number must be non-negative", rec.opcode_pos)
            return True
        if opcode == Op.CONSTANT:
            ops = rec.operands
            if len(ops) != 1 or type(ops[0]) is not LiteralOperand:
                self.err("constant takes one literal: constant(value)", rec.opcode_pos)
                return False
            if inst.shape is None:
                self.err("constant needs its shape written before the opcode", rec.opcode_pos)
                return False
            try:
                inst.attrs["literal"] = literal_from_value(inst.shape, ops[0].value)
            except ValueError as exc:
                self.literal_error(inst, rec, exc)
                return False
            return True
        if any(type(op) is LiteralOperand for op in rec.operands):
            self.err(f"'{opcode}' takes instruction operands, not literal values", rec.opcode_pos)
            return False
        return True

    def literal_error(self, inst: Instruction, rec: InstrRec, exc: ValueError) -> None:
        text = self.source.text
        open_paren = text.find("(", rec.opcode_pos)
        start = _skip_space(text, open_paren + 1) if open_paren >= 0 else rec.opcode_pos
        index = getattr(exc, "index", None)
        where = _literal_element_offset(text, start, index) if index is not None else start
        self.err(f"bad literal for {inst.shape}: {exc}", where)

    def attributes(self, inst: Instruction, rec: InstrRec, scope: dict, sugar) -> None:
        specs = wrapped_attr_specs(inst.opcode)
        seen: dict[str, int] = {}
        for name, value, pos in rec.attrs:
            if name in seen:
                self.err(f"attribute '{name}' is given more than once", pos, "first given here", seen[name])
                continue
            seen[name] = pos
            inst.attr_locs[name] = SourceLoc(self.source, pos)
            try:
                if name in _GENERIC:
                    self.generic_attribute(inst, name, value, scope)
                elif name in specs:
                    inst.attrs[name] = convert_attribute(specs[name], value, self.resolve_computation)
                elif name == "result_accuracy" and inst.opcode in OPCODES and OPCODES[inst.opcode].transcendental:
                    inst.attrs[name] = check_generic_attribute(name, value)
                else:
                    self.unknown_attribute(inst, name, pos, specs)
            except ValueError as exc:
                self.err(f"attribute '{name}': {exc}", pos)
            except HloError as exc:
                self.sink.extend(exc)
        self.required_attributes(inst, rec, specs, seen)

    def required_attributes(self, inst, rec, specs, seen) -> None:
        for spec in specs.values():
            if spec.required and spec.name not in seen and spec.name not in inst.attrs:
                self.err(f"'{inst.opcode}' requires attribute '{spec.name}='", rec.opcode_pos)

    def unknown_attribute(self, inst: Instruction, name: str, pos: int, specs) -> None:
        allowed = sorted(specs)
        close = difflib.get_close_matches(name, allowed + sorted(_GENERIC), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        listed = ", ".join(allowed) if allowed else "none besides the generic ones"
        self.err(f"unexpected attribute '{name}' for opcode '{inst.opcode}'{hint}; allowed: {listed}", pos)

    def generic_attribute(self, inst: Instruction, name: str, value, scope: dict) -> None:
        if name == "metadata":
            inst.metadata = _metadata(value, self.source)
        elif name == "frontend_attributes":
            inst.frontend_attributes = _frontend(value, self.source)
        elif name == "backend_config":
            if isinstance(value, (V.Str, V.RawBraces)):
                inst.backend_config = value.text
            else:
                raise ValueError("expected a string or a {json} dict")
        elif name == "control-predecessors":
            preds = []
            for item in _braced_items(value):
                ref = item.name if isinstance(item, V.Ref) else item.text if isinstance(item, V.Ident) else None
                if ref is None or ref not in scope:
                    shown = f"'%{ref}'" if ref is not None else f"'{_show(item)}'"
                    raise ValueError(f"control predecessor {shown} is not an instruction defined earlier in "
                                     f"this computation")
                preds.append(scope[ref])
            inst.control_predecessors = preds
        elif name == "sharding":
            inst.sharding = check_generic_attribute(name, value)
        elif name == "statistics":
            inst.statistics = check_generic_attribute(name, value)
        elif name == "origin":
            inst.origin = check_generic_attribute(name, value)
        elif name == "parameter_replication":
            inst.parameter_replication = tuple(_bool(v) for v in _braced_items(value))

    def expand_async_sugar(self, inst: Instruction, sugar, comp: Computation) -> None:
        """`X-start(ops), X-attrs` -> async-start calling a one-instruction computation of X."""
        wrapped_op, suffix = sugar
        if suffix != "-start":
            inst.opcode = "async-update" if suffix == "-update" else "async-done"
            start = inst.operands[0] if inst.operands else None
            if start is not None and "calls" in start.attrs:
                inst.attrs["calls"] = start.attrs["calls"]
            return
        inst.opcode = "async-start"
        wrapped_attrs = {k: inst.attrs.pop(k) for k in list(inst.attrs) if k in OPCODES[wrapped_op].attr_map}
        body = Computation(NameUniquer(self.computations).unique(f"{inst.name}.async_wrapped"), inst.loc)
        body.async_wrapped = True
        body.execution_thread = inst.attrs.get("async_execution_thread", "main")
        for i, op in enumerate(inst.operands):
            p = Instruction(f"param_{i}", "parameter", op.shape, loc=inst.loc)
            p.attrs["parameter_number"] = i
            body.add(p)
        result_shape = None
        if inst.shape is not None and inst.shape.is_tuple and len(inst.shape.tuple_shapes) >= 2:
            result_shape = inst.shape.tuple_shapes[1]
        wrapped = Instruction(wrapped_op, wrapped_op, result_shape, list(body.instructions), wrapped_attrs,
                              loc=inst.loc)
        wrapped.copy_generic_attributes_from(inst)
        body.add(wrapped)
        body.root = wrapped
        self.module.add_computation(body, before=None)
        self.computations[body.name] = body
        inst.attrs["calls"] = body

    def infer_shape(self, inst: Instruction) -> None:
        try:
            from ..shape_inference import infer_shape
        except ImportError:
            self.err(f"the result shape of '{inst.opcode}' must be written (shape inference is unavailable)",
                     inst.loc.offset)
            return
        try:
            inst.shape = infer_shape(inst)
        except ValueError as exc:
            self.err(f"cannot infer the shape of '{inst.opcode}': {exc}", inst.loc.offset)
        except HloError as exc:
            self.sink.extend(exc)
        except Exception as exc:  # a bug in shape inference must not escape as a non-HloError
            self.err(f"cannot infer the shape of '{inst.opcode}' (internal error: {type(exc).__name__}: {exc}); "
                     f"write the result shape", inst.loc.offset)


def _legacy_select(inst: Instruction) -> bool:
    """A select with a scalar predicate over arrays, or over tuples (see canonical_select)."""
    if len(inst.operands) != 3 or any(op.shape is None for op in inst.operands):
        return False
    pred, on_true, _ = inst.operands
    return on_true.shape.is_tuple or (pred.shape.is_array and pred.shape.rank == 0 and on_true.shape.rank > 0)


def _nested_name(opcode: str, scope: dict) -> str:
    name = f"{opcode}.anon"
    n = 1
    while name in scope:
        name = f"{opcode}.anon.{n}"
        n += 1
    return name


def _is_plain_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _skip_space(text: str, pos: int) -> int:
    from .lexer import _skip
    return _skip(text, pos)


def _literal_element_offset(text: str, start: int, index: int) -> int:
    """Offset of the index-th element (row-major) of the literal written at start."""
    count = -1
    depth = 0
    paren = 0
    try:
        for tok in tokenize(text[start:], False, None):
            t = tok.type
            if t == "LBRACE" or t == "INT_LIST":
                depth += 1
                if t == "INT_LIST":
                    return start + tok.start_pos
            elif t == "RBRACE":
                depth -= 1
                if depth <= 0:
                    break
            elif t == "LPAR":
                if paren == 0:
                    count += 1
                    if count == index:
                        return start + tok.start_pos
                paren += 1
            elif t == "RPAR":
                paren -= 1
                if paren < 0:
                    break
            elif t not in ("COMMA", "ELLIPSIS") and paren == 0:
                count += 1
                if count == index:
                    return start + tok.start_pos
    except HloError:
        pass
    return start


def _show(v) -> str:
    try:
        return V.format_value(v)
    except Exception:
        return repr(v)


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got '{_show(v)}'")
    return v


def _positive_int(v) -> int:
    if not _is_plain_int(v) or v < 1:
        raise ValueError(f"expected a positive integer, got '{_show(v)}'")
    return int(v)


def _braced_items(v):
    if not isinstance(v, V.Braced):
        raise ValueError(f"expected a list in braces, got '{_show(v)}'")
    return v.items


def _alias_entry(item) -> AliasEntry:
    if not (isinstance(item, V.Mapping) and isinstance(item.value, V.Paren) and len(item.value.items) in (2, 3)):
        raise ValueError("expected entries like {0}: (0, {}, may-alias)")
    items = item.value.items
    kind = items[2].text if len(items) == 3 and isinstance(items[2], V.Ident) else "may-alias"
    if len(items) == 3 and not isinstance(items[2], V.Ident):
        raise ValueError("the alias kind is may-alias or must-alias")
    if kind not in ("may-alias", "must-alias"):
        raise ValueError(f"alias kind must be may-alias or must-alias, not '{kind}'")
    if not _is_plain_int(items[0]) or items[0] < 0:
        raise ValueError(f"expected a parameter number, got '{_show(items[0])}'")
    return AliasEntry(to_shape_index(item.key), int(items[0]), to_shape_index(items[1]), kind)


def _donor(item):
    if not (isinstance(item, V.Paren) and len(item.items) == 2 and _is_plain_int(item.items[0])):
        raise ValueError("expected entries like (0, {})")
    return int(item.items[0]), to_shape_index(item.items[1])


def _metadata(value, source: SourceFile) -> Metadata:
    """metadata={...}: kept verbatim; validated with one regular expression (fully parsed if that fails)."""
    if not isinstance(value, V.RawBraces):
        raise ValueError("expected {op_name=\"...\" ...}")
    if not METADATA_FIELD_RE.fullmatch(value.text):
        fields = parse_braced_fields(value.text, source=source, offset=value.offset)
        Metadata.check_fields(fields)
        return Metadata(value.text, fields)
    return Metadata(value.text)


def _frontend(value, source: SourceFile) -> FrontendAttributes:
    if not isinstance(value, V.RawBraces):
        raise ValueError("expected {key=\"value\", ...}")
    items = parse_braced_fields(value.text, raw_dict_values=True, source=source, offset=value.offset)
    FrontendAttributes.check_items(items)
    return FrontendAttributes(value.text, items)


# --------------------------------------------------------------------------- public API

_SURROGATE = re.compile("[\ud800-\udfff]")
_CACHE_LOCK = threading.Lock()
_CACHE: "OrderedDict[bytes, Any]" = OrderedDict()
_CACHE_MAX_CHARS = 64 * 1024 * 1024
_cache_chars = 0


def clear_parse_cache() -> None:
    """Forget the records of previously parsed texts."""
    global _cache_chars
    with _CACHE_LOCK:
        _CACHE.clear()
        _cache_chars = 0


def _cached_records(text: str, source: SourceFile):
    """(header, computations) records of text, reusing those of an identical earlier text.

    Records are never mutated by the builder, so sharing them is safe.
    """
    global _cache_chars
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit[0], hit[1]
    header, comps = _parse_records(text, source)
    if len(text) <= _CACHE_MAX_CHARS:
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = (header, comps, len(text))
                _cache_chars += len(text)
                while _cache_chars > _CACHE_MAX_CHARS and _CACHE:
                    _, old = _CACHE.popitem(last=False)
                    _cache_chars -= old[2]
    return header, comps


def parse_module(text: str, filename: str = "<string>") -> Module:
    """Parse HLO text into a Module; raises HloError listing every error found."""
    source = SourceFile(filename, text)
    if not text.strip():
        raise error("empty input: expected an HloModule", source.loc(0))
    surrogate = _SURROGATE.search(text)
    if surrogate:
        raise error(f"invalid character U+{ord(surrogate.group()):04X} (a lone UTF-16 surrogate)",
                    source.loc(surrogate.start()))
    gc_was_enabled = gc.isenabled()
    gc.disable()  # parsing allocates many long-lived objects; collections would only slow it down
    try:
        header, comps = _cached_records(text, source)
        builder = _Builder(source)
        module = builder.build(header, comps)
    finally:
        if gc_was_enabled:
            gc.enable()
    builder.sink.raise_if_any()
    return module


def parse_braced_fields(raw: str, raw_dict_values: bool = False, source: Optional[SourceFile] = None,
                        offset: int = 0) -> dict:
    """Fields of a lazily kept `{key=value ...}` text (metadata, frontend attributes).

    Errors point into `source` at `offset` + their position in raw when a source is given.
    """
    own = SourceFile("<attribute>", raw)
    try:
        braced = _parse_records(raw, own, start="braced", raw_dict_values=raw_dict_values, max_errors=1)
    except HloError as exc:
        if source is None:
            raise
        raise HloError([Diagnostic(d.message, source.loc(offset + (d.loc.offset if d.loc else 0)), d.severity,
                                   d.notes) for d in exc.diagnostics]) from None
    out = {}
    for item in braced.items:
        if isinstance(item, V.Keyed):
            v = item.value
            if isinstance(v, V.Str):
                v = v.text
            elif isinstance(v, V.Braced):
                v = tuple(v.items)
            if item.key in out:
                _raise_at(source, offset, raw, item, f"'{item.key}' is given more than once")
            out[item.key] = v
        elif not (isinstance(item, V.Braced) and not item.items):
            _raise_at(source, offset, raw, item, f"expected key=value, got '{_show(item)}'")
    return out


def _raise_at(source, offset, raw, item, message):
    loc = source.loc(offset) if source is not None else None
    raise HloError([Diagnostic(message, loc)])


def parse_module_with_recovery(text: str, filename: str = "<string>") -> tuple[Optional[Module], list[Diagnostic]]:
    """The best Module the text gives and every diagnostic found; never raises HloError.

    For editors: broken lines are blanked out as in parse_module (offsets are kept, so
    every location still points into `text`), an unclosed last computation is closed,
    and the rest of the file is built. The module is None only when nothing could be
    built (empty text, or recovery stopped before any computation).
    """
    source = SourceFile(filename, text)
    if not text.strip():
        return None, [Diagnostic("empty input: expected an HloModule", source.loc(0))]
    surrogate = _SURROGATE.search(text)
    if surrogate:
        return None, [Diagnostic(f"invalid character U+{ord(surrogate.group()):04X} (a lone UTF-16 surrogate)",
                                 source.loc(surrogate.start()))]
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        records, diagnostics = _parse_records_recovering(text, source)
        depth = _brace_depth(text, len(text)) if records is None else 0
        if depth > 0:  # keep the first pass's diagnostics: they say what is missing
            records, _ = _parse_records_recovering(text + "\n" + "}" * depth, source)
        if records is None or not records[1]:
            return None, diagnostics
        builder = _Builder(source)
        try:
            module = builder.build(*records)
        except HloError as exc:
            return None, diagnostics + builder.sink.diagnostics + exc.diagnostics
    finally:
        if gc_was_enabled:
            gc.enable()
    return module, diagnostics + builder.sink.diagnostics
