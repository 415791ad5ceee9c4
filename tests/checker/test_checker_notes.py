"""The notes of checker diagnostics, announced in the golden checker files.

tests/golden.py checks each case's errors (`// expected-error@COL {{message}}`); the notes
that point at related definitions (the operand's instruction, a parameter, a ROOT) are
announced the same way, `// expected-note@COL {{message}}` on the line above the line the
note points at, and checked here. Put a line's note announcements above its error
announcements: golden.py takes the first line after an error announcement that is not
another error announcement as the error's line. golden.py compares sets of diagnostics, so
that no case reports an error twice is checked here too.
"""
import re
from pathlib import Path

import pytest

from golden import split_cases
from hlo.analysis.loading import diagnose

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "checker"
_ANNOUNCEMENT = re.compile(r"//\s*expected-(error|warning|note)(?:@(\d+))?\s*\{\{(.*)\}\}\s*$")
CASES = [case for path in sorted(GOLDEN.glob("*.hlo")) for case in split_cases(path) if case.run[0] == "check"]


def announced_notes(text: str) -> set[tuple[int, int, str]]:
    """(line, column, message) of each `expected-note`, lines counted in `text` from 1."""
    lines = text.split("\n")
    notes = set()
    for i, line in enumerate(lines):
        m = _ANNOUNCEMENT.search(line)
        if m is None or m.group(1) != "note":
            continue
        target = i + 1
        while target < len(lines) and _ANNOUNCEMENT.search(lines[target]):
            target += 1
        notes.add((target + 1, int(m.group(2)), m.group(3).strip()))
    return notes


def misplaced_notes(text: str) -> list[int]:
    """Lines (from 1) of note announcements that follow an error announcement."""
    kinds = [(m.group(1) if (m := _ANNOUNCEMENT.search(line)) else None) for line in text.split("\n")]
    return [i + 1 for i in range(1, len(kinds)) if kinds[i] == "note" and kinds[i - 1] in ("error", "warning")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.path.stem}:{c.name}")
def test_notes_are_announced(case):
    assert not misplaced_notes(case.text), "expected-note lines must come before the expected-error lines"
    got = {(n.loc.line, n.loc.column, n.message)
           for d in diagnose(case.text, case.name).diagnostics for n in d.notes if n.loc is not None}
    wanted = announced_notes(case.text)
    first = case.first_line - 1
    assert got == wanted, ("notes differ (file line, column, message)\n"
                           + "".join(f"  missing:    {l + first}:{c}: {m}\n" for l, c, m in sorted(wanted - got))
                           + "".join(f"  unexpected: {l + first}:{c}: {m}\n" for l, c, m in sorted(got - wanted)))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.path.stem}:{c.name}")
def test_each_error_is_reported_once(case):
    found = [(d.loc.line if d.loc else None, d.loc.column if d.loc else None, d.message)
             for d in diagnose(case.text, case.name).diagnostics]
    assert len(found) == len(set(found)), found
