"""The name index reads ordinary instruction lines from their parts (hlo/lsp/index.py, with the
parser's line fast path) and must find exactly what its walk over every token finds: the same
computations, instructions, attributes and name occurrences, on every test text and on texts
with mutated lines (tests/fastpath_cases.py), broken structure included."""
from __future__ import annotations

import pytest

from fastpath_cases import SHARED_TEXTS, TESTS, TEXTS, mutated_modules, read
from hlo.lsp.index import build_index

_TEXTS = TEXTS + sorted((TESTS.parent / "samples").glob("*.hlo"))


def _occurrence(o) -> tuple:
    return o.start, o.end, o.name, o.kind, o.scope, o.role, o.context


def _instruction(i) -> tuple:
    return (i.name, i.name_token, _occurrence(i.definition), i.start, i.end, i.is_root, i.computation.number,
            i.opcode, i.opcode_start, i.shape_start, i.shape_end, i.operands_open, i.operands_close,
            [_occurrence(o) for o in i.operands],
            [(a.name, a.start, a.value_start, a.value_end) for a in i.attributes])


def _computation(c) -> tuple:
    return (c.number, c.name, c.name_token, _occurrence(c.definition), c.start, c.is_entry, c.header_end,
            c.close, c.end, [_occurrence(p) for p in c.params], [_instruction(i) for i in c.instructions])


def summary(text: str, fast: bool) -> tuple:
    index = build_index(text, fast_lines=fast)
    return (index.header, [_computation(c) for c in index.computations],
            [_occurrence(o) for o in index.occurrences], [_instruction(i) for i in index.instructions])


def assert_same_index(text: str) -> None:
    fast, walked = summary(text, True), summary(text, False)
    assert fast == walked, f"the index differs on {text!r}"


@pytest.mark.parametrize("path", _TEXTS, ids=lambda p: p.name)
def test_texts_index_the_same_with_fast_lines(path):
    assert_same_index(read(path))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TEXTS, reason="the shared corpus is not beside this checkout")
@pytest.mark.parametrize("path", SHARED_TEXTS, ids=lambda p: p.name)
def test_shared_corpus_and_models_index_the_same(path):
    assert_same_index(read(path))


def _broken_structure(text: str) -> list[str]:
    """The text with a computation's '{' or '}' gone, a line glued to the header, or lines outside any body."""
    return [text.replace("{\n", "\n", 1), text.replace("\n}", "\n", 1), text.replace("ENTRY e {\n", "ENTRY e\n"),
            text.replace("HloModule m\n\n", "HloModule m\n"), text.replace("HloModule m\n\nENTRY e {\n", "HloModule\n"),
            text.replace("ENTRY e {\n", "ENTRY\n")]


def test_mutated_lines_index_the_same():
    for n, text in enumerate(mutated_modules(600, seed=7)):
        assert_same_index(text)
        if n % 20 == 0:
            for broken in _broken_structure(text):
                assert_same_index(broken)


@pytest.mark.slow
def test_many_mutated_lines_index_the_same():
    for text in mutated_modules(8000, seed=99):
        assert_same_index(text)
        for broken in _broken_structure(text):
            assert_same_index(broken)
