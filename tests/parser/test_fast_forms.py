"""The forms the line fast path reads without its general attribute loop or operand reader: operands
written `(%a, %b)` and a last `, metadata={...}` checked by string scans (hlo/text/fastpath.py). Each
line here is parsed with the fast path and with the grammar alone, which must agree (records or
diagnostics), with the variations that decide which reader takes a line: braces, quotes and
backslashes inside the metadata's strings, spacing, a carriage return, metadata written twice or
not last, nested braces."""
from __future__ import annotations

import pytest

from fastpath_cases import module_of
from hlo.diagnostics import SourceFile
from hlo.text.fastpath import instruction_runs
from hlo.text.recovery import parse_records_recovering
from test_fastpath import assert_same_parse

_HEAD = '  %x = f32[2]{0} parameter(0)\n  %y = f32[2]{0} parameter(1)'
_ADD = "  %a = f32[2]{0} add(%x, %y)"
_METADATA = [
    'metadata={op_name="jit(f)/add" source_file="m.py" source_line=3}',
    'metadata={op_name="a{b}" source_line=3}',
    'metadata={op_name="a}" source_line=3}',
    'metadata={op_name="a{" source_line=3}',
    'metadata={op_name="a\\"b" source_line=3}',
    'metadata={op_name="a\\\\" source_line=3}',
    'metadata={op_name="a\\\\"}',
    'metadata={op_name="unterminated}',
    'metadata={op_name="a" "b"}',
    'metadata={}',
    'metadata={ }',
    'metadata={op_name="x", metadata={y}}',
    'metadata={profile_type={1,2} op_name="x"}',
    'metadata={op_name="x"}}',
    'metadata={{op_name="x"}',
    'metadata={op_name="x" unknown_field=1}',
    'metadata={op_name="x" source_line=two}',
]
_SUFFIXES = ["", " ", "\t", "\r", "  \r", ", sharding={replicated}", ","]


def _cases():
    for md in _METADATA:
        for suffix in _SUFFIXES:
            yield f"{_ADD}, {md}{suffix}"
        yield f"{_ADD},{md}"
        yield f"{_ADD} ,  {md}"
        yield f"{_ADD}, {md}, {md}"
        yield f"{_ADD}, sharding={{replicated}}, {md}"
        yield f'{_ADD}, backend_config="x, {md}"'
        yield f"{_ADD}, frontend_attributes={{a=\"{md}\"}}, {md}"
        yield f'  %b = f32[2,2]{{1,0}} broadcast(%x), dimensions={{0}}, {md}'


_OPERANDS = ["(%x, %y)", "(%x,%y)", "(%x,  %y)", "( %x, %y)", "(%x, %y )", "(%x, /*index=1*/%y)", "(x, y)",
             "(%x, y)", "(%x, %y,)", "(%x %y)", "(%x, %1)", "(%x.1-a_b, %y)", "()", "(%x)(%y)"]


@pytest.mark.parametrize("line", list(_cases()))
def test_metadata_forms_parse_as_the_grammar_parses_them(line):
    assert_same_parse(module_of([_HEAD, line]))


@pytest.mark.parametrize("operands", _OPERANDS)
def test_operand_forms_parse_as_the_grammar_parses_them(operands):
    for line in (f"  %a = f32[2]{{0}} add{operands}", f"  %a = f32[2]{{0}} add{operands}, metadata={{op_name=\"m\"}}",
                 f"  ROOT %a = f32[2]{{0}} add{operands}"):
        assert_same_parse(module_of([_HEAD, line]))


def test_the_usual_metadata_and_operands_are_read_by_the_fast_path():
    line = f'{_ADD}, metadata={{op_name="jit(f)/add" source_file="m.py" source_line=3}}'
    text = module_of([_HEAD, line])
    records = [r for _, rs in instruction_runs(text).values() for r in rs]
    assert [r.name for r in records] == ["x", "y", "a"]
    add = records[-1]
    assert [(o.name, text[o.pos:o.pos + 2]) for o in add.operands] == [("x", "%x"), ("y", "%y")]
    (name, value, pos), = add.attrs
    assert name == "metadata" and text[pos:].startswith("metadata=") and text[value.offset] == "{"
    records, diagnostics = parse_records_recovering(text, SourceFile("t.hlo", text))
    assert not diagnostics
