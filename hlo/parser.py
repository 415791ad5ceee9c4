"""HLO text -> IR.

Three steps:
1. grammar/hlo.lark, run by Lark's LALR parser over hlo/lexer.py's tokens, turns
   the text into plain records (`_Records` below is the Lark transformer; it is
   stateless, so one parser serves every thread);
2. `_Builder` turns records into Module/Computation/Instruction objects: it
   resolves names (no forward references), converts attributes with the opcode
   table, builds literals, expands async sugar, and collects every error;
3. shapes left out in the text are inferred with hlo/shape_inference.py.

A syntax error does not stop the parse: the offending line is blanked out and the
text parsed again, so that every syntax error in a file is reported at once.
"""
from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lark import Lark, Transformer, Token, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import values as V
from .attributes import (FrontendAttributes, Metadata, convert_attribute, to_shape, to_shape_index)
from .diagnostics import Diagnostic, DiagnosticSink, HloError, SourceFile, SourceLoc, error
from .ir import AliasEntry, Computation, Instruction, Module, NameUniquer, ProgramShape
from .lexer import HloLexer, LexInput, build_token_regex
from .literal import Literal, literal_from_value
from .opcodes import OPCODES, AttrKind, split_async_sugar, wrapped_attr_specs
from .shapes import Layout, Shape, Tile, UNBOUNDED, primitive_type

# --------------------------------------------------------------------------- the grammar


def grammar_text() -> str:
    try:
        from importlib.resources import files
        return (files("hlo_grammar") / "hlo.lark").read_text()
    except (ImportError, ModuleNotFoundError, FileNotFoundError):
        return (Path(__file__).resolve().parent.parent / "grammar" / "hlo.lark").read_text()


_lark_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _lark() -> Lark:
    with _lark_lock:
        text = grammar_text()
        lark = Lark(text, parser="lalr", lexer=HloLexer, transformer=_Records(), start=["start", "braced"],
                    maybe_placeholders=False, cache=False)
        patterns = {t.name: t.pattern.to_regexp() for t in lark.terminals}
        HloLexer.token_regex = build_token_regex(patterns)
        return lark


# --------------------------------------------------------------------------- records


@dataclass
class OperandRef:
    name: str
    pos: int
    shape: Optional[Shape]


@dataclass
class InstrRec:
    is_root: bool
    name: Optional[str]
    pos: int
    shape: Optional[Shape]
    opcode: str
    opcode_pos: int
    operands: list
    attrs: list      # (name, value, pos)


@dataclass
class CompRec:
    is_entry: bool
    name: str
    pos: int
    signature: Optional[tuple]   # (params [(name, shape)], result shape, pos)
    instructions: list
    attrs: list


@dataclass
class HeaderRec:
    name: str
    pos: int
    attrs: list
    stack_frames: Any = None


@dataclass
class LiteralOperand:
    value: Any
    pos: int


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "?": "?"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.S)


def unescape(body: str) -> str:
    if "\\" not in body:
        return body

    def repl(m):
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8))
        return _ESCAPES.get(e, e)
    raw = _ESCAPE_RE.sub(repl, body)
    try:  # \x escapes of UTF-8 bytes: reassemble the characters
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def _int(tok: Token) -> int:
    return int(tok)


@v_args(inline=True)
class _Records(Transformer):
    """Parse-tree callbacks: build plain records and generic values (no state)."""

    # ---- module level
    def start(self, module):
        return module

    def module(self, *children):
        header = children[0] if isinstance(children[0], HeaderRec) else None
        comps = [c for c in children if isinstance(c, CompRec)]
        return header, comps

    def header(self, kw, name, *rest):
        attrs = [r for r in rest if isinstance(r, tuple)]
        frames = next((r for r in rest if isinstance(r, list)), None)
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
            if isinstance(child, InstrRec):
                instructions.append(child)
            elif isinstance(child, tuple) and len(child) == 3 and isinstance(child[0], list):
                signature = child
            else:
                attrs.append(child)
        return CompRec(is_entry, name, pos, signature, instructions, attrs)

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
        is_root = False
        if isinstance(children[0], Token) and children[0].type == "ROOT":
            is_root, i = True, 1
        name, pos = children[i]
        i += 2  # skip the '=' token
        shape = None
        if isinstance(children[i], Shape):
            shape = children[i]
            i += 1
        opcode = children[i]
        operands, attrs = [], []
        for child in children[i + 1:]:
            if isinstance(child, tuple) and len(child) == 3 and isinstance(child[0], str):
                attrs.append(child)
            else:
                operands.append(child)
        return InstrRec(is_root, name, pos, shape, str(opcode), opcode.start_pos, operands, attrs)

    def inst_name(self, tok):
        return str(tok), tok.start_pos

    def ref_operand(self, *children):
        tok = children[-1]
        return OperandRef(str(tok), tok.start_pos, children[0] if len(children) == 2 else None)

    def nested_instruction(self, *children):
        shape = children[0] if isinstance(children[0], Shape) else None
        opcode = children[1] if shape is not None else children[0]
        operands = list(children[2:] if shape is not None else children[1:])
        return InstrRec(False, None, opcode.start_pos, shape, str(opcode), opcode.start_pos, operands, [])

    def literal_operand(self, value):
        return LiteralOperand(value, -1)

    def literal_braces(self, *items):
        return [i for i in items if not (isinstance(i, Token) and i.type == "COMMA")]

    def literal_paren(self, *items):
        return V.Paren(tuple(items))

    # ---- shapes
    def shape(self, s):
        return s

    def array_shape(self, prim, *rest):
        et = primitive_type(str(prim))
        layout = None
        dims, dyn = [], []
        for r in rest:
            if isinstance(r, Layout):
                layout = r
            else:
                dims.append(r[0])
                dyn.append(r[1])
        if layout is None and et.is_array_type:
            layout = Layout(tuple(range(len(dims) - 1, -1, -1)))
        return Shape(et, tuple(dims), tuple(dyn), layout, None)

    def tuple_shape(self, *shapes):
        return Shape.tuple_of(shapes)

    def buffer_shape(self, tok, shape):
        if str(tok) != "b":
            raise _syntax(tok, f"unexpected '{tok}(' in a shape; buffer shapes are written b(shape)")
        return shape

    def dim(self, tok):
        return int(tok), False

    def bounded_dim(self, le, tok):
        return int(tok), True

    def unbounded_dim(self, q):
        return UNBOUNDED, True

    def layout(self, lbrace, *rest):
        m2m, attrs = [], {}
        for r in rest:
            if isinstance(r, Token):
                if r.type == "INT":
                    m2m.append(int(r))
            elif isinstance(r, tuple):
                attrs.setdefault(r[0], []).append(r[1])
        return _make_layout(tuple(m2m), attrs, lbrace)

    def layout_attr(self, name, *groups):
        return str(name), groups

    def index_type_attr(self, hash_, prim):
        return "#", str(prim)

    def pointer_type_attr(self, star, prim):
        return "*", str(prim)

    def split_arg(self, a, colon, b):
        return (int(a), int(b))

    def dlt(self, name, *mods):
        return str(name) + "".join(str(m) for m in mods)

    # ---- attributes
    def attribute(self, name, value):
        return str(name), value, name.start_pos

    def shaped_literal_attr(self, name, shape, value):
        return str(name), V.ShapedLiteral(shape, value), name.start_pos

    def int_(self, tok):
        return int(tok)

    def float_(self, tok):
        return float(tok)

    def nan(self, tok):
        return V.NanValue(str(tok))

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
        return V.Ref(str(tok))

    def ident(self, tok):
        return V.Ident(str(tok))

    def dxd(self, tok):
        return V.Dxd(tuple(int(x) for x in tok.split("x")))

    def pad(self, tok):
        return V.Pad(tuple(tuple(int(x) for x in d.split("_")) for d in re.split(r"x(?=-?\d)", str(tok))))

    def dim_labels(self, tok):
        return V.DimLabelsText(str(tok))

    def raw_braces(self, tok):
        return V.RawBraces(str(tok))

    def braced(self, *items):
        return V.Braced(tuple(i for i in items if not (isinstance(i, Token) and i.type == "COMMA")))

    def keyed(self, name, value):
        return V.Keyed(str(name), value)

    def mapping(self, key, colon, value):
        return V.Mapping(key, value)

    def program_shape(self, params, arrow, result):
        return V.ProgramShapeValue(params, result)

    def ellipsis(self, tok):
        return V.EllipsisValue()

    def inline_computation(self, *instructions):
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

    def iota_list(self, dims, le, reshape, *transpose):
        perm = tuple(transpose[1].items) if transpose else ()
        return V.Iota(tuple(dims.items), tuple(reshape.items), perm)


def _make_layout(m2m, attrs, tok) -> Layout:
    kw = {}
    for name, groups_list in attrs.items():
        groups = groups_list[0]
        if name == "T":
            kw["tiles"] = tuple(Tile(tuple(-1 if isinstance(x, Token) and x.type == "STAR" else int(x) for x in g))
                                for g in _split_groups(groups))
        elif name in ("L", "E", "S", "M"):
            field_name = {"L": "tail_padding_alignment", "E": "element_size_bits", "S": "memory_space",
                          "M": "dynamic_shape_metadata_prefix_bytes"}[name]
            kw[field_name] = int(groups[0])
        elif name == "#":
            kw["index_type"] = groups
        elif name == "*":
            kw["pointer_type"] = groups
        elif name == "D":
            kw["dim_level_types"] = tuple(str(x) for x in groups)
        elif name == "SC":
            kw["split_configs"] = tuple(g if isinstance(g, tuple) else (int(g),) for g in groups)
        elif name == "P":
            kw["physical_shape"] = groups[0]
        else:
            raise _syntax(tok, f"unknown layout attribute '{name}'")
    return Layout(m2m, **kw)


def _split_groups(groups):
    """Layout attr args arrive flattened: T(8,128)(2,1) -> [[8,128],[2,1]] is rebuilt from the tokens."""
    return [groups]


class _SyntaxInCallback(Exception):
    def __init__(self, offset: int, message: str):
        self.offset, self.message = offset, message


def _syntax(tok, message):
    return _SyntaxInCallback(tok.start_pos if isinstance(tok, Token) else -1, message)


# --------------------------------------------------------------------------- syntax errors

_TERMINAL_WORDS = {
    "NAME": "a %name", "IDENT": "a name", "COLON_NAME": "a parameter 'name:'", "ATTR_NAME": "an attribute 'name='",
    "INT": "an integer", "DECIMAL": "a number", "STRING": "a string", "PRIM": "an element type",
    "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "ARROW": "'->'", "LE": "'<='", "ROOT": "ROOT",
    "ENTRY": "ENTRY", "HLOMODULE": "HloModule", "LAYOUT_LBRACE": "a layout '{'", "$END": "end of input",
}


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    text = str(tok)
    if tok.type == "ATTR_NAME":
        text += "="
    elif tok.type == "NAME":
        text = "%" + text
    if len(text) > 40:
        text = text[:37] + "..."
    return f"'{text}'"


def _expected_text(expected) -> str:
    words = sorted({_TERMINAL_WORDS.get(e, e.lower()) for e in expected if not e.startswith("__")})
    if len(words) > 6:
        return ""
    return "; expected " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1])


def _syntax_diagnostic(exc: Exception, source: SourceFile) -> tuple[Diagnostic, int]:
    if isinstance(exc, HloError):
        d = exc.diagnostics[0]
        return d, d.loc.offset if d.loc else len(source.text)
    if isinstance(exc, _SyntaxInCallback):
        off = exc.offset if exc.offset >= 0 else 0
        return Diagnostic(exc.message, source.loc(off)), off
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        off = tok.start_pos if tok.type != "$END" and tok.start_pos is not None else len(source.text)
        msg = f"unexpected {_describe_token(tok)}{_expected_text(exc.expected)}"
        if tok.type == "ATTR_NAME" and "EQUAL" in exc.expected:
            msg += f" (write '{tok} = ...' with spaces around '=')"
        return Diagnostic(msg, source.loc(min(off, max(len(source.text) - 1, 0)))), off
    if isinstance(exc, UnexpectedEOF):
        off = max(len(source.text) - 1, 0)
        return Diagnostic("unexpected end of input" + _expected_text(exc.expected), source.loc(off)), off
    if isinstance(exc, UnexpectedInput):
        off = getattr(exc, "pos_in_stream", 0) or 0
        return Diagnostic(str(exc).splitlines()[0], source.loc(off)), off
    raise exc


def _blank_line(text: str, offset: int) -> str:
    """The text with the line holding `offset` replaced by spaces (offsets preserved)."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    return text[:start] + " " * (end - start) + text[end:]


def _parse_records(text: str, source: SourceFile, start: str = "start", raw_dict_values: bool = False,
                   max_errors: int = 50):
    """Records of the text, or raise HloError with every syntax error found."""
    lark = _lark()
    diagnostics: list[Diagnostic] = []
    seen_offsets: set[int] = set()
    while True:
        try:
            result = lark.parse(LexInput(text, source, raw_dict_values), start=start)
            break
        except VisitError as exc:
            err = exc.orig_exc
        except (UnexpectedInput, HloError) as exc:
            err = exc
        diag, offset = _syntax_diagnostic(err, source)
        if offset in seen_offsets or len(diagnostics) >= max_errors:
            break
        diagnostics.append(diag)
        seen_offsets.add(offset)
        blanked = _blank_line(text, min(offset, len(text) - 1)) if text else text
        if blanked == text:
            break
        text = blanked
    if diagnostics:
        raise HloError(diagnostics)
    return result


# --------------------------------------------------------------------------- building the IR

_GENERIC = ("sharding", "frontend_attributes", "statistics", "control-predecessors", "metadata",
            "backend_config", "origin", "parameter_replication")


class _Builder:
    def __init__(self, source: SourceFile):
        self.source = source
        self.sink = DiagnosticSink()
        self.module: Optional[Module] = None
        self.computations: dict[str, Computation] = {}
        self.anon_counter = 0

    def loc(self, offset: int) -> SourceLoc:
        return self.source.loc(max(offset, 0))

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
            cfg.frontend_attributes = _frontend(value)
        elif name == "origin_recovery_table":
            cfg.origin_recovery_table = value
        else:
            raise ValueError("unknown module attribute; allowed: is_scheduled, input_output_alias, buffer_donor, "
                             "alias_passthrough_params, entry_computation_layout, "
                             "allow_spmd_sharding_propagation_to_parameters, "
                             "allow_spmd_sharding_propagation_to_output, replica_count, num_partitions, "
                             "frontend_attributes")

    def uniquify_names(self) -> None:
        """XLA renames instructions that share a name across computations: first one wins."""
        uniquer = NameUniquer([c.name for c in self.module.computations])
        for comp in self.module.computations:
            for inst in comp.instructions:
                inst.name = uniquer.unique(inst.name)

    # ---- computations
    def computation(self, rec: CompRec, anonymous: bool = False) -> Optional[Computation]:
        if not anonymous and rec.name in self.computations:
            self.err(f"computation '{rec.name}' is defined twice", rec.pos,
                     "first definition is here", self.computations[rec.name].loc.offset)
            return None
        comp = Computation(rec.name, self.loc(rec.pos))
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
        for name, value, pos in rec.attrs:
            if name == "execution_thread" and isinstance(value, V.Str):
                comp.execution_thread = value.text
            else:
                self.err(f"unexpected computation attribute '{name}'; only execution_thread= is allowed", pos)
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
    def instruction(self, rec: InstrRec, comp: Computation, scope: dict, later: dict) -> Optional[Instruction]:
        operands = []
        ok = True
        for op in rec.operands:
            if isinstance(op, InstrRec):  # nested instruction: gets a generated name
                op.name = op.name or f"{op.opcode}.anon"
                inner = self.instruction(op, comp, scope, later)
                if inner is None:
                    ok = False
                else:
                    operands.append((inner, self.loc(op.pos)))
            elif isinstance(op, OperandRef):
                target = scope.get(op.name)
                if target is None:
                    ok = False
                    if op.name in later and later[op.name] > rec.pos:
                        self.err(f"'%{op.name}' is used before it is defined", op.pos,
                                 "defined here", later[op.name])
                    else:
                        self.err(f"use of undefined instruction '%{op.name}'", op.pos)
                else:
                    if op.shape is not None and target.shape is not None and not op.shape.compatible(target.shape):
                        self.err(f"operand '%{op.name}' is written with shape {op.shape} but has shape "
                                 f"{target.shape}", op.pos, "defined here", target.loc.offset)
                    operands.append((target, self.loc(op.pos)))
        if rec.name in scope:
            self.err(f"instruction name '%{rec.name}' is already defined in computation '{comp.name}'", rec.pos,
                     "previous definition is here", scope[rec.name].loc.offset)
            return None
        if not _is_sanitized(rec.name):
            self.err(f"illegal instruction name '{rec.name}'", rec.pos)
        opcode = rec.opcode
        sugar = split_async_sugar(opcode)
        if opcode not in OPCODES and sugar is None:
            self.err(f"unknown opcode '{opcode}'", rec.opcode_pos)
            return None
        inst = Instruction(rec.name, opcode, rec.shape, loc=self.loc(rec.pos))
        for target, loc in operands:
            inst.append_operand(target)
            inst.operand_locs.append(loc)
        if not self.leaf_operand(inst, rec):
            ok = False
        self.attributes(inst, rec, scope, sugar)
        if sugar is not None:
            self.expand_async_sugar(inst, sugar, comp)
        comp.add(inst)
        scope[inst.name] = inst
        if inst.shape is None and ok:
            self.infer_shape(inst)
        return inst

    def leaf_operand(self, inst: Instruction, rec: InstrRec) -> bool:
        """parameter(N) and constant(literal): the number/literal where operands go."""
        literals = [op for op in rec.operands if isinstance(op, LiteralOperand)]
        if inst.opcode == "parameter":
            if len(rec.operands) != 1 or not literals or type(literals[0].value) is not int:
                self.err("parameter takes one integer: parameter(N)", rec.opcode_pos)
                return False
            inst.attrs["parameter_number"] = literals[0].value
            if literals[0].value < 0:
                self.err("parameter number must be non-negative", rec.opcode_pos)
            return True
        if inst.opcode == "constant":
            if len(rec.operands) != 1 or not literals:
                self.err("constant takes one literal: constant(value)", rec.opcode_pos)
                return False
            if inst.shape is None:
                self.err("constant needs its shape written before the opcode", rec.opcode_pos)
                return False
            try:
                inst.attrs["literal"] = literal_from_value(inst.shape, literals[0].value)
            except ValueError as exc:
                self.err(f"bad literal for {inst.shape}: {exc}", rec.opcode_pos)
                return False
            return True
        if literals:
            self.err(f"'{inst.opcode}' takes instruction operands, not literal values", rec.opcode_pos)
            return False
        return True

    def attributes(self, inst: Instruction, rec: InstrRec, scope: dict, sugar) -> None:
        specs = wrapped_attr_specs(inst.opcode)
        seen: dict[str, int] = {}
        for name, value, pos in rec.attrs:
            if name in seen:
                self.err(f"attribute '{name}' is given more than once", pos, "first given here", seen[name])
                continue
            seen[name] = pos
            inst.attr_locs[name] = self.loc(pos)
            try:
                if name in _GENERIC:
                    self.generic_attribute(inst, name, value, scope)
                elif name in specs:
                    inst.attrs[name] = convert_attribute(specs[name], value, self.resolve_computation)
                elif name == "result_accuracy" and inst.opcode in OPCODES and OPCODES[inst.opcode].transcendental:
                    inst.attrs[name] = value
                else:
                    allowed = ", ".join(sorted(specs)) or "none besides the generic ones"
                    self.err(f"unexpected attribute '{name}' for opcode '{inst.opcode}'; allowed: {allowed}", pos)
            except ValueError as exc:
                self.err(f"attribute '{name}': {exc}", pos)
        for spec in specs.values():
            if spec.required and spec.name not in inst.attrs and spec.name not in seen:
                self.err(f"'{inst.opcode}' requires attribute '{spec.name}='", rec.opcode_pos)

    def generic_attribute(self, inst: Instruction, name: str, value, scope: dict) -> None:
        if name == "metadata":
            if not isinstance(value, V.RawBraces):
                raise ValueError("expected {op_name=\"...\" ...}")
            inst.metadata = Metadata(value.text)
        elif name == "frontend_attributes":
            inst.frontend_attributes = _frontend(value)
        elif name == "backend_config":
            if isinstance(value, V.Str):
                inst.backend_config = value.text
            elif isinstance(value, V.RawBraces):
                inst.backend_config = value.text
            else:
                raise ValueError("expected a string or a {json} dict")
        elif name == "control-predecessors":
            preds = []
            for item in _braced_items(value):
                ref = item.name if isinstance(item, V.Ref) else item.text if isinstance(item, V.Ident) else None
                if ref is None or ref not in scope:
                    raise ValueError(f"control predecessor '{ref}' is not an instruction defined earlier in "
                                     f"this computation")
                preds.append(scope[ref])
            inst.control_predecessors = preds
        elif name == "sharding":
            inst.sharding = value
        elif name == "statistics":
            inst.statistics = value
        elif name == "origin":
            inst.origin = value
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
        params = []
        for i, op in enumerate(inst.operands):
            p = Instruction(f"param_{i}", "parameter", op.shape, loc=inst.loc)
            p.attrs["parameter_number"] = i
            params.append(body.add(p))
        result_shape = None
        if inst.shape is not None and inst.shape.is_tuple and len(inst.shape.tuple_shapes) >= 2:
            result_shape = inst.shape.tuple_shapes[1]
        wrapped = Instruction(wrapped_op, wrapped_op, result_shape, params, wrapped_attrs, loc=inst.loc)
        wrapped.copy_generic_attributes_from(inst)
        body.add(wrapped)
        body.root = wrapped
        self.module.add_computation(body, before=None)
        self.computations[body.name] = body
        inst.attrs["calls"] = body

    def infer_shape(self, inst: Instruction) -> None:
        from .shape_inference import infer_shape
        try:
            inst.shape = infer_shape(inst)
        except ValueError as exc:
            self.err(f"cannot infer the shape of '{inst.opcode}': {exc}", inst.loc.offset)
        except HloError as exc:
            self.sink.extend(exc)


def _is_sanitized(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name)) and (
        not name.startswith("__") or name.startswith("__xla_"))


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _positive_int(v) -> int:
    if type(v) is not int or v < 1:
        raise ValueError("expected a positive integer")
    return v


def _braced_items(v):
    if not isinstance(v, V.Braced):
        raise ValueError("expected a list in braces")
    return v.items


def _alias_entry(item) -> AliasEntry:
    if not (isinstance(item, V.Mapping) and isinstance(item.value, V.Paren) and len(item.value.items) in (2, 3)):
        raise ValueError("expected entries like {0}: (0, {}, may-alias)")
    items = item.value.items
    kind = items[2].text if len(items) == 3 and isinstance(items[2], V.Ident) else "may-alias"
    if kind not in ("may-alias", "must-alias"):
        raise ValueError(f"alias kind must be may-alias or must-alias, not '{kind}'")
    if type(items[0]) is not int:
        raise ValueError("expected a parameter number")
    return AliasEntry(to_shape_index(item.key), items[0], to_shape_index(items[1]), kind)


def _donor(item):
    if not (isinstance(item, V.Paren) and len(item.items) == 2 and type(item.items[0]) is int):
        raise ValueError("expected entries like (0, {})")
    return item.items[0], to_shape_index(item.items[1])


def _frontend(value) -> FrontendAttributes:
    if not isinstance(value, V.RawBraces):
        raise ValueError("expected {key=\"value\", ...}")
    return FrontendAttributes(value.text)


# --------------------------------------------------------------------------- public API


def parse_module(text: str, filename: str = "<string>") -> Module:
    """Parse HLO text into a Module; raises HloError listing every error found."""
    source = SourceFile(filename, text)
    if not text.strip():
        raise error("empty input: expected an HloModule", source.loc(0))
    header, comps = _parse_records(text, source)
    builder = _Builder(source)
    module = builder.build(header, comps)
    builder.sink.raise_if_any()
    return module


def parse_braced_fields(raw: str, raw_dict_values: bool = False) -> dict:
    """Fields of a lazily kept `{key=value ...}` text (metadata, frontend attributes)."""
    source = SourceFile("<attribute>", raw)
    braced = _parse_records(raw, source, start="braced", raw_dict_values=raw_dict_values)
    out = {}
    for item in braced.items:
        if isinstance(item, V.Keyed):
            v = item.value
            if isinstance(v, V.Str):
                v = v.text
            elif isinstance(v, V.Braced):
                v = tuple(v.items)
            out[item.key] = v
    return out
