"""Parsing each syntax feature of the HLO text format into the IR.

The canonical print of every feature is checked by the golden files
tests/golden/printer/*.hlo (text in, canonical text out). The tests here check
what the print does not show: values the parser computes (declared result
shapes, iota device groups, parsed metadata fields, the structure of generic
values, async wrapper computations) and inputs a golden file cannot hold (carriage
returns). Every golden case's print is also checked to be a fixed point.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from golden import split_cases
from hlo import values as V
from hlo.attributes import ConvDims
from hlo.text.parser import parse_module
from hlo.text.printer import format_module

SUM = """%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

"""
PRINTER_CASES = [case for path in sorted((Path(__file__).resolve().parents[1] / "golden" / "printer").glob("*.hlo"))
                 for case in split_cases(path)]


def roundtrip(text: str):
    """(module, canonical text); asserts the canonical text is a fixed point."""
    module = parse_module(text)
    printed = format_module(module)
    again = format_module(parse_module(printed))
    assert again == printed
    return module, printed


def entry(body: str, header: str = "HloModule m", computations: str = "") -> str:
    return f"{header}\n\n{computations}ENTRY %e {{\n{body}\n}}\n"


def root(module):
    return module.entry.root


def inst(module, name):
    for i in module.instructions():
        if i.name == name:
            return i
    raise KeyError(name)


@pytest.mark.parametrize("case", PRINTER_CASES, ids=lambda c: f"{c.path.stem}:{c.name}")
def test_golden_printer_cases_print_a_fixed_point(case):
    roundtrip(case.text)


# --------------------------------------------------------------------------- module header and structure

def test_stack_frame_index():
    text = """HloModule m, entry_computation_layout={()->pred[]}

FileNames
1 "<embedded module>"
2 "experimental/module.py"

FunctionNames
1 "main"
2 "method"

FileLocations
1 {file_name_id=1 function_name_id=1 line=153 end_line=153 column=2 end_column=31}
2 {file_name_id=2 function_name_id=2 line=35 end_line=35 column=2 end_column=24}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}


ENTRY %constant_pred () -> pred[] {
  ROOT %constant = pred[] constant(true), metadata={op_type="const" op_name="opname" stack_frame_id=2}
}
"""
    m, printed = roundtrip(text)
    tables = dict(m.config.stack_frame_index)
    assert list(tables) == ["FileNames", "FunctionNames", "FileLocations", "StackFrames"]
    assert tables["FileNames"][1] == (2, V.Str("experimental/module.py"))
    assert tables["StackFrames"][1][0] == 2
    assert root(m).metadata.get("stack_frame_id") == 2
    assert "StackFrames\n1 {file_location_id=1 parent_frame_id=0}" in printed


def test_computation_signature_forms():
    text = """HloModule m

%with_sig (x: f32[2], y: (s32[], f32[])) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %y = (s32[], f32[]) parameter(1)
  ROOT %n = f32[2]{0} negate(%x)
}

without_sig {
  p = f32[2] parameter(0)
  q = (s32[], f32[]) parameter(1)
  ROOT c = f32[2] call(p, q), to_apply=%with_sig
}

ENTRY %e (p: f32[2], q: (s32[], f32[])) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %q = (s32[], f32[]) parameter(1)
  ROOT %c = f32[2]{0} call(%p, %q), to_apply=%without_sig
}
"""
    m, printed = roundtrip(text)
    sig = m.computation("with_sig")
    assert sig.declared_result_shape.dims == (2,)
    assert m.computation("without_sig").declared_result_shape is None
    assert "%without_sig (p: f32[2], q: (s32[], f32[])) -> f32[2] {" in printed


def test_computation_body_brace_after_result_shape_is_not_a_layout():
    m, _ = roundtrip("HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0} parameter(0)\n}\n")
    assert m.entry.declared_result_shape.dims == (4,)


def test_line_comments_end_at_carriage_returns():
    m, _ = roundtrip("HloModule m\r// Garbage\rENTRY c1 {\r// Foo bar\rROOT c = f32[1]{0} constant({1}) // x\r}")
    assert root(m).name == "c"
    m, _ = roundtrip("HloModule m\r\n// Garbage\r\nENTRY c1 {\r\nROOT c = f32[1]{0} constant({1}) // x\r\n}\r\n")
    assert root(m).name == "c"


# --------------------------------------------------------------------------- attribute values

def test_dim_labels_field_values():
    dims = ConvDims.parse("01bf_10oi->f01b")
    assert (dims.input_batch, dims.input_feature, dims.input_spatial) == (2, 3, (0, 1))
    assert (dims.kernel_output_feature, dims.kernel_input_feature, dims.kernel_spatial) == (2, 3, (1, 0))
    assert (dims.output_feature, dims.output_spatial, dims.output_batch) == (0, (1, 2), 3)


def all_reduce(groups: str):
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n"
                              f"  ROOT %r = f32[8]{{0}} all-reduce(%a), channel_id=3, replica_groups={groups}, "
                              f"use_global_device_ids=true, to_apply=%sum", computations=SUM))
    return root(m), text


@pytest.mark.parametrize("groups,expected", [
    ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7))),
])
def test_iota_replica_groups_list_their_groups(groups, expected):
    r, text = all_reduce(groups)
    assert r.attrs["replica_groups"].groups == expected
    assert f"replica_groups={groups}," in text


def sharded(sharding: str, shape: str = "f32[8]{0}"):
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n  ROOT %r = {shape} copy(%a), sharding={sharding}"))
    return root(m).sharding, text


def test_sharding_values():
    s, _ = sharded("{devices=[2,2]0,1,2,3 last_tile_dim_replicate}")
    assert s.items == (V.Keyed("devices", V.Bracketed((2, 2))), 0, 1, 2, 3, V.Ident("last_tile_dim_replicate"))
    s, _ = sharded("{devices=[2,1,2]<=[2,2]T(1,0)}")
    assert s.items[0].value == V.Iota((2, 1, 2), (2, 2), (1, 0))


def test_metadata_with_all_fields():
    md = ('{op_type="Add" op_name="jit(f)/add" source_file="x.py" source_line=12 source_end_line=13 '
          'source_column=4 source_end_column=9 profile_type={1,2} deduplicated_name="d" scheduling_name="s" '
          'stack_frame_id=1}')
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n  ROOT %r = f32[8]{{0}} copy(%a), metadata={md}"))
    fields = root(m).metadata.fields
    assert fields["op_type"] == "Add" and fields["source_line"] == 12 and fields["profile_type"] == (1, 2)
    assert fields["stack_frame_id"] == 1 and fields["source_end_column"] == 9
    assert f"metadata={md}" in text


def test_metadata_commas_and_escapes():
    m, text = roundtrip(entry('  %a = f32[8]{0} parameter(0)\n'
                              '  ROOT %r = f32[8]{0} copy(%a), metadata={op_name="a\\"b\\n{}",source_line=3}'))
    assert root(m).metadata.get("op_name") == 'a"b\n{}'
    assert 'metadata={op_name="a\\"b\\n{}" source_line=3}' in text


# --------------------------------------------------------------------------- async sugar and the parse cache

def test_async_sugar_custom_call_start_update_done():
    text = """HloModule m
ENTRY e {
  p0 = f32[10]{0} parameter(0)
  s = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-start(p0), async_execution_thread="parallel", custom_call_target="foo"
  u = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-update(s)
  ROOT d = f32[20]{0} custom-call-done(u)
}
"""
    m, printed = roundtrip(text)
    s, u, d = inst(m, "s"), inst(m, "u"), root(m)
    assert (s.opcode, u.opcode, d.opcode) == ("async-start", "async-update", "async-done")
    wrapped = s.attrs["calls"]
    assert wrapped.async_wrapped and wrapped.root.opcode == "custom-call"
    assert wrapped.root.attrs["custom_call_target"] == "foo"
    assert wrapped.execution_thread == "parallel"
    assert u.attrs["calls"] is wrapped and d.attrs["calls"] is wrapped
    assert ('custom-call-start(%p0), async_execution_thread="parallel", custom_call_target="foo"') in printed
    assert "custom-call-update(%s)" in printed and "custom-call-done(%u)" in printed


def test_parse_cache_gives_independent_modules():
    text = entry("  %a = f32[2]{0} parameter(0)\n  ROOT %b = f32[2]{0} negate(%a)")
    first, second = parse_module(text), parse_module(text)
    assert first is not second and root(first) is not root(second)
    root(first).name = "changed"
    assert root(parse_module(text)).name == "b"
    assert format_module(second) == format_module(parse_module(text))
