"""Quick diagnostics after line edits equal those of a full analysis, whenever the fast path answers."""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings, strategies as st

from hlo.lsp.analysis import Analysis, analyse
from hlo.lsp.incremental import LineChanges, find_edit, line_changes, quick_problems

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "samples").glob("*.hlo")) + sorted((ROOT / "tests" / "data" / "corpus").glob("*.hlo"))
TEXTS = {p.name: p.read_text() for p in FILES}
WHILE = TEXTS["while_loop.hlo"]


def key(problems):
    return [(p.start, p.end, p.message, [(r.start, r.end, r.message) for r in p.related]) for p in problems]


def quick_and_full(old: str, new: str):
    base = analyse(old, "t.hlo")
    base.index
    return quick_problems(base, new), Analysis(new, "t.hlo").problems


def test_find_edit_and_line_changes():
    edit = find_edit("abc\ndef\nghi", "abc\ndXf\nghi")
    assert (edit.start, edit.old_end, edit.new_end) == (5, 6, 6)
    changes = LineChanges("abc\ndef\nghi", "abc\ndXYf\nghi", find_edit("abc\ndef\nghi", "abc\ndXYf\nghi"))
    assert [(c.old_start, c.old_end, c.new_start, c.new_end) for c in changes.lines] == [(4, 7, 4, 8)]
    assert changes.to_new(9) == 10 and changes.to_old(10) == 9 and changes.to_old(5) is None
    assert changes.to_old(5, clamp=True) == 5
    assert line_changes("a\nb", "a\nb\nc") is None


def test_a_shape_error_and_its_users():
    new = WHILE.replace("%i.1 = s32[] get-tuple-element(%state.1), index=0",
                        "%i.1 = f32[] get-tuple-element(%state.1), index=0")
    quick, full = quick_and_full(WHILE, new)
    assert quick is not None and key(quick) == key(full)
    assert len(full) == 3   # the edited line and both users of %i.1


def test_fixing_the_error_again():
    broken = WHILE.replace("%acc.1 = s32[] add(%acc, %i.1)", "%acc.1 = s32[] ad(%acc, %i.1)")
    quick, full = quick_and_full(broken, WHILE)
    assert quick == [] and full == []


def test_undefined_operand_gets_the_parser_hint():
    new = WHILE.replace("add(%acc, %i.1)", "add(%acc, %i.7)")
    quick, full = quick_and_full(WHILE, new)
    assert key(quick) == key(full)
    assert "did you mean '%i.2'?" in quick[0].message


def test_edits_the_fast_path_leaves_to_a_full_analysis():
    cases = [
        WHILE.replace("%one = s32[] constant(1)", "%one = s32[] constant(1)\n  %two = s32[] constant(2)"),  # new line
        WHILE.replace("%state.1 = (s32[], s32[], s32[]) parameter(0)", "%state.1 = (s32[], s32[]) parameter(0)"),
        WHILE.replace("%acc.1 = s32[] add(%acc, %i.1)", "%acc.2 = s32[] add(%acc, %i.1)"),       # renamed
        WHILE.replace("%acc.1 = s32[] add(%acc, %i.1)", "%acc.1 = s32[] add(%acc, %i.1"),         # open paren
        WHILE.replace("%cond (state:", "%cnd (state:"),                                            # a header
    ]
    for new in cases:
        assert quick_problems(analyse(WHILE, "t.hlo"), new) is None


_NUMBER = re.compile(r"\d+")


def _mutate(line: str, how: int, where: int) -> str:
    if not line:
        return line
    i = where % len(line)
    if how == 0:  # change a number (dimension, index, constant, layout)
        numbers = list(_NUMBER.finditer(line))
        if numbers:
            m = numbers[where % len(numbers)]
            return line[:m.start()] + str(int(m.group()) + 1) + line[m.end():]
        return line
    if how == 1:
        return line[:i] + line[i + 1:]
    if how == 2:
        return line[:i] + "x" + line[i:]
    if how == 3:
        return re.sub(r"\b(add|multiply|maximum|minimum|subtract)\(", "divide(", line, count=1)
    return re.sub(r"%([\w.\-]+)\)", r"%\1x)", line, count=1)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(TEXTS)), edits=st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 4), st.integers(0, 10_000)), min_size=1, max_size=2))
@example(name="bf16_matmul.hlo", edits=[(154, 0, 2), (226, 0, 1)])  # a user re-checked before its edited operand
def test_quick_problems_equal_full_ones(name, edits):
    text = TEXTS[name]
    lines = text.split("\n")
    for line_no, how, where in edits:
        k = line_no % len(lines)
        lines[k] = _mutate(lines[k], how, where)
    new = "\n".join(lines)
    quick, full = quick_and_full(text, new)
    if quick is not None:  # the "did you mean" hint may still name an instruction whose line is now broken
        assert without_hints(key(quick)) == without_hints(key(full))


def without_hints(keys):
    return [(s, e, _HINT.sub("", m), r) for s, e, m, r in keys]


_HINT = re.compile(r"; did you mean '%[^']*'\?$")
