"""One analysis of a document text: the recovered module, its problems and its name index.

`analyse(text, filename)` parses with recovery and checks (hlo.analysis.loading.diagnose),
runs the checker on whatever module came out, and turns every diagnostic into a
`Problem` with an exact character range (the token at the diagnostic's location).
Analyses are cached by content hash, so asking again for an unchanged text (a
hover after the diagnostics, a save, a reopened file) costs nothing; the name
index is built on first use and then kept with the analysis.

Cascades are pruned: the checker's complaints on a line the parser already
reported are dropped, and "use of undefined instruction '%x'" is dropped when
%x is defined on a line the parser had to blank out.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..diagnostics import Diagnostic
from ..ir import Computation, Instruction, Module
from ..analysis.loading import diagnose
from .index import CompEntry, DocumentIndex, IndexingStopped, InstrEntry, build_index
from .text import LineIndex, token_end

log = logging.getLogger(__name__)


@dataclass
class Related:
    start: int
    end: int
    message: str


@dataclass
class Problem:
    """A diagnostic as a character range of the document."""
    start: int
    end: int
    message: str
    severity: str = "error"                  # error, warning, note
    source: str = "parser"                   # parser or checker
    related: list[Related] = field(default_factory=list)


class Analysis:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.module, self.problems = _diagnose(text, filename)
        self._lock = threading.Lock()
        self._index: Optional[DocumentIndex] = None
        self._lines: dict[str, LineIndex] = {}
        self._instructions: Optional[dict[int, Instruction]] = None
        self._computations: Optional[dict[int, Computation]] = None

    @property
    def has_index(self) -> bool:
        return self._index is not None

    @property
    def index(self) -> DocumentIndex:
        with self._lock:
            if self._index is None:
                self._index = build_index(self.text)
            return self._index

    def build_index_unless(self, should_stop: Callable[[], bool]) -> bool:
        """Build the name index ahead of need, giving up (False) as soon as should_stop() says so."""
        with self._lock:
            if self._index is None:
                try:
                    self._index = build_index(self.text, should_stop)
                except IndexingStopped:
                    return False
            return True

    def lines(self, encoding: str) -> LineIndex:
        with self._lock:
            if encoding not in self._lines:
                self._lines[encoding] = LineIndex(self.text, encoding)
            return self._lines[encoding]

    def instruction_ir(self, entry: InstrEntry) -> Optional[Instruction]:
        """The IR instruction built from an indexed instruction (None if the parser could not build it)."""
        if self._instructions is None:
            self._map_ir()
        return self._instructions.get(entry.name_token)

    def computation_ir(self, entry: CompEntry) -> Optional[Computation]:
        if self._computations is None:
            self._map_ir()
        return self._computations.get(entry.name_token)

    def _map_ir(self) -> None:
        instructions, computations = {}, {}
        if self.module is not None:
            for comp in self.module.computations:
                if comp.loc is not None and not comp.async_wrapped:
                    computations.setdefault(comp.loc.offset, comp)
                for inst in comp.instructions:
                    if inst.loc is not None and not comp.async_wrapped:
                        instructions.setdefault(inst.loc.offset, inst)
        self._instructions, self._computations = instructions, computations


# --------------------------------------------------------------------------- diagnostics


def _diagnose(text: str, filename: str) -> tuple[Optional[Module], list[Problem]]:
    try:
        diagnosis = diagnose(text, filename)
    except Exception:  # a parser or checker bug must not take the server down
        log.exception("diagnose failed")
        return None, [Problem(0, 0, "internal error in the parser or checker (see the server log)")]
    problems = [_problem(d, text, "parser") for d in diagnosis.parser]
    problems += [_problem(d, text, "checker") for d in diagnosis.checker]
    problems.sort(key=lambda p: (p.start, p.end))
    return diagnosis.module, problems




def _problem(diag: Diagnostic, text: str, source: str) -> Problem:
    start, end = _extent(diag, text)
    related = []
    extra = []
    for note in diag.notes:
        if note.loc is not None:
            ns, ne = _extent(note, text)
            related.append(Related(ns, ne, note.message))
        else:
            extra.append(note.message)
    message = diag.message + "".join(f"\n{m}" for m in extra)
    return Problem(start, end, message, diag.severity, source, related)


def _extent(diag: Diagnostic, text: str) -> tuple[int, int]:
    if diag.loc is None:
        return 0, 0
    offset = min(diag.loc.offset, len(text))
    return offset, token_end(text, offset)


# --------------------------------------------------------------------------- the cache

_CACHE_SIZE = 4   # analyses of large files are big: keep the current texts and a few recent ones
_cache: "OrderedDict[tuple[str, bytes], Analysis]" = OrderedDict()
_cache_lock = threading.Lock()


_last_hashed: tuple = (None, b"")   # (text object, its hash): requests about one text hash it once


def content_key(text: str, filename: str) -> tuple[str, bytes]:
    """The cache key of a text: its file name and content hash."""
    global _last_hashed
    last_text, digest = _last_hashed
    if last_text is not text:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()
        _last_hashed = (text, digest)
    return filename, digest


def cached_analysis(text: str, filename: str) -> Optional[Analysis]:
    with _cache_lock:
        found = _cache.get(content_key(text, filename))
        if found is not None:
            _cache.move_to_end(content_key(text, filename))
        return found


def analyse(text: str, filename: str = "<document>") -> Analysis:
    """The analysis of text (from the cache when the same text was analysed before)."""
    key = content_key(text, filename)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    analysis = Analysis(text, filename)
    with _cache_lock:
        _cache[key] = analysis
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return analysis
