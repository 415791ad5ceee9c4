"""Formatting with the canonical printer never loses a comment: it keeps it or refuses and says why."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hlo import format_module, parse_module
from hlo.lsp.formatting import format_text

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "samples").glob("*.hlo")) + sorted((ROOT / "tests" / "data" / "corpus").glob("*.hlo"))
TEXTS = {p.name: p.read_text() for p in FILES}

MESSY = """\
// A file comment.
HloModule messy   // after the header

/* Before the computation,
   over two lines. */
%add (a: f32[], b: f32[]) -> f32[] {   // after the brace
  %a = f32[] parameter(0)
  // before %b
  %b = f32[]   parameter(1)
  ROOT %s = f32[] add(%a,%b) /* after the root */
  // before the closing brace
}  // after the closing brace

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
}
// The end.
"""

EXPECTED = """\
// A file comment.
HloModule messy, entry_computation_layout={(f32[4]{0})->f32[]}  // after the header

/* Before the computation,
   over two lines. */
%add (a: f32[], b: f32[]) -> f32[] {  // after the brace
  %a = f32[] parameter(0)
  // before %b
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)  /* after the root */
  // before the closing brace
}  // after the closing brace

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
}
// The end.
"""


def test_comments_stay_with_their_statements():
    result = format_text(MESSY)
    assert result.text == EXPECTED
    assert format_text(EXPECTED).text == EXPECTED   # idempotent


def test_without_comments_it_is_the_printer():
    text = TEXTS["cond_switch.hlo"]
    assert format_text(text).text == format_module(parse_module(text))


def test_the_printers_index_markers_are_not_user_comments():
    operands = ", ".join(f"%p{i}" for i in range(6))
    params = "\n".join(f"  %p{i} = f32[] parameter({i})" for i in range(6))
    text = (f"HloModule t\n\nENTRY %e {{\n{params}\n  ROOT %t = (f32[], f32[], f32[], f32[], f32[], f32[]) "
            f"tuple({operands.replace(', %p5', ', /*index=5*/%p5')})\n}}\n")
    assert format_text(text).text == format_module(parse_module(text))


def test_refuses_a_comment_inside_a_statement():
    text = MESSY.replace("reduce(%x, %zero)", "reduce(%x, /* init */ %zero)")
    result = format_text(text)
    assert result.text is None
    assert "'/* init */' is inside a statement" in result.reason
    assert result.offset == text.index("/* init */")


def test_refuses_a_file_with_errors():
    result = format_text(MESSY.replace("parameter(1)", "parameter(1"))
    assert result.text is None and "the file has errors" in result.reason and result.errors


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_formatting_is_idempotent(name):
    once = format_text(TEXTS[name]).text
    assert once is not None and format_text(once).text == once


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(TEXTS)),
       inserts=st.lists(st.tuples(st.integers(0, 10_000), st.booleans(), st.sampled_from(["//", "/*"])),
                        min_size=1, max_size=4))
def test_every_comment_survives(name, inserts):
    lines = TEXTS[name].split("\n")
    comments = []
    for n, (line_no, own_line, style) in enumerate(inserts):
        k = line_no % len(lines)
        comment = f"// note {n}" if style == "//" else f"/* note {n} */"
        comments.append(comment)
        if own_line:
            lines.insert(k, comment)
        elif "//" in lines[k]:
            lines.insert(k + 1, comment)   # nothing may follow a line comment on its line
        else:
            lines[k] += "  " + comment
    text = "\n".join(lines)
    result = format_text(text)
    if result.text is None:  # only when a comment sits inside a multi-line statement
        assert "inside a statement" in result.reason
        return
    for comment in comments:
        assert result.text.count(comment) == 1
    assert format_module(parse_module(result.text)) == format_module(parse_module(TEXTS[name]))
    assert format_text(result.text).text == result.text
