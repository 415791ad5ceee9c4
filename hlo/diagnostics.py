"""Source locations and user-facing diagnostics.

Every user error in this project is an `HloError` carrying one or more
`Diagnostic`s, each rendered as

    file:line:col: error: message
      <the source line>
           ^
    file:line:col: note: related definition

Line and column are computed from a byte offset only when a message is shown,
so parsing large files pays nothing for locations it never reports.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Optional


class SourceFile:
    """The text of one input, with lazily built line starts."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text
        self._line_starts: Optional[list[int]] = None

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        self.line_col(0)
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def loc(self, offset: int) -> "SourceLoc":
        return SourceLoc(self, offset)


@dataclass(frozen=True)
class SourceLoc:
    file: SourceFile
    offset: int

    @property
    def line(self) -> int:
        return self.file.line_col(self.offset)[0]

    @property
    def column(self) -> int:
        return self.file.line_col(self.offset)[1]

    def __str__(self) -> str:
        line, col = self.file.line_col(self.offset)
        return f"{self.file.name}:{line}:{col}"


_WRITTEN_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")


def written_name(loc: Optional[SourceLoc], fallback: str) -> str:
    """The instruction name written at `loc`, else `fallback`.

    An instruction's location points at its name; passes that copy instructions (the call
    inliner, cloned computations) give the copies fresh names but keep the location, so
    messages that point at a line should name what is written there."""
    if loc is None:
        return fallback
    match = _WRITTEN_NAME.match(loc.file.text, loc.offset)
    return match.group(1) if match else fallback


@dataclass
class Diagnostic:
    message: str
    loc: Optional[SourceLoc] = None
    severity: str = "error"
    notes: list["Diagnostic"] = field(default_factory=list)

    def render(self) -> str:
        lines = [self._headline()]
        if self.loc is not None:
            lines.extend(_excerpt(self.loc))
        for note in self.notes:
            lines.append(note.render())
        return "\n".join(lines)

    def _headline(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        return f"{where}{self.severity}: {self.message}"


def _excerpt(loc: SourceLoc) -> list[str]:
    line, col = loc.file.line_col(loc.offset)
    text = loc.file.line_text(line)
    if len(text) > 200:  # keep long dump lines readable: show a window around the column
        start = max(0, col - 100)
        text, col = ("..." if start else "") + text[start:start + 200], col - start + (3 if start else 0)
    caret = "".join("\t" if ch == "\t" else " " for ch in text[: col - 1]) + "^"
    return ["  " + text, "  " + caret]


class HloError(Exception):
    """A user error (syntax, shape, attribute, input): one or more diagnostics."""

    def __init__(self, diagnostics, loc: Optional[SourceLoc] = None):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics, loc)]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)

    @property
    def message(self) -> str:
        return self.diagnostics[0].message if self.diagnostics else ""


def error(message: str, loc: Optional[SourceLoc] = None, note: Optional[str] = None,
          note_loc: Optional[SourceLoc] = None) -> HloError:
    """Build an HloError with an optional note pointing at a related location."""
    notes = [Diagnostic(note, note_loc, "note")] if note else []
    return HloError([Diagnostic(message, loc, "error", notes)])


class DiagnosticSink:
    """Collects diagnostics so that every error in a file is reported, not just the first."""

    def __init__(self, limit: int = 200):
        self.diagnostics: list[Diagnostic] = []
        self.limit = limit

    def add(self, diag: Diagnostic) -> None:
        if len(self.diagnostics) < self.limit:
            self.diagnostics.append(diag)

    def extend(self, err: HloError) -> None:
        for d in err.diagnostics:
            self.add(d)

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise HloError(self.diagnostics)

    def __bool__(self) -> bool:
        return bool(self.diagnostics)
