"""Fast diagnostics after edits inside instruction lines.

A full analysis re-parses and re-checks the whole file (about 0.6 s for 10,000
instructions on an idle machine, several times that on a busy one). Most edits
change a line or two, and the diagnostics of one instruction depend only on its
own text, the shapes of its operands and the signatures of the computations it
calls. So, given the full analysis of an earlier text with the same number of
lines, the diagnostics of the new text are computed by re-checking only

* each changed instruction line, in a small module made of the line, one
  parameter per operand (with the operand's shape from the earlier analysis),
  the printed computations it calls, and the file's next line (so that an error
  at the end of the line reads as in the file); and
* if an instruction's shape changed, the instructions that use it, the same way
  (and their users in turn when their own inferred shape changes, up to a limit);

and by moving every other diagnostic with its line. The small modules go through
the same parse-with-recovery and checker as a full analysis, so the messages are
the same (the "did you mean" hint for an undefined name is taken from the whole
computation, as the parser does; it may still suggest an instruction whose own line
was just broken, until the full analysis).

`quick_problems` returns None whenever the edit is not of this kind (lines added
or removed, a computation header or parameter changed, an instruction renamed, a
bracket, string or comment left open, a line ending in ',' or '=', a changed
result of a computation, operands defined later...): the caller then waits for
the full analysis, which always follows and has the last word.
"""
from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass
from typing import Optional

from ..analysis.checker import check_module
from ..diagnostics import HloError
from ..ir import Computation
from ..text.parser import parse_module_with_recovery
from ..text.printer import format_computation
from ..shapes import format_shape
from ..analysis.loading import without_cascades
from .analysis import Analysis, Problem, Related, _problem
from .index import INSTRUCTION, USE, CompEntry, InstrEntry, build_index
from .text import token_end
from ..opcodes import Op

MAX_RECHECKED = 40               # instructions re-checked for one edit
MAX_CALLEE_INSTRUCTIONS = 4000   # size of the computations copied into a small module
_CHUNK = 1 << 16
_INSTRUCTION_LINE = re.compile(r"[ \t]*(ROOT[ \t]+)?%?([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*=(?!=)")
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*')


@dataclass(frozen=True)
class Edit:
    """The changed region: text[start:old_end] of the old text became new[start:new_end]."""
    start: int
    old_end: int
    new_end: int

    @property
    def delta(self) -> int:
        return self.new_end - self.old_end


def find_edit(old: str, new: str) -> Edit:
    """The smallest region whose replacement turns old into new (common prefix and suffix kept)."""
    limit = min(len(old), len(new))
    start = _common_prefix(old, new, limit)
    tail_limit = limit - start
    suffix = _common_suffix(old, new, tail_limit)
    return Edit(start, len(old) - suffix, len(new) - suffix)


def _common_prefix(a: str, b: str, limit: int) -> int:
    i = 0
    while i + _CHUNK <= limit and a[i:i + _CHUNK] == b[i:i + _CHUNK]:
        i += _CHUNK
    lo, hi = i, min(i + _CHUNK, limit)
    while lo < hi:  # the first difference is in a[lo:hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    n = 0
    la, lb = len(a), len(b)
    while n + _CHUNK <= limit and a[la - n - _CHUNK:la - n] == b[lb - n - _CHUNK:lb - n]:
        n += _CHUNK
    lo, hi = n, min(n + _CHUNK, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _NotQuick(Exception):
    """The edit needs a full analysis."""


@dataclass
class _Line:
    old_start: int      # the line in the old text (without its line break)
    old_end: int
    new_start: int      # the same line in the new text
    new_end: int


class LineChanges:
    """The lines that differ between two texts with the same number of lines, and how offsets move."""

    def __init__(self, old: str, new: str, edit: Edit):
        first = old.rfind("\n", 0, edit.start) + 1
        last_old = old.find("\n", edit.old_end)
        last_old = len(old) if last_old < 0 else last_old
        last_new = last_old + (len(new) - len(old))
        old_lines = old[first:last_old].split("\n")
        new_lines = new[first:last_new].split("\n")
        self.lines: list[_Line] = []
        old_pos = new_pos = first
        for before, after in zip(old_lines, new_lines):
            if before != after:
                self.lines.append(_Line(old_pos, old_pos + len(before), new_pos, new_pos + len(after)))
            old_pos += len(before) + 1
            new_pos += len(after) + 1
        self._starts = [line.old_start for line in self.lines]
        self._new_starts = [line.new_start for line in self.lines]
        self.by_old_start = {line.old_start: line for line in self.lines}

    def to_new(self, old_offset: int) -> int:
        """Where an offset of the old text is in the new text (inside a changed line: clamped to it)."""
        i = bisect.bisect_right(self._starts, old_offset) - 1
        if i < 0:
            return old_offset
        line = self.lines[i]
        if old_offset <= line.old_end:
            return min(line.new_start + (old_offset - line.old_start), line.new_end)
        return old_offset + (line.new_end - line.old_end)

    def to_old(self, new_offset: int, clamp: bool = False) -> Optional[int]:
        """Where an offset of the new text was in the old text (inside a changed line: None, or with clamp
        the same column of the old line, as far as it goes)."""
        i = bisect.bisect_right(self._new_starts, new_offset) - 1
        if i < 0:
            return new_offset
        line = self.lines[i]
        if new_offset <= line.new_end:
            return min(line.old_start + (new_offset - line.new_start), line.old_end) if clamp else None
        return new_offset - (line.new_end - line.old_end)


def line_changes(old: str, new: str) -> Optional[LineChanges]:
    """The changed lines between two texts, or None if lines were added or removed."""
    if old.count("\n") != new.count("\n"):
        return None
    return LineChanges(old, new, find_edit(old, new))


# --------------------------------------------------------------------------- the fast path


def quick_problems(base: Analysis, text: str) -> Optional[list[Problem]]:
    """The problems of `text`, computed from `base` (the analysis of an earlier text), or None."""
    if base.module is None or base.text is text:
        return None if base.module is None else base.problems
    changes = line_changes(base.text, text)
    if changes is None:
        return None  # lines were added or removed
    if not changes.lines:
        return base.problems
    try:
        return _Rechecker(base, text, changes).run()
    except _NotQuick:
        return None


class _Rechecker:
    def __init__(self, base: Analysis, text: str, changes: LineChanges):
        self.base, self.text, self.changes = base, text, changes
        self.index = base.index
        # re-checked instruction (computation number, name) -> its new shape text (None: no longer built)
        self.new_shapes: dict[tuple[int, str], Optional[str]] = {}
        self.rechecked_lines: dict[int, _Line] = {}
        self.problems: list[Problem] = []

    def run(self) -> list[Problem]:
        if len(self.changes.lines) > MAX_RECHECKED:
            raise _NotQuick()
        for line in self.changes.lines:
            if line.old_start not in self.rechecked_lines:
                self.changed_line(line)
        return self.assemble()

    def changed_line(self, line: _Line) -> None:
        inst = self.single_instruction_on(line)
        new_line = self.text[line.new_start:line.new_end]
        _require_plain_line(new_line)
        if _masked(new_line).rstrip().endswith(("=", ",")):
            raise _NotQuick()  # the statement goes on to the next line: the parser's recovery decides how
        if inst is None:
            if _masked(new_line).strip():
                raise _NotQuick()  # a new statement where there was none
            self.rechecked_lines[line.old_start] = line
            return
        m = _INSTRUCTION_LINE.match(new_line)
        if m is None or bool(m.group(1)) != inst.is_root or m.group(2) != inst.name:
            raise _NotQuick()  # no longer the same instruction
        self.recheck(inst, line)

    # ---- lines
    def line_at(self, old_offset: int) -> _Line:
        old = self.base.text
        start = old.rfind("\n", 0, old_offset) + 1
        if start in self.changes.by_old_start:
            return self.changes.by_old_start[start]
        end = old.find("\n", old_offset)
        end = len(old) if end < 0 else end
        return _Line(start, end, self.to_new(start), self.to_new(end))

    def to_new(self, old_offset: int) -> int:
        return self.changes.to_new(old_offset)

    def single_instruction_on(self, line: _Line) -> Optional[InstrEntry]:
        found = self.index.instructions_between(line.old_start, line.old_end)
        if len(found) > 1:
            raise _NotQuick()
        if not found:
            comp = self.index.computation_at(line.old_start)
            closed = comp is not None and comp.close >= 0
            if not (closed and comp.header_end <= line.old_start and line.old_end < comp.close):
                raise _NotQuick()
            return None
        inst = found[0]
        if inst.end > line.old_end or inst.opcode == Op.PARAMETER:
            raise _NotQuick()
        return inst

    # ---- re-checking instructions
    def recheck(self, inst: InstrEntry, line: _Line) -> None:
        if len(self.rechecked_lines) >= MAX_RECHECKED:
            raise _NotQuick()
        self.rechecked_lines[line.old_start] = line
        old_shape = self.old_shape(inst)
        new_shape, line_problems = self.check_line(inst.computation, line)
        self.problems.extend(line_problems)
        self.new_shapes[(inst.computation.number, inst.name)] = new_shape
        if new_shape == old_shape:
            return
        if inst.is_root or inst is inst.computation.instructions[-1]:
            raise _NotQuick()  # the computation's result changed: its callers must be checked again
        for user in self.users(inst):
            user_line = self.line_at(user.start)
            if self.single_instruction_on(user_line) is not user:
                raise _NotQuick()
            if user_line.old_start in self.rechecked_lines:
                continue
            if user_line.old_start in self.changes.by_old_start:
                self.changed_line(user_line)  # edited too: checked as such
            else:
                self.recheck(user, user_line)

    def users(self, inst: InstrEntry) -> list[InstrEntry]:
        users = []
        for occ in self.index.occurrences_of(inst.definition):
            if occ.role == USE:
                user = self.index.instruction_at(occ.start)
                if user is not None and user is not inst and user not in users:
                    users.append(user)
        return users

    def old_shape(self, inst: InstrEntry) -> Optional[str]:
        ir = self.base.instruction_ir(inst)
        return format_shape(ir.shape) if ir is not None and ir.shape is not None else None

    def check_line(self, comp: CompEntry, line: _Line) -> tuple[Optional[str], list[Problem]]:
        """(new shape of the line's instruction, its problems in new-text offsets), via a small module."""
        line_text = self.text[line.new_start:line.new_end]
        names, callees = _references(line_text)
        anchors: list[tuple[int, int, int]] = []   # (start, end) in the small module -> offset in the new text
        head = "HloModule quick_check\n\n" + self.callee_text(callees, anchors) + "ENTRY %quick_check.entry {\n"
        number = 0
        for name in names:
            param = self.parameter_line(comp, name, line, number)
            if param is not None:
                anchors.append((len(head), len(head) + len(param[0]), param[1]))
                head += param[0]
                number += 1
        # The next line of the file follows, so that an unclosed ')' is reported as in the file.
        small = head + line_text + "\n" + self.following_line(line) + "}\n"
        module, diagnostics = parse_module_with_recovery(small, "<quick>")
        problems = [_problem(d, small, "parser") for d in diagnostics]
        if module is not None:
            try:
                check_module(module)
            except HloError as exc:
                problems += [_problem(d, small, "checker") for d in exc.diagnostics]
        problems = without_cascades(_parser_first(problems, len(head), len(head) + len(line_text)), small,
                                    offset_of=lambda p: p.start)
        problems = [p for p in problems if not self.about_broken_operand(p, comp)]
        mapped = [self.map_problem(_with_hint(p, comp), len(head), line, anchors) for p in problems]
        return _shape_of_line(module, len(head), len(head) + len(line_text)), [p for p in mapped if p is not None]

    def following_line(self, line: _Line) -> str:
        start = line.new_end + 1
        end = self.text.find("\n", start)
        following = self.text[start:len(self.text) if end < 0 else end]
        if _INSTRUCTION_LINE.match(following) and _masked(following).count("{") == _masked(following).count("}"):
            return following + "\n"
        return ""

    def about_broken_operand(self, p: Problem, comp: CompEntry) -> bool:
        """'use of undefined instruction' for an operand whose own line is now broken (dropped, as in a full
        analysis)."""
        m = _UNDEFINED.match(p.message)
        return m is not None and self.new_shapes.get((comp.number, m.group(2)), "") is None

    def parameter_line(self, comp: CompEntry, name: str, line: _Line, number: int) -> Optional[tuple[str, int]]:
        """(`%name = shape parameter(N)` standing for an operand, where the operand is defined in the new text);
        None for a name defined nowhere (the small module then reports it as the file would)."""
        target = comp.instruction_named(name)
        if target is None:
            if any(p.name == name for p in comp.params) or self.index.computation_named(name) is not None:
                raise _NotQuick()
            return None
        if target.start >= line.old_start:
            raise _NotQuick()  # defined later: let the full analysis word it
        target_line = self.line_at(target.start)
        if target_line.old_start in self.changes.by_old_start and target_line.old_start not in self.rechecked_lines:
            self.changed_line(target_line)  # an edited operand (reached through a user first): its new shape
        if (comp.number, name) in self.new_shapes:
            shape = self.new_shapes[(comp.number, name)]
            if shape is None:
                return None  # its line is broken now: left undefined, and the complaint dropped (see check_line)
        else:
            ir = self.base.instruction_ir(target)
            shape = format_shape(ir.shape) if ir is not None and ir.shape is not None else None
        if shape is None:
            raise _NotQuick()
        return f"  %{name} = {shape} parameter({number})\n", self.to_new(target.name_token)

    def callee_text(self, names: list[str], anchors: list) -> str:
        """The printed computations the line calls, callees first (so that every name is defined before use).

        Each printed line is anchored to the instruction (or computation) of the new text it stands for."""
        module = self.base.module
        by_name = {c.name: c for c in module.computations}
        order: list[Computation] = []
        seen: set[int] = set()

        def visit(comp: Computation) -> None:
            if id(comp) in seen:
                return
            seen.add(id(comp))
            if comp.async_wrapped or comp.root is None:
                raise _NotQuick()
            for inst in comp.instructions:
                for callee in inst.called_computations():
                    visit(callee)
            order.append(comp)

        for name in names:
            if name not in by_name or self.index.computation_named(name) is None:
                raise _NotQuick()
            visit(by_name[name])
        if sum(len(c.instructions) for c in order) > MAX_CALLEE_INSTRUCTIONS:
            raise _NotQuick()
        out = []
        pos = len("HloModule quick_check\n\n")
        for comp in order:
            lines = format_computation(comp).split("\n")
            if len(lines) != len(comp.instructions) + 2:
                raise _NotQuick()
            sources = [comp] + list(comp.instructions) + [comp]
            for printed, source in zip(lines, sources):
                if source.loc is not None:
                    anchors.append((pos, pos + len(printed), self.to_new(source.loc.offset)))
                pos += len(printed) + 1
            out.append("\n".join(lines) + "\n\n")
            pos += 1
        return "".join(out)

    def map_problem(self, p: Problem, line_start: int, line: _Line, anchors: list) -> Optional[Problem]:
        length = line.new_end - line.new_start
        if not line_start <= p.start <= line_start + length:
            return None  # a problem of a called computation: the full analysis has it where it belongs
        shift = line.new_start - line_start
        related = []
        for r in p.related:
            if line_start <= r.start <= line_start + length:
                related.append(Related(r.start + shift, r.end + shift, r.message))
                continue
            target = next((new for start, end, new in anchors if start <= r.start < end), None)
            if target is not None:  # a note about an operand or a called computation: at its definition
                related.append(Related(target, token_end(self.text, target), r.message))
        return Problem(p.start + shift, p.end + shift, p.message, p.severity, p.source, related)

    # ---- the result
    def assemble(self) -> list[Problem]:
        replaced = [(line.old_start, line.old_end) for line in self.rechecked_lines.values()]
        kept = []
        for p in self.base.problems:
            if any(s <= p.start <= e for s, e in replaced):
                continue
            kept.append(self.moved(p))
        return sorted(kept + self.problems, key=lambda p: (p.start, p.end))

    def moved(self, p: Problem) -> Problem:
        related = [Related(self.to_new(r.start), self.to_new(r.end), r.message) for r in p.related]
        return Problem(self.to_new(p.start), self.to_new(p.end), p.message, p.severity, p.source, related)


_UNDEFINED = re.compile(r"(use of undefined instruction '%([^']+)')(; did you mean '%[^']+'\?)?$")


def _with_hint(p: Problem, comp: CompEntry) -> Problem:
    """The small module knows few names: suggest a close one from the whole computation, as the parser does."""
    m = _UNDEFINED.match(p.message)
    if m is None:
        return p
    close = difflib.get_close_matches(m.group(2), [i.name for i in comp.instructions], n=1)
    p.message = m.group(1) + (f"; did you mean '%{close[0]}'?" if close else "")
    return p


def _require_plain_line(line: str) -> None:
    """The line must not leave a bracket, string or comment open (the parser's recovery would decide
    how far the statement goes)."""
    masked = _masked(line)
    if '"' in masked or "'" in masked or "/*" in masked:
        raise _NotQuick()
    if any(masked.count(open_) != masked.count(close) for open_, close in ("()", "{}", "[]")):
        raise _NotQuick()


def _masked(line: str) -> str:
    return _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group()), line)


def _references(line: str) -> tuple[list[str], list[str]]:
    """(instruction names, computation names) the line refers to."""
    index = build_index("ENTRY %e {\n" + line + "\n}\n")
    if len(index.instructions) != 1:
        raise _NotQuick()
    names, callees = [], []
    for occ in index.occurrences:
        if occ.role != USE:
            continue
        bucket = names if occ.kind == INSTRUCTION else callees
        if occ.name not in bucket:
            bucket.append(occ.name)
    return names, callees


def _parser_first(problems: list[Problem], line_start: int, line_end: int) -> list[Problem]:
    """As in a full analysis: the checker's problems are dropped on a line the parser reported."""
    parser_on_line = any(p.source == "parser" and line_start <= p.start <= line_end for p in problems)
    return [p for p in problems if p.source == "parser" or not parser_on_line]


def _shape_of_line(module, line_start: int, line_end: int) -> Optional[str]:
    """The shape of the instruction written on the small module's last line (None if it was not built).

    Its name comes first on the line, so it is the one located first (nested instructions are located
    at their opcodes)."""
    if module is None or module.entry is None:
        return None
    on_line = [i for i in module.entry.instructions
               if i.loc is not None and line_start <= i.loc.offset <= line_end and i.opcode != Op.PARAMETER]
    if not on_line:
        return None
    inst = min(on_line, key=lambda i: i.loc.offset)
    return format_shape(inst.shape) if inst.shape is not None else None
