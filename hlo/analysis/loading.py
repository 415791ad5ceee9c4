"""Load a module for a tool: parse and check, reporting every problem of the file at once.

The parser recovers from syntax errors and builds what it can; the checker then runs
on that module, so one run reports syntax errors, undefined names and shape errors
together. Two kinds of follow-up noise are dropped: checker errors on a line the
parser already reported, and "undefined instruction" errors for a name whose defining
line had a syntax error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .checker import check_module
from ..diagnostics import Diagnostic, HloError
from ..ir import Module
from ..progress import Progress
from ..text.parser import parse_module, parse_module_with_recovery

_UNDEFINED = re.compile(r"use of undefined instruction '%([^']+)'")


@dataclass
class Diagnosis:
    """What a text gives: the best module (None if nothing could be built) and the problems."""
    module: Optional[Module]
    parser: list[Diagnostic] = field(default_factory=list)
    checker: list[Diagnostic] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every problem, in source order."""
        return sorted(self.parser + self.checker, key=lambda d: d.loc.offset if d.loc is not None else -1)


def diagnose(text: str, filename: str = "<string>", progress: Optional[Progress] = None) -> Diagnosis:
    """Parse with recovery, check what was built, and drop follow-up errors (telling `progress`)."""
    if progress is not None:
        progress.stage(f"parsing {filename}")
    module, parser = parse_module_with_recovery(text, filename)
    if progress is not None:
        progress.stage(f"checking {filename}")
    checker = _checker_diagnostics(module, text, parser) if module is not None else []
    return Diagnosis(module, without_cascades(parser, text, real_end_of_input_first=True), checker)


def load_module(text: str, filename: str = "<string>", verify: bool = True,
                progress: Optional[Progress] = None) -> Module:
    """Parse (and, with verify, check) a module; HloError with every problem found. `progress`
    (hlo.progress), if given, is told what is being done."""
    if not verify:
        if progress is not None:
            progress.stage(f"parsing {filename}")
        return parse_module(text, filename)
    diagnosis = diagnose(text, filename, progress)
    if diagnosis.diagnostics:
        raise HloError(diagnosis.diagnostics)
    return diagnosis.module


def _checker_diagnostics(module: Module, text: str, parser_diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    try:
        check_module(module)
        return []
    except HloError as exc:
        found = exc.diagnostics
    if not parser_diagnostics:
        return found
    reported = {_line_start(text, d.loc.offset) for d in parser_diagnostics if d.loc is not None}
    return [d for d in found if d.loc is None or _line_start(text, d.loc.offset) not in reported]


def _diagnostic_offset(d: Diagnostic) -> Optional[int]:
    return d.loc.offset if d.loc is not None else None


def without_cascades(diagnostics: list, text: str, offset_of=_diagnostic_offset,
                     real_end_of_input_first: bool = False) -> list:
    """Drop parser errors that only follow from another one.

    'undefined instruction' for a name defined on a line that failed to parse;
    'unexpected end of input' after another error (recovery blanked the lines that
    would have closed the module; with `real_end_of_input_first`, for the parser's own
    list where syntax errors come first in file order, an end of input that is the first
    diagnostic is kept: the '}' is really missing); and 'computation ... has no
    instructions' when a syntax error inside its body blanked its only lines.
    Works on anything with a `.message`; `offset_of` gives an item's offset in `text`
    (the language server passes its own problems).
    """
    broken = [_line(text, offset_of(d)) for d in diagnostics
              if offset_of(d) is not None and not _UNDEFINED.match(d.message)]
    kept = []
    for i, d in enumerate(diagnostics):
        m = _UNDEFINED.match(d.message)
        if m and any(re.match(rf"\s*(ROOT\s+)?%?{re.escape(m.group(1))}\s*=", line) for line in broken):
            continue
        if d.message.startswith("unexpected end of input") and len(diagnostics) > 1 and (
                i > 0 or not real_end_of_input_first):
            continue
        if _EMPTY_COMPUTATION.match(d.message) and _error_inside_body(d, diagnostics, text, offset_of):
            continue
        kept.append(d)
    return kept


_EMPTY_COMPUTATION = re.compile(r"computation '[^']*' has no instructions")
_BODY_END = re.compile(r"^[ \t]*\}", re.M)


def _error_inside_body(empty, diagnostics: list, text: str, offset_of) -> bool:
    """Whether another error lies between an empty computation's header and its closing brace."""
    start = offset_of(empty)
    if start is None:
        return False
    end = _BODY_END.search(text, start)
    end = end.start() if end else len(text)
    return any(d is not empty and offset_of(d) is not None and start < offset_of(d) <= end
               and not _UNDEFINED.match(d.message) for d in diagnostics)


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line(text: str, offset: int) -> str:
    start = _line_start(text, offset)
    end = text.find("\n", offset)
    return text[start:] if end < 0 else text[start:end]
