"""Shared helpers of the checker tests: run the checker on a module text and summarise
its diagnostics as 'line:col: message' strings (notes as 'note line:col: message').

The cases of single diagnostics are golden files, tests/golden/checker/*.hlo (their notes are
checked by test_checker_notes.py); the Python tests keep what those cannot say (order,
rendering, properties)."""
from __future__ import annotations

import pytest

from hlo import HloError, parse_module
from hlo.analysis.checker import check_module


def _where(diag) -> str:
    return f"{diag.loc.line}:{diag.loc.column}" if diag.loc is not None else "-"


def summarise(diag) -> list[str]:
    """['line:col: message', 'note line:col: message', ...] of one diagnostic."""
    return [f"{_where(diag)}: {diag.message}"] + [f"note {_where(n)}: {n.message}" for n in diag.notes]


def diagnostics_of(text: str) -> list:
    """Every diagnostic the checker reports for `text` (parse errors fail the test)."""
    module = parse_module(text, "test.hlo")
    try:
        check_module(module)
    except HloError as exc:
        return exc.diagnostics
    return []


@pytest.fixture
def check():
    """check(text) -> the summarised diagnostics (one list of lines per diagnostic)."""
    return lambda text: [summarise(d) for d in diagnostics_of(text)]
