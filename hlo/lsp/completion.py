"""Completion and signature help, from the text around the cursor.

While the user types, the document is usually broken, and a full analysis of a
large file takes longer than a completion may. So both features read only the
current text: the statement the cursor is in (found by walking back over
continuation lines) tells what is expected there, and names come from a quick
scan of the current computation (instructions defined before the statement) or
of the whole file (computation headers):

    %x = f32[4]{0} ad|                  opcodes (after the result shape)
    %x = f|                             primitive types (and opcodes: the shape may be left out)
    %x = f32[4] add(%a, %|              instruction names defined earlier in the computation
    %x = f32[4] add(%a, %b), |          attribute names of `add` (from the opcode table)
    %r = f32[] reduce(...), to_apply=|  computation names (any computation-valued attribute)
    %c = pred[] compare(...), direction=|   the attribute's enum values
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional

from ..opcodes import OPCODES, GENERIC_ATTRIBUTES, AttrKind, wrapped_attr_specs
from ..shapes import PRIMITIVE_TYPES
from .index import COMPUTATION_ATTRIBUTES, LITERAL_OPERAND_OPCODES
from .operands import active_operand, operand_count_text, operand_specs

MAX_ITEMS = 200

OPCODE, ATTRIBUTE, COMPUTATION, INSTRUCTION, TYPE, VALUE = (
    "opcode", "attribute", "computation", "instruction", "type", "value")


@dataclass
class CompletionEntry:
    label: str
    kind: str
    detail: str
    insert_text: str
    replace_start: int
    replace_end: int
    sort_text: str = ""


@dataclass
class Completions:
    items: list[CompletionEntry]
    incomplete: bool = False     # more matched than were returned: ask again as the user types


# --------------------------------------------------------------------------- the statement at the cursor

_INSTRUCTION_START = re.compile(r"[ \t]*(?:ROOT[ \t]+)?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*=(?!=)")
_HEADER_START = re.compile(r"[ \t]*(?:ENTRY[ \t]+)?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*[({]")
_OTHER_START = re.compile(r"[ \t]*(?:\}|HloModule\b|$)")
_MASK = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/|//[^\n\r]*', re.S)
_OPCODE_CALL = re.compile(r"(?<![A-Za-z0-9_.%\-])([a-z][a-z0-9\-]*)\(")
_MAX_STATEMENT_LINES = 40


@dataclass
class _Statement:
    start: int          # offset of the statement's first line
    prefix: str         # text from start to the cursor, strings and comments masked by spaces
    in_comment_or_string: bool


def _statement(text: str, offset: int) -> _Statement:
    start = text.rfind("\n", 0, offset) + 1
    for _ in range(_MAX_STATEMENT_LINES):
        line_end = text.find("\n", start)
        line = text[start:line_end if line_end >= 0 else len(text)]
        if start == 0 or _INSTRUCTION_START.match(line) or _HEADER_START.match(line) or \
                (_OTHER_START.match(line) and start < offset):
            break
        start = text.rfind("\n", 0, start - 1) + 1
    raw = text[start:offset]
    masked, inside = _mask(raw)
    return _Statement(start, masked, inside)


def _mask(raw: str) -> tuple[str, bool]:
    """raw with strings and comments blanked; whether the end is inside one."""
    inside = False
    parts = []
    last = 0
    for m in _MASK.finditer(raw):
        parts.append(raw[last:m.start()])
        parts.append(" " * (m.end() - m.start()))
        last = m.end()
        piece = m.group()
        if m.end() == len(raw) and (piece.startswith("//") or not _closed(piece)):
            inside = True
    rest = raw[last:]
    if rest.count('"') % 2 or "/*" in rest:
        inside = True
    parts.append(rest)
    return "".join(parts), inside


def _closed(piece: str) -> bool:
    if piece.startswith("/*"):
        return piece.endswith("*/") and len(piece) >= 4
    return len(piece) >= 2 and piece[-1] == piece[0]


@dataclass
class _OperandContext:
    opcode: str
    open_paren: int     # offset in the text of the operand list's '('
    index: int          # which operand the cursor is in


def _bracket_depths(s: str) -> Iterator[int]:
    """The bracket depth after each bracket of s."""
    depth = 0
    for ch in s:
        if ch in "([{":
            depth += 1
            yield depth
        elif ch in ")]}":
            depth -= 1
            yield depth


def _depth_scan(s: str) -> int:
    depth = 0
    for depth in _bracket_depths(s):
        pass
    return depth


def _in_operand_list(operands: str) -> bool:
    """operands starts with the operand list's '(': whether that '(' is still open at its end
    (not merely whether some bracket is: `), branch_computations={%a, %` is past the operands)."""
    depth = 0
    for depth in _bracket_depths(operands):
        if depth <= 0:
            return False
    return depth > 0


def _find_opcode(rest: str) -> Optional[re.Match]:
    """The opcode call in the text after `name =` (skipping parentheses of tuple shapes)."""
    for m in _OPCODE_CALL.finditer(rest):
        if m.group(1) == "b" or _depth_scan(rest[:m.start()]) != 0:
            continue
        return m
    return None


# --------------------------------------------------------------------------- completion


# Names in scope before a statement, nearest first: (name, shape or a function giving it).
ScopeNames = Callable[[int], Optional[Iterable[tuple[str, object]]]]


def complete(text: str, offset: int, scope_names: Optional[ScopeNames] = None) -> Completions:
    """Completions at offset. scope_names(statement_start), when given, lists the instructions in scope
    from an index of the text (faster than scanning the text); it may return None to decline."""
    stmt = _statement(text, offset)
    if stmt.in_comment_or_string:
        return Completions([])
    word_start = offset - len(re.search(r"%?[A-Za-z0-9_.\-]*$", stmt.prefix).group())
    inst = _INSTRUCTION_START.match(stmt.prefix)
    if inst is not None:
        return _in_instruction(text, offset, stmt, inst.end(), word_start, scope_names)
    if _HEADER_START.match(stmt.prefix) and _in_shape_position(stmt.prefix):
        return _types(word_start, offset, text)
    return Completions([])


def _in_instruction(text: str, offset: int, stmt: _Statement, after_equal: int, word_start: int,
                    scope_names: Optional[ScopeNames]) -> Completions:
    rest = stmt.prefix[after_equal:]
    call = _find_opcode(rest)
    if call is None:
        return _before_opcode(text, offset, rest, word_start)
    opcode = call.group(1)
    operands = rest[call.end() - 1:]
    if _in_operand_list(operands):
        if opcode in LITERAL_OPERAND_OPCODES:
            return Completions([])
        names = scope_names(stmt.start) if scope_names is not None else None
        if names is not None:
            candidates = (("%" + name, INSTRUCTION, detail, "%" + name, "0") for name, detail in names)
            return _filtered(candidates, word_start, offset, text)
        return _instruction_names(text, offset, stmt.start, word_start)
    return _after_operands(text, offset, opcode, operands, word_start)


def _before_opcode(text: str, offset: int, rest: str, word_start: int) -> Completions:
    typed = re.search(r"[A-Za-z0-9_\-]*$", rest).group()
    before = rest[:len(rest) - len(typed)]
    if not before.strip():  # right after '=': a shape, or an opcode when the shape is left out
        types = _types(word_start, offset, text)
        opcodes = _opcodes(word_start, offset, text, sort_prefix="1")
        return Completions(types.items + opcodes.items, types.incomplete or opcodes.incomplete)
    if _in_shape_position(before):
        return _types(word_start, offset, text)
    if before.endswith((" ", "\t")) and _depth_scan(before) == 0 and before.rstrip()[-1:] in ("]", "}", ")"):
        return _opcodes(word_start, offset, text)
    return Completions([])


def _in_shape_position(before: str) -> bool:
    """The cursor starts an element type: after ':' '->' or inside a tuple shape '(' / ','."""
    stripped = before.rstrip()
    if stripped.endswith(("->", ":")):
        return True
    return stripped.endswith(("(", ",")) and _depth_scan(stripped) > 0 and "[" not in stripped[-1:]


def _after_operands(text: str, offset: int, opcode: str, operands: str, word_start: int) -> Completions:
    depth = 0
    last_comma = -1
    for i, ch in enumerate(operands):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            last_comma = i
    if last_comma < 0:
        return Completions([])
    segment = operands[last_comma + 1:]
    name_only = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_\-]*)?", segment)
    if name_only:
        present = set(re.findall(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_\-]*)=", operands))
        return _attribute_names(opcode, present, word_start, offset, text)
    value = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_\-]*)=(.*)", segment, re.S)
    if value:
        return _attribute_values(text, opcode, value.group(1), value.group(2), word_start, offset)
    return Completions([])


def _attribute_values(text: str, opcode: str, attr: str, value: str, word_start: int, offset: int) -> Completions:
    specs = _specs(opcode)
    spec = specs.get(attr)
    is_computation = spec.is_computation if spec is not None else attr in COMPUTATION_ATTRIBUTES
    if is_computation:
        return _computation_names(text, word_start, offset)
    if spec is not None and spec.kind is AttrKind.ENUM:
        return _filtered([(v, VALUE, f"{attr} value", v) for v in spec.enum_values], word_start, offset, text)
    if spec is not None and spec.kind is AttrKind.BOOL:
        return _filtered([(v, VALUE, f"{attr} value", v) for v in ("true", "false")], word_start, offset, text)
    return Completions([])


def _specs(opcode: str) -> dict:
    try:
        return wrapped_attr_specs(opcode)
    except KeyError:
        return {}


def _attribute_names(opcode: str, present: set, word_start: int, offset: int, text: str) -> Completions:
    candidates = []
    for spec in _specs(opcode).values():
        if spec.name not in present:
            what = spec.kind.value + (", required" if spec.required else "")
            candidates.append((spec.name, ATTRIBUTE, what, spec.name + "=", "0" if spec.required else "1"))
    for name in GENERIC_ATTRIBUTES:
        if name not in present:
            candidates.append((name, ATTRIBUTE, "any instruction", name + "=", "2"))
    return _filtered(candidates, word_start, offset, text)


def _opcodes(word_start: int, offset: int, text: str, sort_prefix: str = "0") -> Completions:
    return _filtered([(name, OPCODE, info.description, name, sort_prefix) for name, info in OPCODES.items()],
                     word_start, offset, text)


def _types(word_start: int, offset: int, text: str) -> Completions:
    candidates = [(name, TYPE, f"{t.kind.value} element type, {t.bits} bits" if t.bits else f"{t.kind.value} type",
                   name, "0") for name, t in PRIMITIVE_TYPES.items()]
    return _filtered(candidates, word_start, offset, text)


_COMPUTATION_HEADER = re.compile(
    r"^[ \t]*(ENTRY[ \t]+)?%?([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*(\([^\n{]*\)[ \t]*->[^\n{]*)?\{[ \t]*(?://[^\n]*)?$",
    re.M)
_INSTRUCTION_DEF = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*=", re.M)


def _computation_names(text: str, word_start: int, offset: int) -> Completions:
    candidates = []
    for m in _COMPUTATION_HEADER.finditer(text):
        signature = " ".join((m.group(3) or "").split())
        candidates.append(("%" + m.group(2), COMPUTATION, signature, "%" + m.group(2), "0"))
    return _filtered(candidates, word_start, offset, text)


def _instruction_names(text: str, offset: int, statement_start: int, word_start: int) -> Completions:
    """Instructions defined before the statement, in the computation the cursor is in."""
    comp_start = _computation_start(text, statement_start)
    definitions = list(_INSTRUCTION_DEF.finditer(text, comp_start, statement_start))
    typed = text[word_start:offset].lstrip("%").lower()
    candidates = []
    for m in reversed(definitions):  # nearest definitions first; shapes only for what is shown
        name = m.group(1)
        if name.lower().startswith(typed):
            candidates.append(("%" + name, INSTRUCTION, lambda end=m.end(): _shape_after(text, end), "%" + name, "0"))
            if len(candidates) > MAX_ITEMS:
                break
    return _filtered(candidates, word_start, offset, text)


def _computation_start(text: str, before: int) -> int:
    """Offset just after the header line of the computation enclosing `before` (0 if none)."""
    end = before
    while True:
        brace = max(text.rfind("{\n", 0, end), text.rfind("{\r\n", 0, end))  # headers end their line with '{'
        if brace < 0:
            return 0
        line_start = text.rfind("\n", 0, brace) + 1
        line_end = text.find("\n", brace)
        line_end = len(text) if line_end < 0 else line_end
        if _COMPUTATION_HEADER.match(text, line_start, line_end):
            return line_end
        end = line_start


def _shape_after(text: str, equal_end: int) -> str:
    """The shape written after `name =` (up to the opcode) on the line at equal_end."""
    line_end = text.find("\n", equal_end)
    return _shape_of(text[equal_end:len(text) if line_end < 0 else line_end])


def _shape_of(rest: str) -> str:
    call = _find_opcode(rest)
    return rest[:call.start()].strip() if call is not None else ""


def _filtered(candidates, word_start: int, offset: int, text: str) -> Completions:
    """Entries whose label starts with what is typed (ignoring a '%'), at most MAX_ITEMS of them."""
    typed = text[word_start:offset].lstrip("%").lower()
    items = []
    for label, kind, detail, insert, *sort in candidates:
        if typed and not label.lstrip("%").lower().startswith(typed):
            continue
        if len(items) == MAX_ITEMS:
            return Completions(items, incomplete=True)
        sort_text = f"{sort[0] if sort else '0'}{len(items):05d}"
        detail = detail() if callable(detail) else detail  # details are computed for kept entries only
        items.append(CompletionEntry(label, kind, detail, insert, word_start, offset, sort_text))
    return Completions(items)


# --------------------------------------------------------------------------- signature help


@dataclass
class SignatureHelpResult:
    label: str
    documentation: str
    parameters: list[tuple[int, int, str]]     # (start, end) in the label, and the parameter's description
    active_parameter: int


def signature_help(text: str, offset: int) -> Optional[SignatureHelpResult]:
    stmt = _statement(text, offset)
    inst = _INSTRUCTION_START.match(stmt.prefix)
    if stmt.in_comment_or_string or inst is None:
        return None
    rest = stmt.prefix[inst.end():]
    call = _find_opcode(rest)
    if call is None:
        return None
    operands = rest[call.end() - 1:]
    if not _in_operand_list(operands):
        return None
    opcode = call.group(1)
    specs = operand_specs(opcode)
    if specs is None:
        return None
    index = _top_level_commas(operands[1:])
    total = index + 1 + _top_level_commas(_rest_of_operand_list(text, offset))
    return _signature(opcode, specs, active_operand(specs, index, total))


def _top_level_commas(s: str) -> int:
    depth = 0
    count = 0
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count


def _rest_of_operand_list(text: str, offset: int) -> str:
    """The text from the cursor to the ')' closing the operand list (or the end of the line)."""
    end = text.find("\n", offset)
    line = text[offset:end if end >= 0 else len(text)]
    masked, _ = _mask(line)
    depth = 0
    for i, ch in enumerate(masked):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return masked[:i]
            depth -= 1
    return masked


def _signature(opcode: str, specs, active: int) -> SignatureHelpResult:
    label = opcode + "("
    params = []
    for i, spec in enumerate(specs):
        if i:
            label += ", "
        start = len(label)
        label += spec.label()
        params.append((start, len(label), spec.type))
    label += ")"
    info = OPCODES.get(opcode)
    doc = operand_count_text(opcode)
    if info is not None:
        doc = f"{info.description} ({doc})"
    return SignatureHelpResult(label, doc, params, active)
