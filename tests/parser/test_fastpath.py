"""The line fast path (hlo/text/fastpath.py) gives exactly the grammar's records.

Every text is parsed twice, with the fast path and without it, and the results must be
identical: the same records (every field, positions and value types included: 1, True and
-0 differ) or the same diagnostics. The texts are every module of the project's corpus
copies, parser seeds, golden files and, when the checkout has them, the shared corpus and
models; then every instruction line of those on its own, and mutated lines (see
tests/fastpath_cases.py), so that a line the fast path reads differently from the grammar,
or accepts where the grammar fails, shows.
"""
from __future__ import annotations

import dataclasses

import pytest

from fastpath_cases import INSTRUCTION_LINE, LINES, SHARED_TEXTS, TESTS, TEXTS, module_of, mutated_modules, read
from hlo.diagnostics import SourceFile
from hlo.shapes import Shape
from hlo.text.fastpath import instruction_runs
from hlo.text.grammar import load_grammar
from hlo.text.recovery import parse_records_fast, parse_records_recovering


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


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(TESTS)))
def test_whole_texts_parse_the_same_with_the_fast_path(path):
    assert_same_parse(read(path))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TEXTS, reason="the shared corpus is not beside this checkout")
@pytest.mark.parametrize("path", SHARED_TEXTS, ids=lambda p: p.name)
def test_shared_corpus_and_models_parse_the_same_with_the_fast_path(path):
    text = read(path)
    assert parse_records_fast(text, SourceFile(path.name, text)) is not None  # no fallback: the fast path ran
    assert_same_parse(text)


def test_the_fast_path_reads_most_lines_of_real_dumps():
    load_grammar()
    texts = [read(p) for p in (TESTS / "data" / "corpus").glob("*.hlo")]
    lines = sum(len(INSTRUCTION_LINE.findall(t)) for t in texts)
    fast = sum(len(records) for t in texts for _, records in instruction_runs(t).values())
    assert fast >= 0.9 * lines, f"the fast path read {fast} of {lines} instruction lines"


def test_every_instruction_line_on_its_own_parses_the_same():
    for line in LINES:
        assert_same_parse(module_of(["  p = f32[] parameter(0)", line]))


def _fuzz(count: int, seed: int) -> None:
    for text in mutated_modules(count, seed):
        try:
            assert_same_parse(text)
        except AssertionError as exc:
            raise AssertionError(f"fast and general parses differ on {text!r}: {exc}") from None


def test_mutated_lines_parse_the_same():
    _fuzz(1500, seed=12)


@pytest.mark.slow
def test_many_mutated_lines_parse_the_same():
    _fuzz(30_000, seed=2024)
