"""Golden-file tests: `.hlo` files under tests/golden/ hold cases and their expected results.

A file starts with a `// RUN:` line saying what to do with each case; cases are separated by
lines `// -----` (as in MLIR's `.mlir` tests). A case is an HLO module, optionally followed by
a line `// ===>` and the expected output. Comment lines starting `// CASE: name` name a case
(the test id); other `//` lines before the module are prose.

RUN modes
  opt PIPELINE [options]   run the pass pipeline (checked after every pass); the output after
                           `// ===>` is the printed result: from `HloModule` the whole module,
                           from `ENTRY` the entry computation, otherwise the module without its
                           header line. Without `// ===>` the pipeline must leave the case as it
                           is, and a pipeline that changes the printed text must say it changed
                           something. Options: --same-outputs (run before and after in the
                           interpreter on random inputs), --seeds=0,1  --rtol=X  --atol=X
                           --ints=LO,HI  --special-floats (NaN, infinities, signed zeros among float
                           inputs)  --exact (outputs bit for bit equal, floats included)
                           --positive=PREFIX (parameters named PREFIX... get values >= 0.5).
  check                    load the case as the tools do (parse with recovery, then check);
                           every diagnostic, and every note of one, must be announced by a
                           comment above its line: `// expected-error@COL {{message}}`,
                           `// expected-note@COL {{message}}` (without @COL: any column), as many
                           times as it is reported; a case without announcements must load cleanly.
  print                    parse and print; the output after `// ===>` is the printed module
                           without its header line (without `// ===>`, the case itself).

A case may start with its own `// RUN:` line to override the file's. `pytest --update-golden`
rewrites the expected outputs of `opt` and `print` cases from what the code now prints.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

SEPARATOR = "// -----"
ARROW = "// ===>"
_EXPECTED = re.compile(r"//\s*expected-(error|warning|note)(?:@(\d+))?\s*\{\{(.*)\}\}\s*$")


@dataclass
class Case:
    path: Path
    name: str
    first_line: int              # 1-based line of the case's first line in the file
    run: list[str]
    text: str                    # the module (with its comment lines)
    expected: Optional[str]      # the text after `// ===>`, or None
    expected_start: int = 0      # 0-based offset of the expected text in the file (for updates)
    expected_end: int = 0


def split_cases(path: Path) -> list[Case]:
    source = path.read_text()
    lines = source.split("\n")
    if not lines or not lines[0].startswith("// RUN:"):
        raise ValueError(f"{path}: the first line must be `// RUN: ...`")
    file_run = shlex.split(lines[0][len("// RUN:"):])
    cases, chunk, start = [], [], 1
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == SEPARATOR:
            cases.append((start, chunk))
            chunk, start = [], i + 1
        else:
            chunk.append(line)
    cases.append((start, chunk))
    out = []
    for index, (start, chunk) in enumerate(cases):
        if not any(l.strip() and not l.strip().startswith("//") for l in chunk):
            continue
        run, name = file_run, f"case{index}"
        for l in chunk:
            if l.startswith("// CASE:"):
                name = l[len("// CASE:"):].strip()
            if l.startswith("// RUN:"):
                run = shlex.split(l[len("// RUN:"):])
        arrow = next((k for k, l in enumerate(chunk) if l.strip() == ARROW), None)
        text = "\n".join(chunk if arrow is None else chunk[:arrow]).strip("\n") + "\n"
        expected, e_start, e_end = None, 0, 0
        if arrow is not None:
            expected = "\n".join(chunk[arrow + 1:]).strip("\n") + "\n"
            e_start = offsets[start + arrow + 1]
            e_end = offsets[start + len(chunk)] - 1
        out.append(Case(path, name, start + 1, run, text, expected, e_start, e_end))
    return out


# --------------------------------------------------------------------------- modes

def _options(args: list[str]) -> dict:
    opts = {}
    for a in args:
        key, _, value = a.lstrip("-").partition("=")
        opts[key.replace("-", "_")] = value if value else True
    return opts


def _printed(module, expected: Optional[str]) -> str:
    from hlo import format_module
    text = format_module(module)
    if expected is not None and expected.startswith("HloModule"):
        return text
    if expected is not None and expected.startswith("ENTRY"):
        return text[text.index("ENTRY"):]
    return text.split("\n", 2)[2]


def run_opt(case: Case, config) -> Optional[str]:
    from pass_testing import assert_same_outputs, body, optimised
    from hlo import format_module, parse_module
    pipeline, opts = case.run[1], _options(case.run[2:])
    after, changed = optimised(case.text, pipeline)
    if "same_outputs" in opts:
        inputs = {}
        if "ints" in opts:
            inputs["ints"] = tuple(int(v) for v in opts["ints"].split(","))
        if "special_floats" in opts:
            inputs["special_floats"] = True
        if "positive" in opts:
            inputs["positive"] = lambda param: param.name.startswith(opts["positive"])
        seeds = tuple(int(s) for s in opts.get("seeds", "0,1").split(","))
        assert_same_outputs(parse_module(case.text), parse_module(format_module(after)), seeds,
                            float(opts.get("rtol", 1e-6)), float(opts.get("atol", 1e-6)),
                            exact="exact" in opts, **inputs)
    actual = _printed(after, case.expected)
    if case.expected is None:
        assert not changed and body(after) == body(case.text), \
            f"`{pipeline}` changed a case that has no `// ===>` output:\n{actual}"
        return None
    assert changed or actual == _printed(parse_module(case.text), case.expected), \
        f"`{pipeline}` changed the module but said it did not"
    return actual


def run_print(case: Case, config) -> Optional[str]:
    from hlo import parse_module
    actual = _printed(parse_module(case.text), case.expected)
    if case.expected is None:
        # The case is already canonical: it prints as written (header line and comments aside).
        written = [l for l in case.text.split("\n") if not l.lstrip().startswith("//")]
        canonical = "\n".join(written).split("\n", 1)[1].strip("\n") + "\n"
        assert actual.strip("\n") + "\n" == canonical, f"not a fixed point:\n{actual}"
        return None
    return actual


def run_check(case: Case, config) -> None:
    from collections import Counter
    from hlo.analysis.loading import diagnose
    wanted = _announced(case.text)
    diagnosis = diagnose(case.text, f"{case.path.name}:{case.name}")
    got = Counter()
    for d in diagnosis.diagnostics:
        got[_key(d.severity if isinstance(d.severity, str) else "error", d)] += 1
        for note in d.notes:
            if note.loc is not None:
                got[_key("note", note)] += 1
    missing, unexpected = [], []
    for (kind, line, col, message), count in wanted.items():
        # An announcement without a column matches a diagnostic at any column of its line.
        hits = [k for k in got if k[0] == kind and k[1] == line and k[3] == message and (col is None or k[2] == col)]
        for _ in range(count):
            if hits and got[hits[0]]:
                got[hits[0]] -= 1
                if not got[hits[0]]:
                    hits.pop(0)
            else:
                missing.append((kind, line, col, message))
    unexpected = [k for k, n in got.items() for _ in range(n)]
    shift = case.first_line - 1
    assert not missing and not unexpected, (
        "diagnostics differ (file line:column: kind: message)\n"
        + "".join(f"  missing:    {l + shift}:{c}: {k}: {m}\n" for k, l, c, m in sorted(missing, key=str))
        + "".join(f"  unexpected: {l + shift}:{c}: {k}: {m}\n" for k, l, c, m in sorted(unexpected, key=str)))


def _key(kind: str, diagnostic) -> tuple:
    loc = diagnostic.loc
    return (kind, loc.line if loc is not None else 0, loc.column if loc is not None else None, diagnostic.message)


def _announced(text: str):
    """Counter of (kind, line, column or None, message) announced by `// expected-KIND@COL {{...}}`
    comments: each announces a diagnostic on the next line that is not itself an announcement."""
    from collections import Counter
    lines = text.split("\n")
    wanted = Counter()
    for i, line in enumerate(lines):
        m = _EXPECTED.search(line)
        if m:
            target = i + 2  # 1-based number of the next line
            while target <= len(lines) and _EXPECTED.search(lines[target - 1]):
                target += 1
            wanted[(m.group(1), target, int(m.group(2)) if m.group(2) else None, m.group(3).strip())] += 1
    return wanted


MODES = {"opt": run_opt, "print": run_print, "check": run_check}


# --------------------------------------------------------------------------- pytest plumbing

_UPDATES: dict[Path, list[tuple[int, int, str]]] = {}


class GoldenFile(pytest.File):
    def collect(self):
        for case in split_cases(Path(self.path)):
            yield GoldenItem.from_parent(self, name=case.name, case=case)


class GoldenItem(pytest.Item):
    def __init__(self, *, case: Case, **kw):
        super().__init__(**kw)
        self.case = case

    def runtest(self):
        mode = self.case.run[0]
        if mode not in MODES:
            raise ValueError(f"{self.case.path}: unknown RUN mode {mode!r}; known: {', '.join(MODES)}")
        actual = MODES[mode](self.case, self.config)
        if actual is None or actual == self.case.expected:
            return
        if self.config.getoption("update_golden"):
            _UPDATES.setdefault(self.case.path, []).append(
                (self.case.expected_start, self.case.expected_end, actual.rstrip("\n")))
            return
        raise AssertionError(f"output differs from the expected text\n--- expected\n{self.case.expected}"
                             f"--- actual\n{actual}")

    def repr_failure(self, excinfo):
        detail = str(excinfo.value) if excinfo.errisinstance(AssertionError) else excinfo.getrepr(style="short")
        return f"{self.case.path}:{self.case.first_line}: case {self.case.name}\n{detail}"

    def reportinfo(self):
        return self.path, self.case.first_line - 1, f"golden: {self.case.name}"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the expected outputs of golden .hlo cases from the current code")


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".hlo" and "golden" in file_path.parts:
        return GoldenFile.from_parent(parent, path=file_path)
    return None


def pytest_sessionfinish(session):
    for path, edits in _UPDATES.items():
        text = path.read_text()
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        path.write_text(text)
