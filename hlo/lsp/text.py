"""Positions in a document: offsets <-> LSP (line, character), token extents, comments.

LSP positions count characters in the encoding the client and server agreed on
(UTF-16 code units unless the client offers UTF-8 or UTF-32); for ASCII text all
three equal the code-point offset, which is the fast path.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


class LineIndex:
    """Line starts of a text, for converting offsets to positions and back."""

    def __init__(self, text: str, encoding: str = UTF16):
        self.text = text
        self.encoding = encoding
        self.ascii = text.isascii()
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self.line_starts = starts

    def line_of(self, offset: int) -> int:
        """0-based line of an offset."""
        return bisect.bisect_right(self.line_starts, offset) - 1

    def line_start(self, line: int) -> int:
        return self.line_starts[min(max(line, 0), len(self.line_starts) - 1)]

    def line_end(self, line: int) -> int:
        """Offset of the line's end (before its line break)."""
        if line + 1 < len(self.line_starts):
            end = self.line_starts[line + 1] - 1
            return end - 1 if end > 0 and self.text[end - 1] == "\r" else end
        return len(self.text)

    def position(self, offset: int) -> tuple[int, int]:
        """(line, character) of an offset, both 0-based."""
        offset = min(max(offset, 0), len(self.text))
        line = self.line_of(offset)
        start = self.line_starts[line]
        if self.ascii or self.encoding == UTF32:
            return line, offset - start
        return line, _units(self.text[start:offset], self.encoding)

    def offset(self, line: int, character: int) -> int:
        """Offset of a (line, character) position; clamped into the line."""
        if line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[max(line, 0)]
        end = self.line_end(max(line, 0))
        if self.ascii or self.encoding == UTF32:
            return min(start + max(character, 0), end)
        units = 0
        for i in range(start, end):
            if units >= character:
                return i
            units += _units(self.text[i], self.encoding)
        return end


def _units(text: str, encoding: str) -> int:
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_TOKEN_AT = re.compile(r'%?[A-Za-z_][A-Za-z0-9_.\-]*|-?[0-9][A-Za-z0-9_.]*|"(?:\\.|[^"\\\n])*"?|->|\S')


def token_end(text: str, offset: int) -> int:
    """End of the token starting at offset (a name, number, string or one character)."""
    m = _TOKEN_AT.match(text, offset)
    return m.end() if m else min(offset + 1, len(text))


_NAME_AT = re.compile(r"[A-Za-z0-9_.\-]+")


def word_range(text: str, offset: int) -> tuple[int, int]:
    """The extent of the name-like word (letters, digits, _ . -) around offset."""
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    m = _NAME_AT.match(text, start)
    return start, (m.end() if m else start)


@dataclass(frozen=True)
class Comment:
    start: int
    end: int
    text: str

    @property
    def is_printer_index(self) -> bool:
        """The printer's own `/*index=N*/` operand markers (not the user's)."""
        return _INDEX_MARKER.fullmatch(self.text) is not None


_INDEX_MARKER = re.compile(r"/\*index=[0-9]+\*/")
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/|//[^\n\r]*', re.S)


def comments(text: str) -> list[Comment]:
    """Every `//` and `/* */` comment of the text (strings are skipped)."""
    if "/" not in text:
        return []
    return [Comment(m.start(), m.end(), m.group()) for m in _STRING_OR_COMMENT.finditer(text)
            if m.group()[0] == "/"]


def user_comments(text: str) -> list[Comment]:
    """Comments other than the printer's `/*index=N*/` markers."""
    return [c for c in comments(text) if not c.is_printer_index]
