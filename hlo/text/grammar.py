"""The grammar: grammar/hlo.lark compiled by Lark into an LALR(1) table, cached on disk.

`load_grammar()` builds the Lark object once per process (the rule callbacks are
hlo/text/records.py's `Records`) and installs the grammar's terminal patterns in
the lexer (hlo/text/lexer.py), so it must run before the first `tokenize`.
Building the LALR table takes about 0.1 s, most of a small tool run, so Lark's
compiled table is kept in the cache folder, keyed by the grammar and Lark's version.
"""
from __future__ import annotations

import functools
import hashlib
import threading
from importlib.resources import files
from pathlib import Path
from typing import Optional

import lark as lark_package
from lark import Lark

from ..cache import cache_dir
from .lexer import HloLexer, build_context_regexes, build_token_regex
from .records import Records

_lark_lock = threading.Lock()


def grammar_text() -> str:
    try:
        return (files("hlo_grammar") / "hlo.lark").read_text()
    except (ModuleNotFoundError, FileNotFoundError):  # not installed: the source tree's copy
        return (Path(__file__).resolve().parents[2] / "grammar" / "hlo.lark").read_text()


def _grammar_cache_file(grammar: str) -> Optional[str]:
    """A file for Lark's compiled LALR tables; None (no cache) when the cache folder cannot be created."""
    key = hashlib.sha256(f"{lark_package.__version__}\0{grammar}".encode()).hexdigest()[:24]
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(folder / f"grammar-{key}.lark-cache")


@functools.lru_cache(maxsize=None)
def load_grammar() -> Lark:
    """The Lark parser of grammar/hlo.lark; installs the lexer's regular expressions."""
    with _lark_lock:
        grammar = grammar_text()
        cache = _grammar_cache_file(grammar) or False
        lark = Lark(grammar, parser="lalr", lexer=HloLexer, transformer=Records(), start=["start", "braced"],
                    maybe_placeholders=False, cache=cache)
        patterns = {t.name: t.pattern.to_regexp() for t in lark.terminals}
        HloLexer.token_regex = build_token_regex(patterns)
        HloLexer.context_regexes = build_context_regexes(patterns)
        return lark
