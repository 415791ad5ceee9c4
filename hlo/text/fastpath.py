"""The line fast path: ordinary instruction lines straight to records, without the LALR parse.

Large dumps are mostly lines such as

    %add.3 = f32[64,32]{1,0} add(%x, %y), metadata={op_name="jit(f)/add" source_line=12}

`instruction_runs(text)` finds them with one regular expression and builds, for each,
the InstrRec the grammar's callbacks would build (with the same value functions of
records.py and the lexer's own token patterns deciding what each word is); the lexer
hands a run of consecutive such lines to the LALR driver as one INSTRUCTION_LINES token
(grammar/hlo.lark). The two commonest pieces of a line skip the general readers: operands
written `(%a, %b)` are split in place, and a last `, metadata={...}` is found from the line's
end and checked to be the lexer's BRACED by string scans (tests/parser/test_fast_forms.py).
A line that is not exactly of this form (a tuple shape, a comment, a
value the fast path does not know) is left to the grammar, and so is any text whose
fast parse fails: recovery.py parses it again without the fast path, so that every
diagnostic and every recovery step is the grammar's. tests/parser/test_fastpath.py
checks that both parses give identical records on every corpus line and on fuzzed lines.
"""
from __future__ import annotations

import re
from typing import Callable, Optional
from ..opcodes import OPCODES, Op
from ..shapes import PRIMITIVE_TYPES
from .lexer import KEYWORDS, LAZY_ATTRIBUTES, HloLexer, literal_structure
from .records import (_NAME_IN_LIST, InstrRec, LiteralOperand, OperandRef, SyntaxInCallback, TOKEN_VALUES,
                      _OperandList, int_list_value, shape_from_text)
from .. import values as V

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_STRING = r'"(?:[^"\\\n]++|\\.)*+"'
_FLAT_BRACES = rf'\{{(?:[^{{}}"\n]++|{_STRING})*+\}}'

# One instruction on one line: ROOT? name = shape opcode(operands) , attributes (read by _ATTRIBUTE);
# operands written `(%a, %b)` (the common form) have a group of their own
_LINE = re.compile(rf"""
    ^[ \t]*
    (?P<root>ROOT[ \t]+)?
    (?:%(?P<name>{_NAME})[ \t]*|(?P<bare>{_NAME})[ \t]+)=[ \t]*
    (?P<shape>[a-z][a-z0-9]*\[(?:[0-9]+(?:,[0-9]+)*)?\](?:\{{[0-9]+(?:,[0-9]+)*\}})?)[ \t]+
    (?P<opcode>{_NAME})
    (?P<operands>(?P<names>\(%{_NAME}(?:,[ ]%{_NAME})*\))|\((?:[^()\n"'/]++|/\*index=[0-9]+\*/)*+\))
    (?P<attrs>[ \t]*,[^\n]*)?$""", re.M | re.X)
_END = r"(?=[ \t]*(?:,|\r?$))"
# `, name=value`: the group that matches says what the value is (an atom is classified by the lexer)
_ATTRIBUTE = re.compile(rf"""[ \t]*,[ \t]*({_NAME})=(?:
      (?P<ints>\{{[ \t]*(?:-?[0-9]+(?:[ \t]*,[ \t]*-?[0-9]+)*)?[ \t]*\}})
    | (?P<braces>{_FLAT_BRACES})
    | (?P<string>{_STRING})
    | (?P<word>{_NAME}){_END}
    | (?P<ref>%{_NAME}){_END}
    | (?P<int>-?[0-9]+){_END}
    | (?P<atom>[^,{{}}()\[\]"\s]++))""", re.X)
_METADATA = ", metadata={"
_METADATA_BRACE = len(_METADATA) - 1  # where its '{' is
_METADATA_VALUE = re.compile(rf"({_FLAT_BRACES})[ \t]*\r?")  # the value of a last `, metadata=`
_TRAILING_SPACE = re.compile(r"[ \t]*\r?")
_WORD = re.compile(_NAME)
_INT = re.compile(r"-?[0-9]+")
_OPERAND_ITEM = re.compile(r"[ \t]*(?:/\*index=[0-9]+\*/[ \t]*)?([^,\s/]+)[ \t]*(,|$)")
_SLICES = re.compile(r"\{\[(-?[0-9]+):(-?[0-9]+)(?::(-?[0-9]+))?\](?:, \[(-?[0-9]+):(-?[0-9]+)(?::(-?[0-9]+))?\])*\}")
_RANGE = re.compile(r"\[(-?[0-9]+):(-?[0-9]+)(?::(-?[0-9]+))?\]")
_KEYWORD_VALUES = ("TRUE", "FALSE", "INF")
_SHARED_LITERAL_CHARS = 256
_KINDS_READ_ALIKE = ("ints", "braces", "string", "word", "ref", "int")  # value() does not look at the position


class _NotOrdinary(Exception):
    """The line is left to the grammar."""


def instruction_runs(text: str, item: Optional[Callable] = None) -> dict[int, tuple[int, list]]:
    """Runs of consecutive ordinary instruction lines: offset of the first one's first token ->
    (offset just after the last one, their records, or `item(match, record, end)` of each line)."""
    runs: dict[int, tuple[int, list]] = {}
    run_start, run_end, records = -1, -1, []
    for m, rec, end in _ordinary_lines(text):
        body = m.start(1) if rec.is_root else rec.pos
        made = rec if item is None else item(m, rec, end)
        if records and text[run_end:body].isspace():
            records.append(made)
        else:
            if records:
                runs[run_start] = (run_end, records)
            run_start, records = body, [made]
        run_end = end
    if records:
        runs[run_start] = (run_end, records)
    return runs


# The language server reads each text twice (parse, then its name index): it asks to keep the lines
# of the last text read (a tool reading a file once does not keep them).
_keep_last = False
_last_read: tuple = (None, ())  # (text, its ordinary lines)
_KEEP_ABOVE = 100_000           # characters: small texts (the server's one-line checks) are not kept


def keep_last_text(keep: bool) -> None:
    """Whether the ordinary lines of the last text read are kept for a second reading of it."""
    global _keep_last, _last_read
    _keep_last, _last_read = keep, (None, ())


def _ordinary_lines(text: str) -> list[tuple[re.Match, InstrRec, int]]:
    """(match, record, end of the last token) of each ordinary instruction line of the text."""
    last_text, lines = _last_read
    if last_text is text:
        return lines
    line = _LineReader(text).line
    lines = []
    append = lines.append
    for m in _LINE.finditer(text):
        try:
            append(line(m))
        except (_NotOrdinary, SyntaxInCallback, ValueError):
            continue
    if _keep_last and len(text) > _KEEP_ABOVE:
        globals()["_last_read"] = (text, lines)
    return lines


def attribute_spans(text: str, start: int, end: int):
    """(name, name start, value start, value end) of each `, name=value` of an ordinary line's attributes."""
    for am in _ATTRIBUTE.finditer(text, start, end):
        yield am.group(1), am.start(1), am.start(am.lastgroup), am.end()


_SHAPES: dict = {}  # shape text -> Shape: dumps repeat a few shapes on every line
_OPCODE_WORDS = frozenset(name for name in OPCODES if name not in KEYWORDS and name != "nan")  # _identifier() passes


def _shape(text: str):
    """The Shape of a shape written on an ordinary line (kept in _SHAPES)."""
    if text[:text.index("[")] not in PRIMITIVE_TYPES:  # the lexer would read the word alone
        raise _NotOrdinary
    shape = shape_from_text(text)
    if len(_SHAPES) < 4096:
        _SHAPES[text] = shape
    return shape


def _identifier(word: str) -> None:
    """A name or opcode the lexer reads as IDENT: not a keyword, not `nan` (checked by the lexer's
    order of terminals: nothing tried before IDENT matches a word followed by space, '=' or '(')."""
    if word in KEYWORDS or word == "nan":
        raise _NotOrdinary


class _LineReader:
    """Records of ordinary instruction lines, each word classified by the lexer's own patterns."""

    def __init__(self, text: str):
        self.text = text
        self.token = HloLexer.token_regex.match
        context = HloLexer.context_regexes
        self.operand_names = context["OPERAND_NAMES"].match
        self.literal_text = context["LITERAL_TEXT"].match
        # kind -> {written: value} for the values that do not depend on where they are written
        # (they are immutable, and records are shared anyway): lines repeat dimensions={1}, kind=kLoop ...
        self.known_values: dict[str, dict] = {kind: {} for kind in _KINDS_READ_ALIKE}
        self.literals: dict[str, list] = {}

    def line(self, m: re.Match) -> tuple[re.Match, InstrRec, int]:
        """The line's match, its record and where its last token ends."""
        root, name, bare, shape_text, opcode, operand_text, names, attributes = m.groups()
        if name is not None:
            pos = m.start(2) - 1
        else:
            name, pos = bare, m.start(3)
            _identifier(name)
        shape = _SHAPES.get(shape_text)
        if shape is None:
            shape = _shape(shape_text)
        if opcode not in _OPCODE_WORDS:
            _identifier(opcode)
        opcode_pos = m.start(5)
        start = opcode_pos + len(opcode)  # the '('
        end = start + len(operand_text)
        if names is not None:
            operands = _plain_operands(names, start)
        else:
            operands = self.operands(opcode, start, end)
        attrs = ()
        if attributes is not None:
            value_at = end + _METADATA_BRACE
            value = _braces_to_end(self.text, value_at, m.end()) if attributes.startswith(_METADATA) else None
            if value is not None:  # `, metadata={...}` alone (what attributes() reads, without its search)
                attrs = [("metadata", V.RawBraces(value, value_at), end + 2)]
                end = value_at + len(value)
            else:
                attrs, end = self.attributes(end, m.end())
        return m, InstrRec(root is not None, name, pos, shape, opcode, opcode_pos, operands, attrs), end

    # -- operands
    def operands(self, opcode: str, start: int, end: int) -> list:
        text = self.text
        fast = self.operand_names(text, start)
        if fast is not None:  # the lexer's OPERAND_NAMES (records._operand_list reads it the same way)
            if fast.end() != end:
                raise _NotOrdinary
            return [OperandRef(n.group(1), n.start(), None) for n in _NAME_IN_LIST.finditer(text, start, end)]
        if opcode == Op.CONSTANT:
            fast = self.literal_text(text, start)
            if fast is not None:
                if fast.end() != end:
                    raise _NotOrdinary
                return [LiteralOperand(self.literal(fast.group()))]
        inner = text[start + 1:end - 1]
        if not inner.strip(" \t"):
            return _OperandList()
        return self.operand_sequence(start + 1, end - 1)

    def literal(self, written: str):
        """literal_structure() of a constant's LITERAL_TEXT, once per text for short ones (dumps repeat
        small constants; records are never mutated, so lines may share it)."""
        structure = self.literals.get(written)
        if structure is None:
            structure = literal_structure(written)
            if structure is None:
                raise _NotOrdinary
            if len(written) <= _SHARED_LITERAL_CHARS:
                self.literals[written] = structure
        return structure

    def operand_sequence(self, start: int, end: int) -> _OperandList:
        """`a, %b, 1`: names and numbers (what the grammar's operand_seq makes of them)."""
        text = self.text
        out = _OperandList()
        pos = start
        while True:
            item = _OPERAND_ITEM.match(text, pos, end)
            if item is None:
                raise _NotOrdinary
            out.append(self.operand(item.group(1), item.start(1)))
            pos = item.end()
            if item.group(2) == "":  # the last operand
                return out
            if pos == end:  # a ',' with nothing after it
                raise _NotOrdinary

    def operand(self, word: str, pos: int):
        if word[0] == "%" and _WORD.fullmatch(word, 1):
            return OperandRef(word[1:], pos, None)
        if _WORD.fullmatch(word):
            keyword = KEYWORDS.get(word)
            if keyword is None and word != "nan":
                return OperandRef(word, pos, None)
            if keyword == "TRUE" or keyword == "FALSE":
                return LiteralOperand(TOKEN_VALUES[keyword](word))
            raise _NotOrdinary
        kind = self.kind(word, pos)
        if kind == "INT" or kind == "DECIMAL":
            return LiteralOperand(TOKEN_VALUES[kind](word))
        raise _NotOrdinary

    def kind(self, word: str, pos: int) -> str:
        """The terminal the lexer makes of `word` at `pos` (it must take the whole word)."""
        tm = self.token(self.text, pos)
        if tm is None or tm.group(tm.lastgroup) != word:
            raise _NotOrdinary
        return tm.lastgroup

    # -- attributes
    def attributes(self, start: int, end: int) -> tuple[list, int]:
        """The attribute records of `, a=1, b={...}` up to `end` (the line's end), and where the
        last one ends. A last `, metadata={...}` (most lines of a dump end so) is found from the end."""
        text = self.text
        last = text.rfind(_METADATA, start, end)
        if last >= 0:
            value_at = last + _METADATA_BRACE
            value = _braces_to_end(text, value_at, end)
            if value is not None:  # (what _ATTRIBUTE reads there, if the attributes before end at `last`)
                out, pos = self.attribute_list(start, last) if last > start else ([], last)
                if pos == last:
                    out.append(("metadata", V.RawBraces(value, value_at), last + 2))
                    return out, value_at + len(value)
        out, pos = self.attribute_list(start, end)
        if pos != end and _TRAILING_SPACE.match(text, pos, end).end() != end:
            raise _NotOrdinary
        return out, pos

    def attribute_list(self, start: int, end: int) -> tuple[list, int]:
        """The attribute records that follow one another from `start`, and where the last one ends."""
        out = []
        pos = start
        known_values = self.known_values
        for am in _ATTRIBUTE.finditer(self.text, start, end):
            at, after = am.span()
            if at != pos:
                break
            pos = after
            kind = am.lastgroup
            name, written = am.group(1, kind)
            if name in LAZY_ATTRIBUTES and (kind == "braces" or kind == "ints"):
                value = V.RawBraces(written, am.start(kind))  # (kept verbatim, as the lexer's BRACED)
            else:
                known = known_values.get(kind)
                value = known.get(written) if known is not None else None
                if value is None:
                    value = self.value(kind, written, am.start(kind))
                    if known is not None:
                        known[written] = value
            out.append((name, value, am.start(1)))
        return out, pos

    def value(self, kind: str, written: str, start: int):
        if kind == "ints":
            return int_list_value(written)
        if kind == "word":
            keyword = KEYWORDS.get(written)
            if keyword is None and written != "nan":
                return V.Ident(written)
            if keyword in _KEYWORD_VALUES:
                return TOKEN_VALUES[keyword](written)
            raise _NotOrdinary
        if kind == "ref":
            return V.Ref(written[1:])
        if kind == "int":
            return TOKEN_VALUES["INT"](written)
        if kind == "string":
            return TOKEN_VALUES["STRING"](written)
        if kind == "braces":
            if _SLICES.fullmatch(written):
                return V.Braced(tuple(_range(r) for r in _RANGE.finditer(written)))
            raise _NotOrdinary
        kind = self.kind(written, start)  # an atom: 3x3, 0_1x1_0, b01f_01io->b01f, 0.5 ...
        if kind == "NAME" or kind == "IDENT" or kind == "INT" or kind == "STRING":
            raise _NotOrdinary  # (read above)
        convert = TOKEN_VALUES.get(kind)
        if convert is None:
            raise _NotOrdinary
        return convert(written)


def _braces_to_end(text: str, start: int, end: int) -> Optional[str]:
    """The `{...}` at `start` if it is _FLAT_BRACES running to `end` (spaces aside), else None.
    The usual metadata is checked without the regular expression: no braces inside, no
    backslashes and whole strings (an even number of quotes) make it flat braces."""
    value = text[start:end]
    if (value[-1] == "}" and "\\" not in value and value.count("{") == 1 == value.count("}")
            and not value.count('"') % 2):
        return value
    braces = _METADATA_VALUE.fullmatch(text, start, end)
    return None if braces is None else braces.group(1)


def _plain_operands(names: str, start: int) -> list:
    """The operands of `(%a, %b)` (the lexer's OPERAND_NAMES; records._operand_list reads the same)."""
    out = []
    pos = start + 1
    for word in names[1:-1].split(", "):
        out.append(OperandRef(word[1:], pos, None))
        pos += len(word) + 2
    return out


def _range(m: re.Match) -> V.Bracketed:
    """`[0:8]` or `[0:8:2]`, as the grammar's bracketed/range2/range3 callbacks make it."""
    a, b, step = m.group(1), m.group(2), m.group(3)
    item = V.Range(int(a), int(b)) if step is None else V.Range(int(a), int(b), int(step), True)
    return V.Bracketed((item,))
