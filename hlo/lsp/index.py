"""Where every name of a document is defined and used, built from the lexer's tokens.

The IR cannot answer "which characters spell this name": the parser renames
instructions that share a name across computations, drops instructions it could
not build, and keeps no position for a computation named in `to_apply=`. So the
language server keeps its own index, made by one walk over hlo.text.lexer's tokens
that follows the statement structure of HLO text:

    HloModule name, attributes...
    [ENTRY] %comp (param: shape, ...) -> shape {
      [ROOT] %name = shape opcode(operands...), attribute=value, ...
    }

It is tolerant: a character the lexer rejects skips to the next line, a line
that does not fit the structure is stepped over, and an unclosed computation
ends at the next computation header, so one typo never hides the rest of the
file. Instruction names are scoped by computation (the same name in two
computations is two different instructions); computation names are global.
"""
from __future__ import annotations

import bisect
import functools
import operator
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..diagnostics import HloError, SourceFile
from ..text.fastpath import attribute_spans, instruction_runs
from ..text.lexer import KEYWORDS, HloLexer, tokenize
from ..opcodes import OPCODES, AttrKind, Trait, ops_with, wrapped_attr_specs
from ..text.grammar import load_grammar
from ..text.parser import collections_paused
from ..text.records import OperandRef

INSTRUCTION, COMPUTATION = "instruction", "computation"
DEFINITION, USE, DECLARATION = "definition", "use", "declaration"

# Attribute names that hold computations for some opcode (used when the opcode is unknown).
COMPUTATION_ATTRIBUTES = frozenset(
    spec.name for info in OPCODES.values() for spec in info.attrs
    if spec.kind in (AttrKind.COMPUTATION, AttrKind.COMPUTATION_LIST))
INSTRUCTION_LIST_ATTRIBUTES = frozenset({"control-predecessors"})
# Opcodes whose parentheses hold a number or a literal instead of operands.
LITERAL_OPERAND_OPCODES = ops_with(Trait.LITERAL_OPERAND)
_NAME_IN_OPERANDS = re.compile(r"%([A-Za-z_][A-Za-z0-9_.\-]*)")
_START = operator.attrgetter("start")
_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NAME_KINDS = frozenset({"NAME", "IDENT"})
_OPERAND_START = frozenset({"LPAR", "OPERAND_NAMES", "LITERAL_TEXT"})
_SHAPE_START = frozenset({"PRIM", "SHAPE_TEXT", "LPAR"})
_OPENERS = {"LPAR": 1, "LSQB": 1, "LBRACE": 1, "LAYOUT_LBRACE": 1, "RPAR": -1, "RSQB": -1, "RBRACE": -1}


@dataclass(eq=False)
class Occurrence:
    """One spelling of a name: its characters are text[start:end] (without '%' or ':')."""
    start: int
    end: int
    name: str
    kind: str                 # INSTRUCTION or COMPUTATION
    scope: int                # the computation's number for instruction names, -1 for computations
    role: str                 # DEFINITION, USE or DECLARATION (a parameter in a signature)
    context: str = ""         # for uses: "operand" or the attribute naming it

    @property
    def key(self) -> tuple:
        return self.kind, self.scope, self.name


@dataclass(eq=False)
class Attribute:
    name: str
    start: int                # the attribute name's first character
    value_start: int
    value_end: int


@dataclass(eq=False)
class InstrEntry:
    name: str
    name_token: int           # offset of the name token ('%' included): the IR's inst.loc.offset
    definition: Occurrence
    start: int                # 'ROOT' or the name
    end: int                  # just after the last token
    is_root: bool
    computation: "CompEntry"
    opcode: Optional[str] = None
    opcode_start: int = -1
    shape_start: int = -1
    shape_end: int = -1
    operands_open: int = -1   # offset of '(' after the opcode
    operands_close: int = -1  # offset of the matching ')', -1 if it is missing
    operands: list[Occurrence] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)


@dataclass(eq=False)
class CompEntry:
    number: int
    name: str
    name_token: int           # the IR's comp.loc.offset
    definition: Occurrence
    start: int                # 'ENTRY' or the name
    is_entry: bool
    header_end: int = -1      # just after the body's '{' (-1 if there is none)
    close: int = -1           # offset of the closing '}' (-1 if it is missing)
    end: int = -1             # just after the last token of the computation
    params: list[Occurrence] = field(default_factory=list)
    instructions: list[InstrEntry] = field(default_factory=list)

    def instruction_named(self, name: str) -> Optional[InstrEntry]:
        return next((i for i in self.instructions if i.name == name), None)


@dataclass(eq=False)
class DocumentIndex:
    text: str
    header: Optional[tuple[int, int]] = None        # extent of `HloModule ...`
    computations: list[CompEntry] = field(default_factory=list)
    occurrences: list[Occurrence] = field(default_factory=list)   # sorted by start
    instructions: list[InstrEntry] = field(default_factory=list)  # in text order

    def __post_init__(self):
        self._starts: list[int] = []
        self._by_key: dict[tuple, list[Occurrence]] = {}
        self._instr_starts: list[int] = []

    def finish(self) -> "DocumentIndex":
        self.occurrences.sort(key=_START)
        self._starts = [o.start for o in self.occurrences]
        by_key = self._by_key
        for occ in self.occurrences:
            key = (occ.kind, occ.scope, occ.name)
            found = by_key.get(key)
            if found is None:
                by_key[key] = [occ]
            else:
                found.append(occ)
        self._instr_starts = [i.start for i in self.instructions]
        return self

    # ---- queries
    def occurrence_at(self, offset: int) -> Optional[Occurrence]:
        """The name spelled at offset (the position just after a name counts too)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0 and self.occurrences[i].start <= offset <= self.occurrences[i].end:
            return self.occurrences[i]
        return None

    def occurrences_of(self, occ: Occurrence) -> list[Occurrence]:
        return self._by_key.get(occ.key, [])

    def definition_of(self, occ: Occurrence) -> Optional[Occurrence]:
        same = self.occurrences_of(occ)
        return (next((o for o in same if o.role == DEFINITION), None)
                or next((o for o in same if o.role == DECLARATION), None))

    def instruction_at(self, offset: int) -> Optional[InstrEntry]:
        i = bisect.bisect_right(self._instr_starts, offset) - 1
        if i >= 0 and self.instructions[i].start <= offset <= self.instructions[i].end:
            return self.instructions[i]
        return None

    def instructions_between(self, start: int, end: int) -> list[InstrEntry]:
        """The instructions that start in [start, end]."""
        i = bisect.bisect_left(self._instr_starts, start)
        found = []
        while i < len(self.instructions) and self._instr_starts[i] <= end:
            found.append(self.instructions[i])
            i += 1
        return found

    def computation_at(self, offset: int) -> Optional[CompEntry]:
        for comp in self.computations:
            if comp.start <= offset <= comp.end:
                return comp
        return None

    def computation_named(self, name: str) -> Optional[CompEntry]:
        return next((c for c in self.computations if c.name == name), None)

    def instruction_of(self, occ: Occurrence) -> Optional[InstrEntry]:
        """The instruction an instruction-name occurrence refers to."""
        if occ.kind != INSTRUCTION or not 0 <= occ.scope < len(self.computations):
            return None
        return self.computations[occ.scope].instruction_named(occ.name)


# --------------------------------------------------------------------------- tokens


class IndexingStopped(Exception):
    """build_index was asked to stop (its text is no longer the current one)."""


_POLL_EVERY = 4096   # tokens or instructions between two polls of should_stop


class _UnterminatedString(Exception):
    def __init__(self, offset: int):
        super().__init__(offset)
        self.offset = offset


class FastLine:
    """An ordinary instruction line (hlo/text/fastpath.py reads it), as the walk needs it: where its
    parts are. Runs of such lines come from the lexer as one INSTRUCTION_LINES token."""
    __slots__ = ("match", "record", "end")

    def __init__(self, match, record, end: int):
        self.match, self.record, self.end = match, record, end


def lex_tolerantly(text: str, should_stop: Optional[Callable[[], bool]] = None, fast_lines: bool = True
                   ) -> tuple[list[str], list[int], list]:
    """Token kinds, start offsets and texts; a line the lexer rejects is skipped from the bad character.

    A string running over several lines is taken for an unterminated one (the printer escapes line
    breaks), so that one missing '"' does not swallow the statements that follow. With `fast_lines`,
    a run of ordinary instruction lines is one INSTRUCTION_LINES token whose value is its FastLines.
    """
    load_grammar()  # installs the lexer's regular expressions
    kinds: list[str] = []
    starts: list[int] = []
    values: list = []
    runs = instruction_runs(text, FastLine) if fast_lines else {}
    base = 0
    while base < len(text):
        chunk = text if base == 0 else text[base:]
        chunk_runs = runs if base == 0 else {start - base: (end - base, lines) for start, (end, lines) in runs.items()
                                             if start >= base}
        try:
            for tok in tokenize(chunk, False, SourceFile("<index>", chunk), chunk_runs):
                value = str.__str__(tok) if tok.type != "INSTRUCTION_LINES" else tok.value
                if tok.type == "STRING" and "\n" in value:
                    raise _UnterminatedString(tok.start_pos)
                kinds.append(tok.type)
                starts.append(tok.start_pos + base)
                values.append(value)
                if should_stop is not None and len(kinds) % _POLL_EVERY == 0 and should_stop():
                    raise IndexingStopped()
            return kinds, starts, values
        except (HloError, _UnterminatedString) as exc:
            if isinstance(exc, _UnterminatedString):
                bad = base + exc.offset
            else:
                bad = base + (exc.diagnostics[0].loc.offset if exc.diagnostics and exc.diagnostics[0].loc else 0)
            # tokens up to the bad character are kept; lexing restarts on the next line
            while starts and starts[-1] >= bad:
                kinds.pop(), starts.pop(), values.pop()
            newline = text.find("\n", bad)
            if newline < 0:
                break
            base = newline + 1
    return kinds, starts, values


# --------------------------------------------------------------------------- the walk


class _Walker:
    def __init__(self, text: str, should_stop: Optional[Callable[[], bool]] = None, fast_lines: bool = True):
        self.text = text
        self.should_stop = should_stop
        self.kinds, self.starts, self.values = lex_tolerantly(text, should_stop, fast_lines)
        self.n = len(self.kinds)
        self.index = DocumentIndex(text)

    def real(self, j: int) -> None:
        """Where the statement structure is not a body's, a run of ordinary instruction lines is read
        as the lexer's tokens of those lines (what a text that breaks the structure gets)."""
        if j < self.n and self.kinds[j] == "INSTRUCTION_LINES":
            lines = self.values[j]
            start, end = self.starts[j], lines[-1].end
            chunk = self.text[start:end]
            tokens = [(t.type, t.start_pos + start, str.__str__(t)) for t in tokenize(chunk, False, None)]
            self.kinds[j:j + 1] = [t[0] for t in tokens]
            self.starts[j:j + 1] = [t[1] for t in tokens]
            self.values[j:j + 1] = [t[2] for t in tokens]
            self.n = len(self.kinds)

    # ---- token helpers
    def real_last_line(self, j: int) -> None:
        """Token j, a run of ordinary lines whose others are read, becomes the tokens of its last line."""
        line = self.values[j][-1]
        start = line.match.start("root") if line.record.is_root else line.record.pos
        self.kinds[j] = "INSTRUCTION_LINES"
        self.values[j] = [line]
        self.starts[j] = start
        self.real(j)

    def kind(self, j: int) -> str:
        return self.kinds[j] if j < self.n else "$END"

    def end(self, j: int) -> int:
        """Offset just after token j (a glued '=' or ':' included)."""
        k = self.kinds[j]
        if k == "INSTRUCTION_LINES":
            return self.values[j][-1].end
        extra = 1 if k in ("NAME", "ATTR_NAME", "COLON_NAME") else 0
        return self.starts[j] + len(self.values[j]) + extra

    def first_on_line(self, j: int) -> bool:
        start = self.starts[j]
        line_start = self.text.rfind("\n", 0, start) + 1
        return line_start == start or self.text[line_start:start].isspace()

    def name_occurrence(self, j: int, kind: str, scope: int, role: str, context: str = "") -> Occurrence:
        start = self.starts[j] + (1 if self.kinds[j] == "NAME" else 0)
        value = self.values[j]
        occ = Occurrence(start, start + len(value), value, kind, scope, role, context)
        self.index.occurrences.append(occ)
        return occ

    def starts_statement(self, j: int) -> bool:
        """Token j begins something new: an instruction, a computation or a closing '}'."""
        k = self.kinds[j]
        if k in ("ROOT", "ENTRY", "HLOMODULE"):
            return True
        return k in _NAME_KINDS and self.first_on_line(j)

    # ---- module level
    def run(self) -> DocumentIndex:
        j = 0
        while j < self.n:
            self.real(j)
            k = self.kinds[j]
            if k == "HLOMODULE":
                j = self.header(j)
            elif k == "ENTRY" or (k in _NAME_KINDS and (j == 0 or self.kinds[j - 1] not in ("ATTR_NAME", "EQUAL"))):
                j = self.computation(j)
            else:
                j += 1
        return self.index.finish()

    def header(self, j: int) -> int:
        start = self.starts[j]
        last = j
        j += 1
        self.real(j)
        if self.kind(j) in ("NAME", "IDENT", "COLON_NAME"):  # the module's name
            last = j
            j += 1
        depth = 0
        while j < self.n:
            self.real(j)
            k = self.kinds[j]
            if depth == 0 and k in ("ENTRY", "NAME", "IDENT") and self.first_on_line(j) \
                    and self.kinds[j - 1] not in ("ATTR_NAME", "EQUAL"):
                break
            depth += _OPENERS.get(k, 0)
            last = j
            j += 1
        self.index.header = (start, self.end(last))
        return j

    def computation(self, j: int) -> int:
        start = self.starts[j]
        is_entry = self.kinds[j] == "ENTRY"
        if is_entry:
            j += 1
            self.real(j)
            if self.kind(j) not in _NAME_KINDS:
                return j
        number = len(self.index.computations)
        definition = self.name_occurrence(j, COMPUTATION, -1, DEFINITION)
        comp = CompEntry(number, self.values[j], self.starts[j], definition, start, is_entry)
        self.index.computations.append(comp)
        j = self.signature(j + 1, comp)
        if self.kind(j) == "LBRACE":
            comp.header_end = self.end(j)
            j = self.body(j + 1, comp)
        comp.end = self.end(j - 1) if j > 0 else 0
        return j

    def signature(self, j: int, comp: CompEntry) -> int:
        """Step over `(params) -> shape`; stop at the body's '{' or at a statement."""
        depth = 0
        while j < self.n:
            self.real(j)
            k = self.kinds[j]
            if depth == 0 and k == "LBRACE":
                return j
            if depth == 0 and self.starts_statement(j):
                return j
            if k == "COLON_NAME" and depth == 1:
                comp.params.append(self.name_occurrence(j, INSTRUCTION, comp.number, DECLARATION, "signature"))
            depth += _OPENERS.get(k, 0)
            j += 1
        return j

    def body(self, j: int, comp: CompEntry) -> int:
        while j < self.n:
            k = self.kinds[j]
            if k == "INSTRUCTION_LINES":
                lines = self.values[j]
                for line in lines[:-1]:
                    self.fast_instruction(line, comp)
                if j + 1 < self.n and not self.boundary(j + 1, 0):
                    self.real_last_line(j)  # the next line goes on with the statement: read by the walk
                    continue
                self.fast_instruction(lines[-1], comp)
                j += 1
                if self.should_stop is not None and self.should_stop():
                    raise IndexingStopped()
                continue
            if k == "RBRACE":
                comp.close = self.starts[j]
                return self.computation_tail(j + 1)
            nxt = self.kind(j + 1)
            if k == "ROOT" or (k in _NAME_KINDS and nxt == "EQUAL"):
                j = self.instruction(j, comp)
                if self.should_stop is not None and len(self.index.instructions) % _POLL_EVERY == 0 \
                        and self.should_stop():
                    raise IndexingStopped()
            elif k == "ENTRY" or k == "HLOMODULE" or (k in _NAME_KINDS and nxt in ("LPAR", "LBRACE")
                                                       and self.first_on_line(j)):
                return j  # the '}' is missing: a new computation starts here
            else:
                j += 1
        return j

    def computation_tail(self, j: int) -> int:
        """Step over `, execution_thread="..."` after a computation's '}'."""
        while self.kind(j) == "COMMA" and self.kind(j + 1) == "ATTR_NAME" and j + 2 < self.n:
            self.real(j + 2)
            j += 3
        return j

    # ---- instructions
    def boundary(self, j: int, depth: int) -> bool:
        """Token j ends the current instruction (when not nested in brackets)."""
        k = self.kinds[j]
        if k in ("ROOT", "ENTRY", "HLOMODULE", "INSTRUCTION_LINES"):
            return True
        if depth > 0:  # an unclosed bracket still ends at the next `name = ...` line
            return k in _NAME_KINDS and self.kind(j + 1) == "EQUAL" and self.first_on_line(j)
        return k == "RBRACE" or (k in _NAME_KINDS and self.first_on_line(j))

    def instruction(self, j: int, comp: CompEntry) -> int:
        start = self.starts[j]
        is_root = self.kinds[j] == "ROOT"
        if is_root:
            j += 1
            self.real(j)
            if self.kind(j) not in _NAME_KINDS:
                return j
        definition = self.name_occurrence(j, INSTRUCTION, comp.number, DEFINITION)
        inst = InstrEntry(self.values[j], self.starts[j], definition, start, self.end(j), is_root, comp)
        comp.instructions.append(inst)
        self.index.instructions.append(inst)
        j += 1
        if self.kind(j) == "EQUAL":
            j += 1
        last = j - 1
        j, last = self.shape_and_opcode(j, inst, last)
        if inst.opcode is not None:
            j, last = self.operands(j, inst, comp)
            j, last = self.attributes(j, inst, comp, last)
        inst.end = self.end(last)
        return j

    def fast_instruction(self, line: FastLine, comp: CompEntry) -> None:
        """What `instruction` makes of the tokens of an ordinary line, read from its parts."""
        m, rec, occurrences = line.match, line.record, self.index.occurrences
        name_start = rec.pos + (self.text[rec.pos] == "%")
        definition = Occurrence(name_start, name_start + len(rec.name), rec.name, INSTRUCTION, comp.number, DEFINITION)
        occurrences.append(definition)
        start = m.start("root") if rec.is_root else rec.pos
        inst = InstrEntry(rec.name, rec.pos, definition, start, definition.end, rec.is_root, comp, rec.opcode,
                          rec.opcode_pos, m.start("shape"), m.end("shape"), m.start("operands"), m.end("operands") - 1)
        comp.instructions.append(inst)
        self.index.instructions.append(inst)
        if rec.opcode not in LITERAL_OPERAND_OPCODES or self.operand_names_token(m):
            for op in rec.operands:
                if type(op) is OperandRef:
                    op_start = op.pos + (self.text[op.pos] == "%")
                    occ = Occurrence(op_start, op_start + len(op.name), op.name, INSTRUCTION, comp.number, USE,
                                     "operand")
                    occurrences.append(occ)
                    inst.operands.append(occ)
        if rec.attrs:
            computation_attrs = _computation_attributes(rec.opcode)
            spans = attribute_spans(self.text, m.start("attrs"), line.end)
            for (name, name_start, value_start, value_end), (_, value, _) in zip(spans, rec.attrs):
                inst.attributes.append(Attribute(name, name_start, value_start, value_end))
                if name in computation_attrs or name in INSTRUCTION_LIST_ATTRIBUTES:
                    self.fast_attribute_name(name, value_start, value_end, comp, computation_attrs)
        inst.end = line.end

    def operand_names_token(self, m) -> bool:
        """Whether the lexer reads the line's operands as one OPERAND_NAMES token (whose names `operands`
        records whatever the opcode)."""
        names = HloLexer.context_regexes["OPERAND_NAMES"].match(self.text, m.start("operands"))
        return names is not None and names.end() == m.end("operands")

    def fast_attribute_name(self, attribute: str, start: int, end: int, comp: CompEntry, computation_attrs) -> None:
        """The name an ordinary line's attribute value spells (a single word: the only names such values
        hold), as attribute_names records it."""
        word = self.text[start:end]
        if word[0] == "%":
            start += 1
            word = word[1:]
        elif not _BARE_NAME.fullmatch(word) or word in KEYWORDS or word == "nan":
            return  # not a name token (a number, a keyword, braces, a string ...)
        kind, scope = (COMPUTATION, -1) if attribute in computation_attrs else (INSTRUCTION, comp.number)
        self.index.occurrences.append(Occurrence(start, end, word, kind, scope, USE, attribute))

    def shape_and_opcode(self, j: int, inst: InstrEntry, last: int) -> tuple[int, int]:
        depth = 0
        shape_first = j
        while j < self.n and not self.boundary(j, depth):
            k = self.kinds[j]
            if k == "IDENT" and depth == 0 and self.kind(j + 1) in _OPERAND_START and not self.buffer_shape(j):
                if j > shape_first:
                    inst.shape_start, inst.shape_end = self.starts[shape_first], self.end(j - 1)
                inst.opcode, inst.opcode_start = self.values[j], self.starts[j]
                return j + 1, j
            depth += _OPENERS.get(k, 0)
            last = j
            j += 1
        if j > shape_first:
            inst.shape_start, inst.shape_end = self.starts[shape_first], self.end(last)
        return j, last

    def buffer_shape(self, j: int) -> bool:
        """`b(f32[4])`: a buffer shape, not an opcode."""
        return self.values[j] == "b" and self.kind(j + 1) == "LPAR" and self.kind(j + 2) in _SHAPE_START

    def operands(self, j: int, inst: InstrEntry, comp: CompEntry) -> tuple[int, int]:
        k = self.kinds[j]
        inst.operands_open = self.starts[j]
        if k == "OPERAND_NAMES":
            self.operand_names(j, inst, comp)
            inst.operands_close = self.end(j) - 1
            return j + 1, j
        if k == "LITERAL_TEXT":
            inst.operands_close = self.end(j) - 1
            return j + 1, j
        leaf = inst.opcode in LITERAL_OPERAND_OPCODES
        first = last = j
        parens = braces = 0
        while j < self.n:
            k = self.kinds[j]
            if j > first and (self.boundary(j, 1) or (k == "RBRACE" and braces == 0)):
                return j, last  # the ')' is missing
            if k == "OPERAND_NAMES":
                self.operand_names(j, inst, comp)
            elif k in _NAME_KINDS and not leaf and self.kind(j + 1) not in _OPERAND_START:
                inst.operands.append(self.name_occurrence(j, INSTRUCTION, comp.number, USE, "operand"))
            elif k == "LPAR":
                parens += 1
            elif k == "RPAR":
                parens -= 1
            elif k in ("LBRACE", "LAYOUT_LBRACE"):
                braces += 1
            elif k == "RBRACE":
                braces -= 1
            last = j
            j += 1
            if parens == 0:
                inst.operands_close = self.starts[last]
                return j, last
        return j, last

    def operand_names(self, j: int, inst: InstrEntry, comp: CompEntry) -> None:
        base = self.starts[j]
        for m in _NAME_IN_OPERANDS.finditer(self.values[j]):
            occ = Occurrence(base + m.start(1), base + m.end(1), m.group(1), INSTRUCTION, comp.number, USE,
                             "operand")
            self.index.occurrences.append(occ)
            inst.operands.append(occ)

    def attributes(self, j: int, inst: InstrEntry, comp: CompEntry, last: int) -> tuple[int, int]:
        computation_attrs = _computation_attributes(inst.opcode)
        while j < self.n and not self.boundary(j, 0):
            if self.kinds[j] != "ATTR_NAME":
                last = j
                j += 1
                continue
            name, name_j = self.values[j], j
            j += 1
            depth = 0
            value_first = j
            while j < self.n and not self.boundary(j, depth):
                k = self.kinds[j]
                if depth == 0 and k == "COMMA" and self.kind(j + 1) == "ATTR_NAME":
                    break
                depth += _OPENERS.get(k, 0)
                j += 1
            value_end = self.end(j - 1) if j > value_first else self.end(name_j)
            inst.attributes.append(Attribute(name, self.starts[name_j], self.end(name_j), value_end))
            self.attribute_names(name, value_first, j, inst, comp, computation_attrs)
            last = j - 1
        return j, last

    def attribute_names(self, name: str, first: int, stop: int, inst: InstrEntry, comp: CompEntry,
                        computation_attrs) -> None:
        """Names inside an attribute value: called computations or control predecessors."""
        if name in computation_attrs:
            kind, scope = COMPUTATION, -1
        elif name in INSTRUCTION_LIST_ATTRIBUTES:
            kind, scope = INSTRUCTION, comp.number
        else:
            return
        if "EQUAL" in self.kinds[first:stop]:
            return  # an inline computation `{ %x = ... }`: not a reference
        for k in range(first, stop):
            if self.kinds[k] in _NAME_KINDS:
                self.name_occurrence(k, kind, scope, USE, name)


@functools.lru_cache(maxsize=1024)
def _computation_attributes(opcode: Optional[str]) -> frozenset:
    try:
        specs = wrapped_attr_specs(opcode)
    except KeyError:
        return COMPUTATION_ATTRIBUTES
    return frozenset(s.name for s in specs.values() if s.kind in (AttrKind.COMPUTATION, AttrKind.COMPUTATION_LIST))


def build_index(text: str, should_stop: Optional[Callable[[], bool]] = None, fast_lines: bool = True
                ) -> DocumentIndex:
    """The name index of a document (never raises on bad input).

    should_stop, when given, is polled now and then: IndexingStopped is raised as soon as it says True.
    fast_lines: ordinary instruction lines are read from their parts (what tests compare with the walk
    over every token).
    """
    with collections_paused():
        return _Walker(text, should_stop, fast_lines).run()
