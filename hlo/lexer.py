"""The HLO lexer: the grammar's terminals compiled into one regular expression.

The terminal patterns are those of grammar/hlo.lark; this module only fixes the
order in which they are tried (XLA's lexer order: glued `name:`/`name=` before
keywords and numbers, DECIMAL before DIM_LABELS before DXD before PAD before INT)
and implements three context rules of XLA's hand-written lexer:

* LAYOUT_LBRACE: `{` right after a shape's `]` opens a layout only when the next
  token is an integer or `:` (so `-> f32[4] {` starts a computation body);
* BRACED: the values of `metadata=`, `frontend_attributes=` and a JSON
  `backend_config=` are captured verbatim by brace matching (strings respected);
  they are parsed lazily, which keeps parsing of large dumps fast;
* IOTA_T: the `T` glued to `]` in iota device lists `[2,2]<=[4]T(1,0)`.
"""
from __future__ import annotations

import re
from typing import Iterator

from lark import Token
from lark.lexer import Lexer

from .diagnostics import HloError, SourceFile, error
from .shapes import PRIMITIVE_TYPES

# Terminals in the order they are tried at each position.
TERMINAL_ORDER = ("STRING", "NAME", "COLON_NAME", "ATTR_NAME", "DIM_LABELS", "DECIMAL", "NAN", "NEG_INF",
                  "DXD", "PAD", "INT", "IDENT", "ARROW", "LE", "ELLIPSIS")
PUNCTUATION = {"=": "EQUAL", ":": "COLON", ",": "COMMA", "?": "QMARK", "*": "STAR", "#": "HASH", "+": "PLUS",
               "~": "TILDE", "(": "LPAR", ")": "RPAR", "{": "LBRACE", "}": "RBRACE", "[": "LSQB", "]": "RSQB"}
KEYWORDS = {"HloModule": "HLOMODULE", "ENTRY": "ENTRY", "ROOT": "ROOT", "true": "TRUE", "false": "FALSE",
            "inf": "INF", "FileNames": "STACK_TABLE_NAME", "FunctionNames": "STACK_TABLE_NAME",
            "FileLocations": "STACK_TABLE_NAME", "StackFrames": "STACK_TABLE_NAME"}
KEYWORDS.update({name: "PRIM" for name in PRIMITIVE_TYPES})

# Attributes whose brace values are captured verbatim.
LAZY_ATTRIBUTES = frozenset({"metadata", "frontend_attributes", "backend_config"})

_IDENT_TAIL = r"(?![A-Za-z0-9_.\-])"
_SKIP = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)+", re.S)


def build_token_regex(patterns: dict[str, str]) -> re.Pattern:
    """One alternation of the grammar's terminal patterns, in TERMINAL_ORDER."""
    parts = []
    for name in TERMINAL_ORDER:
        pattern = patterns[name]
        if name in ("NAN", "NEG_INF", "DXD", "PAD", "INT", "DECIMAL"):
            pattern = f"(?:{pattern}){_IDENT_TAIL}" if name in ("NAN", "NEG_INF") else f"(?:{pattern})"
        parts.append(f"(?P<{name}>{pattern})")
    parts.append(r"(?P<PUNCT>[=:,?*#+~(){}\[\]])")
    return re.compile("|".join(parts))


class LexInput:
    """What the parser hands the lexer: the text plus per-parse lexing options."""
    __slots__ = ("text", "source", "raw_dict_values")

    def __init__(self, text: str, source: SourceFile, raw_dict_values: bool = False):
        self.text, self.source, self.raw_dict_values = text, source, raw_dict_values


class HloLexer(Lexer):
    """Lark lexer producing the grammar's terminals; Lark hands it a LexInput."""

    __future_interface__ = 2
    token_regex: re.Pattern = None  # set by the parser from the grammar's terminals

    def __init__(self, lexer_conf):
        pass

    def lex(self, lexer_state, parser_state) -> Iterator[Token]:
        inp: LexInput = lexer_state.text
        return tokenize(inp.text, self.token_regex, inp.raw_dict_values, inp.source)


def tokenize(text: str, token_regex: re.Pattern, raw_dict_values: bool, source: SourceFile) -> Iterator[Token]:
    pos, end = 0, len(text)
    match = token_regex.match
    skip = _SKIP.match
    prev_type = None
    prev_end = -1
    prev_value = ""
    keywords = KEYWORDS
    punct = PUNCTUATION
    while True:
        m = skip(text, pos)
        if m:
            if text.startswith("/*", m.end()):
                raise _lex_error(source, m.end(), "unterminated /* comment")
            pos = m.end()
        elif text.startswith("/*", pos):
            raise _lex_error(source, pos, "unterminated /* comment")
        if pos >= end:
            return
        m = match(text, pos)
        if m is None:
            raise _lex_error(source, pos, _describe_bad_char(text, pos))
        kind = m.lastgroup
        value = m.group()
        start = pos
        pos = m.end()
        if kind == "IDENT":
            if value == "T" and prev_type == "RSQB" and prev_end == start and text.startswith("(", pos):
                kind = "IOTA_T"
            else:
                kind = keywords.get(value, "IDENT")
        elif kind == "PUNCT":
            kind = punct[value]
            if kind == "LBRACE":
                if prev_type == "RSQB" and _opens_layout(text, pos):
                    kind = "LAYOUT_LBRACE"
                elif prev_type == "ATTR_NAME" and (raw_dict_values or prev_value in LAZY_ATTRIBUTES):
                    close = _matching_brace(text, start, source)
                    yield Token("BRACED", text[start:close], start)
                    pos = close
                    prev_type, prev_end = "BRACED", pos
                    continue
        elif kind == "ATTR_NAME":
            value = value[:-1]
        elif kind == "COLON_NAME":
            value = value[:-1]
        elif kind == "NAME":
            value = value[1:]
        prev_type, prev_end, prev_value = kind, pos, value
        yield Token(kind, value, start)


def _opens_layout(text: str, pos: int) -> bool:
    m = _SKIP.match(text, pos)
    if m:
        pos = m.end()
    return pos < len(text) and (text[pos].isdigit() or text[pos] == ":")


def _matching_brace(text: str, start: int, source: SourceFile) -> int:
    """Offset just past the `}` matching the `{` at start; braces in strings are ignored."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        i += 1
    raise _lex_error(source, start, "unterminated '{': no matching '}'")


def _describe_bad_char(text: str, pos: int) -> str:
    ch = text[pos]
    if ch == '"' or ch == "'":
        return "unterminated string"
    if ch == "/":
        return "unexpected '/' (comments are /* ... */ or // ...)"
    if ch == "\0":
        return "unexpected NUL byte"
    return f"unexpected character {ch!r}"


def _lex_error(source: SourceFile, offset: int, message: str) -> HloError:
    return error(message, source.loc(offset) if source is not None else None)
