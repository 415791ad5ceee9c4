"""The language server's analysis: problems with exact ranges, cascades pruned, cached by content."""
from __future__ import annotations

from hlo.lsp.analysis import analyse, cached_analysis

TEXT = """\
HloModule a

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} negate(%x)
  %z = f32[4]{0} add(%y, %x)
  ROOT %w = f32[4]{0} multiply(%z, %y)
}
"""


def test_syntax_error_prunes_the_cascade_but_keeps_other_errors():
    text = TEXT.replace("negate(%x)", "negate(%x").replace("multiply(%z, %y)", "multiply(%z, %x), foo=1")
    problems = analyse(text, "a.hlo").problems
    messages = [p.message for p in problems]
    assert len(problems) == 2, messages   # no "use of undefined instruction '%y'" for the broken line's users
    assert "')'" in messages[0] and "foo" in messages[1]
    assert text[problems[1].start:problems[1].end] == "foo"


def test_checker_problems_with_related_notes():
    text = TEXT.replace("add(%y, %x)", "add(%y, f32[2] %x)")
    problems = analyse(text, "b.hlo").problems
    assert len(problems) == 1 and problems[0].source == "parser"
    text = TEXT.replace("%y = f32[4]{0} negate(%x)", "%y = f32[2]{0} negate(%x)")
    problems = analyse(text, "c.hlo").problems
    assert [p.source for p in problems] == ["checker", "checker", "checker"]
    multiply = next(p for p in problems if "multiply" in p.message)
    assert text[multiply.start:multiply.end] == "%y" and multiply.start == text.index("%y)")
    assert [(text[r.start:r.end], r.start) for r in multiply.related] == [("%y", text.index("%y ="))]


def test_analyses_are_cached_by_content():
    first = analyse(TEXT, "d.hlo")
    assert analyse("".join(list(TEXT)), "d.hlo") is first   # an equal text, another string object
    assert cached_analysis(TEXT, "d.hlo") is first
    assert cached_analysis(TEXT + " ", "d.hlo") is None
