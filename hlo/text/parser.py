"""HLO text -> IR: the public entry points of the text layer.

Three steps, one module each:
1. records.py: grammar/hlo.lark, compiled by Lark into an LALR(1) table
   (grammar.py, cached on disk) and run by a small driver loop (lalr.py) over
   lexer.py's tokens, turns the text into plain records;
2. builder.py: records -> Module/Computation/Instruction objects: names resolved
   (no forward references), attributes converted with the opcode table, literals
   built, async sugar expanded, every error collected;
3. shapes left out in the text are inferred with hlo.shape_inference (in builder.py).

A syntax error does not stop the parse: recovery.py blanks the broken line and the
text is parsed again, so that every syntax error in a file is reported at once.

Records of a text are cached here by content hash, so loading the same text again
only rebuilds the IR (the IR itself is never shared between calls).
"""
from __future__ import annotations

import gc
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Optional

from ..diagnostics import Diagnostic, HloError, SourceFile
from ..ir import Module
from .builder import Builder
from .recovery import brace_depth, parse_records, parse_records_recovering

_SURROGATE = re.compile("[\ud800-\udfff]")
_CACHE_LOCK = threading.Lock()
_CACHE: "OrderedDict[tuple[int, int], Any]" = OrderedDict()  # (length, hash) -> (header, comps, text)
_CACHE_MAX_CHARS = 64 * 1024 * 1024
_cache_chars = 0


def clear_parse_cache() -> None:
    """Forget the records of previously parsed texts."""
    global _cache_chars
    with _CACHE_LOCK:
        _CACHE.clear()
        _cache_chars = 0


def _cached_records(text: str, source: SourceFile):
    """(header, computations) records of text, reusing those of an identical earlier text.

    Records are never mutated by the builder, so sharing them is safe.
    """
    global _cache_chars
    key = (len(text), hash(text))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[2] == text:  # (the same hash does not make the same text)
            _CACHE.move_to_end(key)
            return hit[0], hit[1]
    header, comps = parse_records(text, source)
    if len(text) <= _CACHE_MAX_CHARS:
        with _CACHE_LOCK:
            known = _CACHE.get(key)
            if known is None or known[2] != text:
                if known is not None:
                    _cache_chars -= len(known[2])
                _CACHE[key] = (header, comps, text)
                _cache_chars += len(text)
                while _cache_chars > _CACHE_MAX_CHARS and _CACHE:
                    _, old = _CACHE.popitem(last=False)
                    _cache_chars -= len(old[2])
    return header, comps


def parse_module(text: str, filename: str = "<string>") -> Module:
    """Parse HLO text into a Module; raises HloError listing every error found."""
    source = SourceFile(filename, text)
    unparsable = _unparsable(text, source)
    if unparsable is not None:
        raise HloError([unparsable])
    with collections_paused():
        header, comps = _cached_records(text, source)
        builder = Builder(source)
        module = builder.build(header, comps)
    builder.sink.raise_if_any()
    return module


def parse_module_with_recovery(text: str, filename: str = "<string>") -> tuple[Optional[Module], list[Diagnostic]]:
    """The best Module the text gives and every diagnostic found; never raises HloError.

    For editors: broken lines are blanked out as in parse_module (offsets are kept, so
    every location still points into `text`), an unclosed last computation is closed,
    and the rest of the file is built. The module is None only when nothing could be
    built (empty text, or recovery stopped before any computation).
    """
    source = SourceFile(filename, text)
    unparsable = _unparsable(text, source)
    if unparsable is not None:
        return None, [unparsable]
    with collections_paused():
        records, diagnostics = parse_records_recovering(text, source)
        depth = brace_depth(text, len(text)) if records is None else 0
        if depth > 0:  # keep the first pass's diagnostics: they say what is missing
            records, _ = parse_records_recovering(text + "\n" + "}" * depth, source)
        if records is None or not records[1]:
            return None, diagnostics
        builder = Builder(source)
        try:
            module = builder.build(*records)
        except HloError as exc:
            return None, diagnostics + builder.sink.diagnostics + exc.diagnostics
    return module, diagnostics + builder.sink.diagnostics


def _unparsable(text: str, source: SourceFile) -> Optional[Diagnostic]:
    """Why the text cannot be parsed at all (nothing in it, a lone surrogate), or None."""
    if not text or text.isspace():
        return Diagnostic("empty input: expected an HloModule", source.loc(0))
    surrogate = None if text.isascii() else _SURROGATE.search(text)
    if surrogate:
        return Diagnostic(f"invalid character U+{ord(surrogate.group()):04X} (a lone UTF-16 surrogate)",
                          source.loc(surrogate.start()))
    return None


@contextmanager
def collections_paused():
    """Parsing (or rewriting) a module allocates many long-lived objects: garbage collections while
    it runs would only slow it down, and so would the first one after it, which would go through
    every new object. They are moved straight to the oldest generation instead (freeze, then
    unfreeze), which full collections visit anyway; what was dropped meanwhile is collected then."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if gc_was_enabled:
            gc.enable()
