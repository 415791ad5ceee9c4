"""Canonical formatting (hlo.format_module) that never loses the user's comments.

The printer knows nothing of comments, so they are put back by position. Each
comment of the source (other than the printer's own `/*index=N*/`) belongs to
one statement: the module header, a computation header (up to its `{`), an
instruction, or a computation's closing `}`:

* a comment after a statement on the same line stays at the end of that
  statement's formatted line;
* a comment on lines of its own goes, on lines of its own, before the next
  statement (or at the end of the file);
* a comment inside a statement (between its tokens) has no place in the
  canonical text: formatting is refused, saying where the comment is.

The result is idempotent: formatting formatted text changes nothing.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Optional

from ..diagnostics import Diagnostic, HloError
from ..ir import Computation, Module
from ..text.parser import parse_module
from ..text.printer import format_computation, format_module, format_module_header
from .index import DocumentIndex, build_index
from .text import Comment, user_comments


@dataclass
class FormatResult:
    text: Optional[str]            # the formatted text; None when formatting is refused
    reason: str = ""               # why it was refused
    offset: int = -1               # where the obstacle is (a comment or an error)
    errors: list[Diagnostic] = field(default_factory=list)   # the parser's, when the text has errors


class _Refusal(Exception):
    def __init__(self, reason: str, offset: int):
        super().__init__(reason)
        self.reason, self.offset = reason, offset


@dataclass(eq=False)
class _Slot:
    """A statement of the source and the comments that go with it."""
    start: int
    end: int
    indent: str
    leading: list[Comment] = field(default_factory=list)
    trailing: list[Comment] = field(default_factory=list)


def format_text(text: str, filename: str = "<document>") -> FormatResult:
    """The canonical text of an HLO document with its comments kept, or why it cannot be formatted."""
    try:
        module = parse_module(text, filename)
    except HloError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        where = f" (line {first.loc.line}: {first.message})" if first and first.loc else ""
        return FormatResult(None, f"the file has errors{where}; fix them before formatting",
                            first.loc.offset if first and first.loc else -1, list(exc.diagnostics))
    comments = user_comments(text)
    try:
        if not comments:
            return FormatResult(format_module(module))
        return FormatResult(_format_with_comments(module, text, comments))
    except _Refusal as refusal:
        return FormatResult(None, refusal.reason, refusal.offset)


def _format_with_comments(module: Module, text: str, comments: list[Comment]) -> str:
    index = build_index(text)
    header, comp_slots, slots = _slots(index)
    trailer = _attach(comments, slots, text)
    printed = [c for c in module.computations if not c.async_wrapped]
    pieces = _printed_pieces(module, printed)
    chunks = []
    header_text = pieces[0]
    if header is not None:
        header_text = _with_comments(header, header_text)
    chunks.append(header_text)
    for comp, lines in zip(printed, pieces[1:]):
        chunks.append("\n".join(_computation_lines(comp, lines, comp_slots, text)))
    out = "\n\n".join(chunks) + "\n"
    if trailer:
        out += "".join(line + "\n" for line in _comment_lines(trailer, ""))
    return out


def _printed_pieces(module: Module, printed: list[Computation]) -> list:
    """[header text, lines of each computation], checked to add up to format_module's text."""
    header = format_module_header(module)
    comps = [format_computation(c) for c in printed]
    if "\n\n".join([header] + comps) + "\n" != format_module(module):
        raise _Refusal("the printer's layout is not the one expected; cannot place comments", -1)
    return [header] + [c.split("\n") for c in comps]


def _computation_lines(comp: Computation, lines: list[str], comp_slots: dict, text: str) -> list[str]:
    slots = comp_slots.get(comp.loc.offset if comp.loc is not None else -1)
    if slots is None:
        return lines
    head, inst_slots, close = slots
    out = _with_comments(head, lines[0]).split("\n")
    body = lines[1:-1]
    if len(body) != len(comp.instructions):
        if any(s.leading or s.trailing for s in inst_slots.values()):
            raise _Refusal(f"cannot place comments inside computation '{comp.name}' (it prints on more lines "
                           f"than it has instructions)", comp.loc.offset)
        return lines
    for inst, line in zip(comp.instructions, body):
        slot = inst_slots.get(inst.loc.offset if inst.loc is not None else -1)
        out.extend(_with_comments(slot, line).split("\n") if slot is not None else [line])
    out.extend(_with_comments(close, lines[-1]).split("\n"))
    return out


def _with_comments(slot: Optional[_Slot], formatted: str) -> str:
    if slot is None:
        return formatted
    text = formatted
    if slot.trailing:
        text += "  " + " ".join(c.text for c in slot.trailing)
    if slot.leading:
        text = "\n".join(_comment_lines(slot.leading, slot.indent)) + "\n" + text
    return text


def _comment_lines(comments: list[Comment], indent: str) -> list[str]:
    """Leading comments, one source line per output line (comments sharing a line stay together)."""
    lines: list[str] = []
    previous_end = None
    for c in comments:
        same_line = previous_end is not None and c.line_start == previous_end
        if same_line:
            lines[-1] += " " + c.text
        else:
            lines.append(indent + c.text)
        previous_end = c.line_start
    return lines


# --------------------------------------------------------------------------- attaching comments


def _slots(index: DocumentIndex):
    """The statements of the source: (header slot, {comp offset: (head, {inst offset: slot}, close)}, all)."""
    slots: list[_Slot] = []
    header = None
    if index.header is not None:
        header = _Slot(index.header[0], index.header[1], "")
        slots.append(header)
    comp_slots = {}
    for comp in index.computations:
        head = _Slot(comp.start, comp.header_end if comp.header_end > 0 else comp.definition.end, "")
        slots.append(head)
        inst_slots = {}
        for inst in comp.instructions:
            slot = _Slot(inst.start, inst.end, "  ")
            inst_slots[inst.name_token] = slot
            slots.append(slot)
        close = None
        if comp.close >= 0:
            close = _Slot(comp.close, max(comp.end, comp.close + 1), "  ")  # comments before it are in the body
            slots.append(close)
        comp_slots[comp.name_token] = (head, inst_slots, close)
    slots.sort(key=lambda s: s.start)
    return header, comp_slots, slots


def _attach(comments: list[Comment], slots: list[_Slot], text: str) -> list[Comment]:
    """Give every comment to a statement; return those after the last statement."""
    starts = [s.start for s in slots]
    trailer = []
    for c in comments:
        c = _LocatedComment(c.start, c.end, c.text, text.rfind("\n", 0, c.start) + 1)
        i = bisect.bisect_right(starts, c.start) - 1
        previous = slots[i] if i >= 0 else None
        if previous is not None and c.start < previous.end:
            raise _Refusal(f"the comment {_short(c.text)} is inside a statement, where the canonical "
                           f"text has no place for it; move it to the end of the line or to a line of its own",
                           c.start)
        if previous is not None and "\n" not in text[previous.end:c.start]:
            previous.trailing.append(c)
        elif i + 1 < len(slots):
            slots[i + 1].leading.append(c)
        else:
            trailer.append(c)
    return trailer


@dataclass(frozen=True)
class _LocatedComment(Comment):
    line_start: int = 0


def _short(text: str) -> str:
    text = " ".join(text.split())
    return f"'{text if len(text) <= 40 else text[:37] + '...'}'"
