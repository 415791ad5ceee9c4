"""The line fast path (hlo/text/fastpath.py) gives exactly the grammar's records.

Every text is parsed twice, with the fast path and without it, and the results must be
identical: the same records (every field, positions and value types included: 1, True and
-0 differ) or the same diagnostics. The texts are every module of the project's corpus
copies, parser seeds, golden files and, when the checkout has them, the shared corpus and
models; then every instruction line of those on its own, and mutated lines (characters and
words dropped, doubled, swapped or replaced by ones the fast path looks at), so that a line
the fast path reads differently from the grammar, or accepts where the grammar fails, shows.
"""
from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path

import pytest

from hlo.diagnostics import SourceFile
from hlo.shapes import Shape
from hlo.text.fastpath import instruction_runs
from hlo.text.grammar import load_grammar
from hlo.text.recovery import parse_records_fast, parse_records_recovering

TESTS = Path(__file__).resolve().parent.parent
SHARED = TESTS.parents[1] / "shared"
TEXTS = sorted([*(TESTS / "data" / "corpus").glob("*.hlo"), *(TESTS / "data" / "parser").glob("*.hlo"),
                *(TESTS / "golden").rglob("*.hlo"), *(TESTS / "checker" / "data").rglob("*.hlo")])
SHARED_TEXTS = sorted([*(SHARED / "corpus").glob("*.hlo"), *(SHARED / "models").glob("*.hlo")])
_INSTRUCTION_LINE = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*=.*$", re.M)


def same(a, b, path="records") -> None:
    """Assert a and b are the same records (types and every field, positions included)."""
    if isinstance(a, list) and isinstance(b, list) or isinstance(a, tuple) and isinstance(b, tuple):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
        return
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r} / {b!r})"
    if isinstance(a, Shape) or a is None or isinstance(a, (str, int, float)):
        assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif hasattr(type(a), "__slots__"):
        for slot in type(a).__slots__:
            same(getattr(a, slot), getattr(b, slot), f"{path}.{slot}")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def both_ways(text: str):
    """(records or None, [(offset, message)]) with the fast path and without it."""
    source = SourceFile("t.hlo", text)
    results = []
    for fast in (True, False):
        records, diagnostics = parse_records_recovering(text, source, fast_path=fast)
        results.append((records, [(d.loc.offset if d.loc else None, d.message) for d in diagnostics]))
    return results


def assert_same_parse(text: str) -> None:
    (fast, fast_diags), (slow, slow_diags) = both_ways(text)
    assert fast_diags == slow_diags
    same(fast, slow)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(TESTS)))
def test_whole_texts_parse_the_same_with_the_fast_path(path):
    assert_same_parse(_read(path))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TEXTS, reason="the shared corpus is not beside this checkout")
@pytest.mark.parametrize("path", SHARED_TEXTS, ids=lambda p: p.name)
def test_shared_corpus_and_models_parse_the_same_with_the_fast_path(path):
    text = _read(path)
    assert parse_records_fast(text, SourceFile(path.name, text)) is not None  # no fallback: the fast path ran
    assert_same_parse(text)


def test_the_fast_path_reads_most_lines_of_real_dumps():
    load_grammar()
    texts = [_read(p) for p in (TESTS / "data" / "corpus").glob("*.hlo")]
    lines = sum(len(_INSTRUCTION_LINE.findall(t)) for t in texts)
    fast = sum(len(records) for t in texts for _, records in instruction_runs(t).values())
    assert fast >= 0.9 * lines, f"the fast path read {fast} of {lines} instruction lines"


def _lines() -> list[str]:
    lines = []
    for path in TEXTS + SHARED_TEXTS[:12]:
        lines += _INSTRUCTION_LINE.findall(_read(path))
    return sorted(set(lines))


LINES = _lines()
_WORD = re.compile(r'%?[A-Za-z0-9_.\-]+|"(?:\\.|[^"\\])*"|\s+|.')
_PIECES = list("{}()[],=:*?#<>-/\"'%_.\\ \t") + [
    "ROOT ", "%x", "x", "nan", "inf", "-inf", "true", "false", "f32", "f32[]", "f32[2]{0}", "s32[2]", "pred[]",
    "{0}", "{1,0}", "{}", "{[0:2]}", "{[0:2:1], [1:3]}", "/*index=5*/", "/* c */", "// c", "-0", "0.5", "1e3",
    "3x3", "0_1x1_0", "b01f_01io->b01f", "kLoop", "constant", "parameter", "({1, 2})", "({ {1}, {2} })",
    "metadata=", "backend_config=", "\"s\\\"t\"", "ENTRY", "HloModule", ", ", "\r"]


def mutate_line(line: str, rng: random.Random) -> str:
    if rng.random() < 0.5:  # a character
        chars = list(line)
        i = rng.randrange(len(chars) + 1)
        op = rng.randrange(3)
        if op == 0 and i < len(chars):
            del chars[i]
        elif op == 1:
            chars.insert(i, rng.choice(_PIECES))
        elif i < len(chars):
            chars[i] = rng.choice(_PIECES)
        return "".join(chars)
    words = _WORD.findall(line)
    for _ in range(rng.randint(1, 2)):
        i, j = rng.randrange(len(words)), rng.randrange(len(words))
        op = rng.randrange(4)
        if op == 0:
            del words[i]
        elif op == 1:
            words.insert(i, words[j])
        elif op == 2:
            words[i], words[j] = words[j], words[i]
        else:
            words[i] = rng.choice(_PIECES)
        if not words:
            return ""
    return "".join(words)


def _module(lines: list[str]) -> str:
    return "HloModule m\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def test_every_instruction_line_on_its_own_parses_the_same():
    for line in LINES:
        assert_same_parse(_module(["  p = f32[] parameter(0)", line]))


def _fuzz(count: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(count):
        line = mutate_line(rng.choice(LINES), rng)
        lines = [line] if rng.random() < 0.5 else [line, rng.choice(LINES)]
        text = _module(lines)
        try:
            assert_same_parse(text)
        except AssertionError as exc:
            raise AssertionError(f"fast and general parses differ on {text!r}: {exc}") from None


def test_mutated_lines_parse_the_same():
    _fuzz(1500, seed=12)


@pytest.mark.slow
def test_many_mutated_lines_parse_the_same():
    _fuzz(30_000, seed=2024)
