"""The HLO lexer: the grammar's terminals compiled into one regular expression.

The terminal patterns are those of grammar/hlo.lark; this module only fixes the
order in which they are tried (XLA's lexer order: `%name` and glued `name=` /
`name:` before keywords and numbers, DECIMAL before DIM_LABELS before DXD before
PAD before INT) and implements the context rules of XLA's hand-written lexer:

* LAYOUT_LBRACE: `{` right after a shape's `]` opens a layout only when the next
  token is an integer or `:` (so `-> f32[4] {` starts a computation body);
* BRACED: the values of `metadata=`, `frontend_attributes=` and a JSON
  `backend_config=` are captured verbatim by brace matching (strings respected);
  they are parsed lazily, which keeps parsing of large dumps fast;
* IOTA_T: the `T` glued to `]` in iota device lists `[2,2]<=[4]T(1,0)`;

and three fast paths that return one token for a common multi-token form
(each is a terminal of the grammar that stands for what the general rules
would parse, so the syntax is unchanged):

* SHAPE_TEXT `f32[8,128]{1,0}`: integer dims and a plain layout glued to `]`
  (falls back to PRIM `[` ... when the layout has attributes or is not glued);
* OPERAND_NAMES `(%a, %b, /*index=5*/%c)`: right after an opcode;
* LITERAL_TEXT `({ {1, 2.5}, {3, -0} })`: a constant's all-numeric literal right
  after `constant`; its token value is the nested list of numbers the general
  rules would give (it falls back to the general rules unless every piece is an
  INT or DECIMAL and the braces balance);
* INT_LIST `{0,1}`: right after an attribute name.

Whitespace, `/* */` and `//` comments after a token are consumed by the same
regular-expression match as the token (one match per token).
"""
from __future__ import annotations

import re
from typing import Iterator, Optional

from lark import Token
from lark.lexer import Lexer

from ..diagnostics import HloError, SourceFile, error
from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES
from ..textutil import matching_brace_end
from ..values import NEG_ZERO

# Terminals in the order they are tried at each position.
TERMINAL_ORDER = ("NAME", "ATTR_NAME", "COLON_NAME", "SHAPE_TEXT", "MESH_GROUPS", "STRING", "DIM_LABELS", "DECIMAL", "NAN",
                  "NEG_INF", "DXD", "PAD", "INT", "IDENT", "ARROW", "LE", "ELLIPSIS")
# Terminals recognised only in a context (see tokenize).
CONTEXT_TERMINALS = ("OPERAND_NAMES", "INT_LIST", "LITERAL_TEXT")
PUNCTUATION = {"=": "EQUAL", ":": "COLON", ",": "COMMA", "?": "QMARK", "*": "STAR", "#": "HASH", "+": "PLUS",
               "~": "TILDE", "(": "LPAR", ")": "RPAR", "{": "LBRACE", "}": "RBRACE", "[": "LSQB", "]": "RSQB"}
KEYWORDS = {"HloModule": "HLOMODULE", "ENTRY": "ENTRY", "ROOT": "ROOT", "true": "TRUE", "false": "FALSE",
            "inf": "INF", "FileNames": "STACK_TABLE_NAME", "FunctionNames": "STACK_TABLE_NAME",
            "FileLocations": "STACK_TABLE_NAME", "StackFrames": "STACK_TABLE_NAME"}
KEYWORDS.update({name: "PRIM" for name in PRIMITIVE_TYPES})

# Brackets may nest this deep (deeper texts would exhaust Python's recursion in later stages).
MAX_NESTING = 100
_OPENERS = {"LBRACE": 1, "LPAR": 1, "LSQB": 1, "LAYOUT_LBRACE": 1, "RBRACE": -1, "RPAR": -1, "RSQB": -1}

# Attributes whose brace values are captured verbatim.
LAZY_ATTRIBUTES = frozenset({"metadata", "frontend_attributes", "backend_config"})

_IDENT_TAIL = r"(?![A-Za-z0-9_.\-])"
_SKIP_BODY = r"(?:\s+|/\*.*?\*/|//[^\n\r]*)"
_SKIP = re.compile(_SKIP_BODY + "+", re.S)


def build_token_regex(patterns: dict[str, str]) -> re.Pattern:
    """One alternation of the grammar's terminal patterns (in TERMINAL_ORDER), then skipped space."""
    parts = []
    for name in TERMINAL_ORDER:
        pattern = patterns[name]
        if name in ("NAN", "NEG_INF"):
            pattern = f"(?:{pattern}){_IDENT_TAIL}"
        parts.append(f"(?P<{name}>{pattern})")
    parts.append(r"(?P<PUNCT>[=:,?*#+~(){}\[\]])")
    return re.compile("(?:" + "|".join(parts) + ")" + _SKIP_BODY + "*", re.S)


def build_context_regexes(patterns: dict[str, str]) -> dict[str, re.Pattern]:
    return {name: re.compile(patterns[name]) for name in CONTEXT_TERMINALS}


class Tok(Token):
    """A lark Token with only type, value and start_pos set (cheap to create)."""
    __slots__ = ()


_str_new = str.__new__


def make_token(kind: str, value: str, pos: int) -> Tok:
    tok = _str_new(Tok, value)
    tok.type = kind
    tok.value = value
    tok.start_pos = pos
    return tok


class LexInput:
    """What the parser hands the lexer: the text plus per-parse lexing options."""
    __slots__ = ("text", "source", "raw_dict_values")

    def __init__(self, text: str, source: SourceFile, raw_dict_values: bool = False):
        self.text, self.source, self.raw_dict_values = text, source, raw_dict_values


class HloLexer(Lexer):
    """Lark lexer producing the grammar's terminals; Lark hands it a LexInput."""

    __future_interface__ = 2
    token_regex: re.Pattern = None       # set by hlo.text.grammar from the grammar's terminals
    context_regexes: dict = None

    def __init__(self, lexer_conf):
        pass

    def lex(self, lexer_state, parser_state) -> Iterator[Token]:
        inp: LexInput = lexer_state.text
        return tokenize(inp.text, inp.raw_dict_values, inp.source)


def tokenize(text: str, raw_dict_values: bool, source: SourceFile, runs: Optional[dict] = None) -> Iterator[Tok]:
    """The tokens of text (raises HloError at the first character no terminal matches).

    `runs` (hlo/text/fastpath.py): offset -> (end, records) of runs of ordinary instruction
    lines, each yielded as one INSTRUCTION_LINES token whose value is the records."""
    match = HloLexer.token_regex.match
    operand_names = HloLexer.context_regexes["OPERAND_NAMES"].match
    literal_text = HloLexer.context_regexes["LITERAL_TEXT"].match
    int_list = HloLexer.context_regexes["INT_LIST"].match
    flat_braces = _FLAT_BRACES.match
    keywords = KEYWORDS
    punct = PUNCTUATION
    prims = PRIMITIVE_TYPES
    new = make_token
    end = len(text)
    first = 1 if text.startswith("\ufeff") else 0  # a byte-order mark leads some files written on Windows
    m = _SKIP.match(text, first)
    pos = m.end() if m else first
    prev_type = None
    prev_end = -1
    prev_value = ""
    depth = 0
    openers = _OPENERS
    runs = runs or {}
    while pos < end:
        if pos in runs:
            run_end, records = runs[pos]
            tok = new("INSTRUCTION_LINES", "", pos)
            tok.value = records
            prev_type, prev_end, prev_value = "INSTRUCTION_LINES", run_end, ""
            pos = skip_space(text, run_end)
            yield tok
            continue
        m = match(text, pos)
        if m is None:
            raise _lex_error(source, pos, _describe_bad_char(text, pos))
        kind = m.lastgroup
        start = pos
        value = m.group(kind)
        tok_end = start + len(value)
        pos = m.end()
        if kind == "NAME":
            value = value[1:]
        elif kind == "PUNCT":
            kind = punct[value]
            if kind == "LPAR":
                if prev_type == "IDENT":
                    fast = operand_names(text, start)
                    if fast:
                        kind, value, tok_end = "OPERAND_NAMES", fast.group(), fast.end()
                        pos = skip_space(text, tok_end)
                    elif prev_value == Op.CONSTANT:
                        fast = literal_text(text, start)
                        structure = literal_structure(fast.group()) if fast else None
                        if structure is not None:
                            tok_end = fast.end()
                            prev_type, prev_end, prev_value = "LITERAL_TEXT", tok_end, ""
                            tok = new("LITERAL_TEXT", fast.group(), start)
                            tok.value = structure
                            pos = skip_space(text, tok_end)
                            yield tok
                            continue
            elif kind == "LBRACE":
                if prev_type == "RSQB" and _opens_layout(text, start + 1):
                    kind = "LAYOUT_LBRACE"
                elif prev_type == "ATTR_NAME":
                    if raw_dict_values or prev_value in LAZY_ATTRIBUTES:
                        flat = flat_braces(text, start)  # the usual metadata={...}: no nested braces
                        close = flat.end() if flat else _matching_brace(text, start, source)
                        kind, value, tok_end = "BRACED", text[start:close], close
                        pos = skip_space(text, close)
                    else:
                        fast = int_list(text, start)
                        if fast:
                            kind, value, tok_end = "INT_LIST", fast.group(), fast.end()
                            pos = skip_space(text, tok_end)
        elif kind == "SHAPE_TEXT":
            word = value[:value.index("[")]
            if word not in prims or ("{" not in value and _layout_follows(text, start + len(value))):
                # Not a plain shape: lex the word alone and continue at '['.
                value = word
                kind = keywords.get(word, "IDENT")
                pos = tok_end = start + len(word)
        elif kind == "IDENT":
            if value == "T" and prev_type == "RSQB" and prev_end == start and text.startswith("(", start + 1):
                kind = "IOTA_T"
            else:
                kind = keywords.get(value, "IDENT")
        elif kind == "ATTR_NAME" or kind == "COLON_NAME":
            value = value[:-1]
        prev_type, prev_end, prev_value = kind, tok_end, value
        if kind in openers:
            depth += openers[kind]
            if depth > MAX_NESTING:
                raise _lex_error(source, start, f"brackets nested more than {MAX_NESTING} levels deep")
        yield new(kind, value, start)


_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_PIECE = re.compile(r"[{}]|[^\s,{}()]+")
_NUMBER = re.compile(r"-?[0-9]+|-?([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|-?[0-9]+[eE][+-]?[0-9]+")


def int_value(text: str) -> int:
    """An INT token's value; `-0` is V.NEG_ZERO so that float literals keep the sign."""
    value = int(text)
    if value == 0 and text[0] == "-":
        return NEG_ZERO
    return value


def literal_structure(text: str):
    """The nested lists of numbers of a LITERAL_TEXT `( {...} )`, or None if it is not one."""
    body = _COMMENT.sub(" ", text[1:-1])
    stack: list = [[]]
    fullmatch = _NUMBER.fullmatch
    for piece in _PIECE.findall(body):
        if piece == "{":
            if len(stack) > MAX_NESTING:
                return None
            inner: list = []
            stack[-1].append(inner)
            stack.append(inner)
        elif piece == "}":
            if len(stack) == 1:
                return None
            stack.pop()
        elif fullmatch(piece):
            if "." in piece or "e" in piece or "E" in piece:
                stack[-1].append(float(piece))
            else:
                stack[-1].append(int_value(piece))
        else:
            return None
    if len(stack) != 1 or len(stack[0]) != 1 or type(stack[0][0]) is not list:
        return None
    return stack[0][0]


def skip_space(text: str, pos: int) -> int:
    """The offset after the spaces and comments at pos."""
    m = _SKIP.match(text, pos)
    return m.end() if m else pos


def _layout_follows(text: str, pos: int) -> bool:
    """True if a layout `{` (see _opens_layout) follows the shape that ends at pos."""
    pos = skip_space(text, pos)
    return text.startswith("{", pos) and _opens_layout(text, pos + 1)


def _opens_layout(text: str, pos: int) -> bool:
    """True if the `{` before pos is followed by an integer or ':' (so it starts a layout)."""
    pos = skip_space(text, pos)
    return pos < len(text) and (text[pos].isdigit() or text[pos] == ":")


_FLAT_BRACES = re.compile(r'\{(?:[^{}"]++|"(?:\\.|[^"\\])*+")*+\}')


def _describe_bad_char(text: str, pos: int) -> str:
    ch = text[pos]
    if ch == '"' or ch == "'":
        return "unterminated string"
    if text.startswith("/*", pos):
        return "unterminated /* comment"
    if ch == "/":
        return "unexpected '/' (comments are /* ... */ or // ...)"
    if ch == "\0":
        return "unexpected NUL byte"
    if not ch.isprintable() or ch.isspace():
        return f"unexpected character {ch!r} (U+{ord(ch):04X})"
    return f"unexpected character '{ch}'"


def _lex_error(source, offset: int, message: str) -> HloError:
    return error(message, source.loc(offset) if source is not None else None)


def _matching_brace(text: str, start: int, source) -> int:
    """Offset just past the `}` matching the `{` at start (a located error if there is none)."""
    end = matching_brace_end(text, start)
    if end == -1:
        raise _lex_error(source, start, "unterminated '{': no matching '}'")
    if end < -1:
        raise _lex_error(source, -2 - end, "unterminated string")
    return end
