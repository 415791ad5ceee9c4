"""One test (or more) per syntax feature of the HLO text format.

Every test parses a small module, checks that its canonical print re-parses and
prints identically (a fixed point), and checks the specific IR values the
feature produces.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from hlo import values as V
from hlo.attributes import ConvDims, DotDims, GatherDims, ReplicaGroups, ScatterDims, Window, WindowDim
from hlo.text.parser import parse_module
from hlo.text.printer import format_module
from hlo.shapes import UNBOUNDED, Layout, Tile

SUM = """%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

"""


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


# --------------------------------------------------------------------------- module header

def test_header_name_only():
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)"))
    assert m.name == "m"
    assert text.startswith("HloModule m, entry_computation_layout={(f32[])->f32[]}\n")


def test_header_is_scheduled():
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)", "HloModule m, is_scheduled=true"))
    assert m.config.is_scheduled is True
    assert "is_scheduled=true" in text


def test_header_input_output_alias():
    m, text = roundtrip(entry(
        "  %p = (f32[], f32[]) parameter(0)\n  ROOT %t = (f32[], f32[]) tuple(%p, %p)",
        "HloModule m, input_output_alias={ {0}: (0, {0}, must-alias), {1}: (0, {1}) }"))
    aliases = m.config.input_output_alias
    assert [(a.output_index, a.parameter, a.parameter_index, a.kind) for a in aliases] == [
        ((0,), 0, (0,), "must-alias"), ((1,), 0, (1,), "may-alias")]
    assert "input_output_alias={ {0}: (0, {0}, must-alias), {1}: (0, {1}, may-alias) }" in text


def test_header_nested_alias_index():
    m, _ = roundtrip(entry("  ROOT %p = ((f32[]), f32[]) parameter(0)",
                           "HloModule m, input_output_alias={ {0,0}: (0, {0,0}) }"))
    assert m.config.input_output_alias[0].output_index == (0, 0)


def test_header_buffer_donor():
    m, text = roundtrip(entry("  ROOT %p = (f32[], f32[]) parameter(0)",
                              "HloModule m, buffer_donor={ (0, {0}), (0, {1}) }"))
    assert m.config.buffer_donor == [(0, (0,)), (0, (1,))]
    assert "buffer_donor={ (0, {0}), (0, {1}) }" in text


def test_header_alias_passthrough_params():
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)", "HloModule m, alias_passthrough_params=true"))
    assert m.config.alias_passthrough_params is True
    assert "alias_passthrough_params=true" in text


def test_header_entry_computation_layout_with_index_comment():
    params = ", ".join(["f32[2]{0}"] * 5) + ", /*index=5*/s32[3,2]{0,1}"
    body = "\n".join(f"  %p{i} = f32[2]{{0}} parameter({i})" for i in range(5))
    body += "\n  %p5 = s32[3,2]{0,1} parameter(5)\n  ROOT %r = s32[3,2]{0,1} copy(%p5)"
    m, text = roundtrip(entry(body, f"HloModule m, entry_computation_layout={{({params})->s32[3,2]{{0,1}}}}"))
    layout = m.config.entry_computation_layout
    assert len(layout.parameters) == 6
    assert layout.parameters[5].layout.minor_to_major == (0, 1)
    assert layout.result.dims == (3, 2)
    assert f"entry_computation_layout={{({params})->s32[3,2]{{0,1}}}}" in text


def test_header_spmd_flags_and_counts():
    header = ("HloModule m, allow_spmd_sharding_propagation_to_parameters={false,true}, "
              "allow_spmd_sharding_propagation_to_output=true, replica_count=2, num_partitions=4")
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)", header))
    assert m.config.allow_spmd_sharding_propagation_to_parameters == (False, True)
    assert m.config.allow_spmd_sharding_propagation_to_output == (True,)
    assert (m.config.replica_count, m.config.num_partitions) == (2, 4)
    assert ("allow_spmd_sharding_propagation_to_parameters={false,true}, "
            "allow_spmd_sharding_propagation_to_output={true}, replica_count=2, num_partitions=4") in text


def test_header_frontend_attributes_sorted():
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)",
                              'HloModule m, frontend_attributes={z="1",a={"k":[1,2]}}'))
    assert m.config.frontend_attributes.items["z"] == "1"
    assert m.config.frontend_attributes.items["a"].text == '{"k":[1,2]}'
    assert 'frontend_attributes={a={"k":[1,2]},z="1"}' in text


def test_header_attribute_order_is_canonical():
    header = "HloModule m, num_partitions=2, is_scheduled=true, replica_count=3"
    _, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)", header))
    first = text.splitlines()[0]
    assert first == ("HloModule m, is_scheduled=true, entry_computation_layout={(f32[])->f32[]}, "
                     "replica_count=3, num_partitions=2")


def test_header_name_with_glued_colon():
    m, _ = roundtrip("HloModule no_entry:\nc1 {\n  ROOT c = f32[1]{0} constant({1})\n}\n")
    assert m.name == "no_entry"


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


# --------------------------------------------------------------------------- module structure

def test_headerless_module_with_entry():
    m, text = roundtrip("ENTRY main {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n")
    assert m.name == "module_main"
    assert m.entry.name == "main"
    assert "ENTRY %main (a: f32[]) -> f32[] {" in text


def test_headerless_module_short_form_last_computation_is_entry():
    text = """add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
main {
  a = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add
}
"""
    m, _ = roundtrip(text)
    assert m.name == "module_main"
    assert m.entry.name == "main"
    assert root(m).attrs["to_apply"] is m.computation("add")


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


def test_execution_thread():
    text = """HloModule m

%c (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  ROOT %n = f32[] negate(%p)
}, execution_thread="host"

ENTRY %e (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] call(%x), to_apply=%c
}
"""
    m, printed = roundtrip(text)
    assert m.computation("c").execution_thread == "host"
    assert m.entry.execution_thread == "main"
    assert '}, execution_thread="host"' in printed


def test_implicit_root_is_last_instruction():
    m, _ = roundtrip("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n")
    assert root(m).name == "b"


def test_instructions_share_a_line_and_span_lines():
    m, _ = roundtrip("HloModule m\nENTRY e {\n  a = f32[] parameter(0)  b = f32[] parameter(1) ROOT c = f32[]\n"
                     "   add(a,\n   b)\n}\n")
    assert [o.name for o in root(m).operands] == ["a", "b"]


def test_same_name_in_two_computations_is_uniquified():
    m, _ = roundtrip(entry("  %a = f32[] parameter(0)\n  ROOT %r = f32[] negate(%a)", computations=SUM))
    assert [p.name for p in m.entry.parameters] == ["a.1"]
    assert m.computation("sum").parameters[0].name == "a"


# --------------------------------------------------------------------------- shapes

ALL_ARRAY_TYPES = ["pred", "s1", "s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u16", "u32", "u64",
                   "f16", "bf16", "f32", "f64", "f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4",
                   "f8e5m2fnuz", "f8e4m3fnuz", "f4e2m1fn", "f8e8m0fnu", "c64", "c128"]


@pytest.mark.parametrize("type_name", ALL_ARRAY_TYPES)
def test_every_array_primitive_type(type_name):
    m, text = roundtrip(entry(f"  ROOT %p = {type_name}[3,2]{{0,1}} parameter(0)"))
    shape = root(m).shape
    assert shape.element_type.name == type_name
    assert shape.dims == (3, 2)
    assert shape.layout.minor_to_major == (0, 1)
    assert f"ROOT %p = {type_name}[3,2]{{0,1}} parameter(0)" in text


def test_token_and_opaque_and_nested_tuples():
    body = ("  %t = token[] after-all()\n"
            "  %o = opaque[] parameter(1)\n"
            "  ROOT %p = (f32[], (s32[2]{0}, token[]), ()) parameter(0)")
    m, text = roundtrip(entry(body))
    shape = root(m).shape
    assert shape.is_tuple and len(shape.tuple_shapes) == 3
    assert shape.tuple_shapes[1].tuple_shapes[1].is_token
    assert shape.tuple_shapes[2].tuple_shapes == ()
    assert inst(m, "o").shape.element_type.name == "opaque"
    assert "(f32[], (s32[2]{0}, token[]), ()) parameter(0)" in text


def test_tuple_shape_index_comments():
    shape = "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])"
    m, text = roundtrip(entry(f"  %t = {shape} parameter(0)\n  ROOT %x = f32[] get-tuple-element(%t), index=5"))
    assert len(inst(m, "t").shape.tuple_shapes) == 6
    assert f"%t = {shape} parameter(0)" in text


def test_default_layouts_are_filled():
    m, text = roundtrip(entry("  ROOT %p = f32[2,3,4] parameter(0)"))
    assert root(m).shape.layout.minor_to_major == (2, 1, 0)
    assert "f32[2,3,4]{2,1,0} parameter(0)" in text


def test_tiled_layout_with_several_tiles():
    m, text = roundtrip(entry("  ROOT %p = bf16[8,128]{1,0:T(8,128)(2,1)} parameter(0)"))
    layout = root(m).shape.layout
    assert layout.tiles == (Tile((8, 128)), Tile((2, 1)))
    assert "{1,0:T(8,128)(2,1)}" in text


def test_tile_combine_dimension_star():
    m, text = roundtrip(entry("  ROOT %p = f32[8,128]{1,0:T(2,*)(4)} parameter(0)"))
    assert root(m).shape.layout.tiles == (Tile((2, -1)), Tile((4,)))
    assert "{1,0:T(2,*)(4)}" in text


def test_layout_memory_space_element_size_and_others():
    m, text = roundtrip(entry("  ROOT %p = s4[64,8]{1,0:T(8,128)L(8)#(u32)*(u64)E(4)S(1)} parameter(0)"))
    layout = root(m).shape.layout
    assert layout == Layout((1, 0), tiles=(Tile((8, 128)),), tail_padding_alignment=8, index_type="u32",
                            pointer_type="u64", element_size_bits=4, memory_space=1)
    assert "{1,0:T(8,128)L(8)#(u32)*(u64)E(4)S(1)}" in text


def test_memory_space_alone():
    m, _ = roundtrip(entry("  ROOT %p = f32[2,3]{1,0:S(2)} parameter(0)"))
    assert root(m).shape.layout.memory_space == 2


def test_bounded_and_unbounded_dynamic_dims():
    m, text = roundtrip(entry("  ROOT %p = f32[<=8,?,3]{2,1,0} parameter(0)"))
    shape = root(m).shape
    assert shape.dims == (8, UNBOUNDED, 3)
    assert shape.dynamic == (True, True, False)
    assert "f32[<=8,?,3]{2,1,0}" in text


def test_computation_body_brace_after_result_shape_is_not_a_layout():
    m, _ = roundtrip("HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0} parameter(0)\n}\n")
    assert m.entry.declared_result_shape.dims == (4,)


# --------------------------------------------------------------------------- literals

def constant(text_shape: str, literal: str):
    m, printed = roundtrip(entry(f"  ROOT %c = {text_shape} constant({literal})"))
    return root(m).attrs["literal"], printed


def test_literal_rank1():
    lit, printed = constant("s32[3]", "{1, 2, 3}")
    assert lit.array.tolist() == [1, 2, 3]
    assert "constant({1, 2, 3})" in printed


def test_literal_rank2():
    lit, printed = constant("f32[2,3]", "{ { 1, 2, 3 }, { 4, 5, 6 } }")
    assert lit.array.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert "constant({ { 1, 2, 3 }, { 4, 5, 6 } })" in printed


def test_literal_rank2_single_element_rows():
    lit, printed = constant("s32[2,1]", "{ {1}, {2} }")
    assert lit.array.tolist() == [[1], [2]]
    assert "constant({ {1}, {2} })" in printed


def test_literal_rank3():
    lit, printed = constant("s32[2,1,2]", "{ { { 1, 2 } }, { { 3, 4 } } }")
    assert lit.array.shape == (2, 1, 2)
    assert "constant({ { { 1, 2 } }, { { 3, 4 } } })" in printed


def test_literal_rank4_with_index_comments():
    text = "{ { /*i0=0*/ { /*i1=0*/ {-1} }, { /*i1=1*/ {4.5} } }, { /*i0=1*/ { /*i1=0*/ {2} }, { /*i1=1*/ {3} } } }"
    lit, printed = constant("f32[2,2,1,1]", text)
    assert lit.array.reshape(-1).tolist() == [-1, 4.5, 2, 3]
    assert f"constant({text})" in printed


def test_literal_rank5():
    text = "{ { /*i0=0*/ { /*i1=0*/ { /*i2=0*/ { 1, 2 } } } }, { /*i0=1*/ { /*i1=0*/ { /*i2=0*/ { 3, 4 } } } } }"
    lit, printed = constant("s32[2,1,1,1,2]", text)
    assert lit.array.reshape(-1).tolist() == [1, 2, 3, 4]
    assert f"constant({text})" in printed


def test_literal_index_comments_may_be_omitted_and_commas_are_optional():
    lit, _ = constant("s32[1,1,1,3]", "{{{{1 2 3}}}}")
    assert lit.array.reshape(-1).tolist() == [1, 2, 3]


def test_literal_zero_sized():
    lit, printed = constant("f32[2,0,4,3]", "{ { /*i0=0*/ }, { /*i0=1*/ } }")
    assert lit.array.shape == (2, 0, 4, 3)
    assert "constant({ { /*i0=0*/ }, { /*i0=1*/ } })" in printed
    lit, printed = constant("f32[0]", "{}")
    assert lit.array.shape == (0,)


def test_literal_tuple():
    m, printed = roundtrip(entry("  ROOT %c = (f32[2,1]{1,0}, s32[2]{0}, pred[]) constant(( { {1}, {2} }, {2, 42}, true ))"))
    lit = root(m).attrs["literal"]
    assert lit.is_tuple and len(lit.elements) == 3
    assert lit.elements[1].array.tolist() == [2, 42]
    assert bool(lit.elements[2].array) is True
    assert "constant(( { {1}, {2} }, {2, 42}, true ))" in printed


def test_literal_complex():
    lit, printed = constant("c64[2]", "{(1, 2), (-inf, nan)}")
    assert lit.array[0] == 1 + 2j
    assert math.isinf(lit.array[1].real) and math.isnan(lit.array[1].imag)
    assert "constant({(1, 2), (-inf, nan)})" in printed
    lit, printed = constant("c128[]", "(1.5, -0.25)")
    assert complex(lit.array) == 1.5 - 0.25j


def test_literal_non_finite_values():
    lit, printed = constant("f32[6]", "{nan, 7, -nan, -1, inf, -inf}")
    bits = lit.array.view(np.uint32)
    assert bits[0] == 0x7FC00000 and bits[2] == 0xFFC00000
    assert lit.array[4] == np.inf and lit.array[5] == -np.inf
    assert "constant({nan, 7, -nan, -1, inf, -inf})" in printed


def test_literal_nan_payloads():
    lit, printed = constant("f32[3]", "{nan(0x1), -nan(0x7fff), nan(0x400000)}")
    assert lit.array.view(np.uint32).tolist() == [0x7F800001, 0xFF807FFF, 0x7FC00000]
    assert "constant({nan(0x1), -nan(0x7fff), nan})" in printed
    lit, printed = constant("bf16[1]", "{nan(0x3)}")
    assert lit.array.view(np.uint16).tolist() == [0x7F83]
    assert "constant({nan(0x3)})" in printed


def test_literal_pred_forms():
    lit, printed = constant("pred[4]", "{true, false, 0, 1}")
    assert lit.array.tolist() == [True, False, False, True]
    assert "constant({1, 0, 0, 1})" in printed
    lit, printed = constant("pred[]", "1")
    assert "constant(true)" in printed


def test_literal_elided():
    lit, printed = constant("f32[1024]", "{...}")
    assert lit.elided and lit.array is None
    assert "constant({...})" in printed


def test_literal_negative_zero_keeps_its_sign():
    lit, printed = constant("f32[3]", "{-0, -0.0, 0}")
    assert np.signbit(lit.array).tolist() == [True, True, False]
    assert "constant({-0, -0, 0})" in printed
    lit, _ = constant("s32[]", "-0")
    assert int(lit.array) == 0


def test_literal_float_spellings():
    lit, printed = constant("f32[5]", "{.5, 1., 1e+10, 3.40282347e+38, 0.1}")
    assert lit.array.tolist() == [0.5, 1.0, 1e10, float(np.float32(3.40282347e38)), float(np.float32(0.1))]
    assert "constant({0.5, 1, 1e+10, 3.40282347e+38, 0.1})" in printed


def test_literal_integer_extremes():
    lit, printed = constant("u64[2]", "{0, 18446744073709551615}")
    assert lit.array.tolist() == [0, 2 ** 64 - 1]
    lit, _ = constant("s64[]", "-9223372036854775808")
    assert int(lit.array) == -(2 ** 63)


@pytest.mark.parametrize("type_name,value", [("s4", -8), ("u4", 15), ("s2", -2), ("u2", 3), ("s1", -1), ("u1", 1)])
def test_literal_sub_byte_integers(type_name, value):
    lit, printed = constant(f"{type_name}[2]", f"{{{value}, 0}}")
    assert lit.array.astype(int).tolist() == [value, 0]
    assert f"constant({{{value}, 0}})" in printed


@pytest.mark.parametrize("type_name", ["f16", "bf16", "f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4",
                                       "f8e5m2fnuz", "f8e4m3fnuz", "f4e2m1fn", "f8e8m0fnu"])
def test_literal_small_float_types(type_name):
    lit, printed = constant(f"{type_name}[2]", "{1, 0.5}")
    assert lit.array.astype(np.float64).tolist() == [1.0, 0.5]
    assert "constant({1, 0.5})" in printed


def test_literal_token():
    m, printed = roundtrip(entry("  ROOT %t = token[] after-all()"))
    assert root(m).shape.is_token


# --------------------------------------------------------------------------- attributes: lists and windows

def test_dimensions_lists():
    m, text = roundtrip(entry("  %p = f32[4,4]{1,0} parameter(0)\n"
                              "  ROOT %b = f32[4,3,4]{2,1,0} broadcast(%p), dimensions={0,2}"))
    assert root(m).attrs["dimensions"] == (0, 2)
    assert "dimensions={0,2}" in text
    m, text = roundtrip(entry("  %p = f32[] parameter(0)\n  ROOT %b = f32[4]{0} broadcast(%p), dimensions={}"))
    assert root(m).attrs["dimensions"] == ()
    assert "dimensions={}" in text


def test_window_with_all_fields():
    body = ("  %p = f32[1,9,9,1]{3,2,1,0} parameter(0)\n  %k = f32[3,3,1,1]{3,2,1,0} parameter(1)\n"
            "  ROOT %c = f32[1,5,5,1]{3,2,1,0} convolution(%p, %k), "
            "window={size=3x3 stride=2x1 pad=-1_2x0_0 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=1x0}, "
            "dim_labels=b01f_01io->b01f")
    m, text = roundtrip(entry(body))
    w = root(m).attrs["window"]
    assert w == Window((WindowDim(3, 2, -1, 2, 1, 2, True), WindowDim(3, 1, 0, 0, 2, 1, False)))
    assert "window={size=3x3 stride=2x1 pad=-1_2x0_0 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=1x0}" in text


def test_window_defaults_are_omitted_and_fields_are_order_free():
    body = ("  %p = f32[4]{0} parameter(0)\n  %z = f32[] constant(0)\n"
            "  ROOT %r = f32[2]{0} reduce-window(%p, %z), window={stride=2 size=2 pad=0_0}, to_apply=%sum")
    m, text = roundtrip(entry(body, computations=SUM))
    assert root(m).attrs["window"] == Window((WindowDim(2, 2),))
    assert "window={size=2 stride=2}, to_apply=%sum" in text


@pytest.mark.parametrize("labels,lhs,out", [
    ("b0f_0io->b0f", "f32[1,4,2]", "f32[1,4,1]"),
    ("b012f_012io->b012f", "f32[1,4,4,4,2]", "f32[1,4,4,4,1]"),
    ("01bf_10oi->f01b", "f32[4,4,1,2]", "f32[1,4,4,1]"),
    ("bf_io->bf", "f32[1,2]", "f32[1,1]"),
])
def test_dim_labels_forms(labels, lhs, out):
    n = labels.index("_") - 2
    rhs = "f32[" + ",".join(["1"] * n + ["2", "1"]) + "]"
    if labels.split("_")[1].startswith("10oi"):
        rhs = "f32[1,1,1,2]"
    body = (f"  %p = {lhs} parameter(0)\n  %k = {rhs} parameter(1)\n"
            f"  ROOT %c = {out} convolution(%p, %k), dim_labels={labels}")
    m, text = roundtrip(entry(body))
    dims = root(m).attrs["dim_labels"]
    assert isinstance(dims, ConvDims)
    assert dims.to_text() == labels
    assert f"dim_labels={labels}" in text


def test_dim_labels_field_values():
    dims = ConvDims.parse("01bf_10oi->f01b")
    assert (dims.input_batch, dims.input_feature, dims.input_spatial) == (2, 3, (0, 1))
    assert (dims.kernel_output_feature, dims.kernel_input_feature, dims.kernel_spatial) == (2, 3, (1, 0))
    assert (dims.output_feature, dims.output_spatial, dims.output_batch) == (0, (1, 2), 3)


def test_padding_with_negative_and_interior():
    body = ("  %p = f32[8,2]{1,0} parameter(0)\n  %z = f32[] constant(0)\n"
            "  ROOT %c = f32[12,3]{1,0} pad(%p, %z), padding=-1_2_2x0_1")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["padding"] == ((-1, 2, 2), (0, 1, 0))
    assert "padding=-1_2_2x0_1_0" in text


def test_padding_without_interior():
    body = "  %p = f32[8]{0} parameter(0)\n  %z = f32[] constant(0)\n  ROOT %c = f32[11]{0} pad(%p, %z), padding=1_2"
    m, text = roundtrip(entry(body))
    assert root(m).attrs["padding"] == ((1, 2, 0),)
    assert "padding=1_2" in text


def test_slice_with_and_without_strides():
    m, text = roundtrip(entry("  %p = f32[8,9]{1,0} parameter(0)\n"
                              "  ROOT %s = f32[4,3]{1,0} slice(%p), slice={[0:8:2], [0:9:3]}"))
    assert root(m).attrs["slice"] == ((0, 8, 2), (0, 9, 3))
    assert "slice={[0:8:2], [0:9:3]}" in text
    m, text = roundtrip(entry("  %p = f32[8,9]{1,0} parameter(0)\n"
                              "  ROOT %s = f32[4,3]{1,0} slice(%p), slice={[0:4:1], [1:4]}"))
    assert root(m).attrs["slice"] == ((0, 4, 1), (1, 4, 1))
    assert "slice={[0:4], [1:4]}" in text


def test_dot_dimension_numbers_precision_and_algorithm():
    body = ("  %a = f32[2,3,4]{2,1,0} parameter(0)\n  %b = f32[2,4,5]{2,1,0} parameter(1)\n"
            "  ROOT %d = f32[2,3,5]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
            "rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={HIGH,highest}, "
            "algorithm=dot_f32_f32_f32")
    m, text = roundtrip(entry(body))
    d = root(m)
    assert DotDims.of(d) == DotDims((0,), (2,), (0,), (1,))
    assert d.attrs["operand_precision"] == ("high", "highest")
    assert d.attrs["algorithm"] == "dot_f32_f32_f32"
    assert ("lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, "
            "operand_precision={high,highest}, algorithm=dot_f32_f32_f32") in text


def test_default_precision_is_omitted():
    body = ("  %a = f32[2,3]{1,0} parameter(0)\n  %b = f32[3]{0} parameter(1)\n"
            "  ROOT %d = f32[2]{0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
            "operand_precision={default,default}")
    _, text = roundtrip(entry(body))
    assert "operand_precision" not in text


def test_gather_dimension_numbers():
    body = ("  %a = f32[5,4]{1,0} parameter(0)\n  %i = s32[3,1]{1,0} parameter(1)\n"
            "  ROOT %g = f32[3,4]{1,0} gather(%a, %i), offset_dims={1}, collapsed_slice_dims={0}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true")
    m, text = roundtrip(entry(body))
    assert GatherDims.of(root(m)) == GatherDims((1,), (0,), (0,), 1)
    assert root(m).attrs["slice_sizes"] == (1, 4)
    assert root(m).attrs["indices_are_sorted"] is True
    assert ("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
            "slice_sizes={1,4}, indices_are_sorted=true") in text


def test_gather_batching_dims():
    body = ("  %a = f32[2,5,4]{2,1,0} parameter(0)\n  %i = s32[2,3,1]{2,1,0} parameter(1)\n"
            "  ROOT %g = f32[2,3,4]{2,1,0} gather(%a, %i), offset_dims={2}, collapsed_slice_dims={1}, "
            "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
            "index_vector_dim=2, slice_sizes={1,1,4}")
    m, _ = roundtrip(entry(body))
    assert GatherDims.of(root(m)).operand_batching_dims == (0,)


def test_scatter_dimension_numbers():
    body = ("  %a = f32[5,4]{1,0} parameter(0)\n  %i = s32[3,1]{1,0} parameter(1)\n"
            "  %u = f32[3,4]{1,0} parameter(2)\n"
            "  ROOT %s = f32[5,4]{1,0} scatter(%a, %i, %u), update_window_dims={1}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=true, "
            "unique_indices=true, to_apply=%sum")
    m, text = roundtrip(entry(body, computations=SUM))
    assert ScatterDims.of(root(m)) == ScatterDims((1,), (0,), (0,), 1)
    assert root(m).attrs["to_apply"] is m.computation("sum")
    assert ("update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, indices_are_sorted=true, unique_indices=true, to_apply=%sum") in text


# --------------------------------------------------------------------------- attributes: collectives

def all_reduce(groups: str):
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n"
                              f"  ROOT %r = f32[8]{{0}} all-reduce(%a), channel_id=3, replica_groups={groups}, "
                              f"use_global_device_ids=true, to_apply=%sum", computations=SUM))
    return root(m), text


def test_replica_groups_explicit():
    r, text = all_reduce("{{0,1},{2,3}}")
    assert r.attrs["replica_groups"] == ReplicaGroups(((0, 1), (2, 3)))
    assert r.attrs["channel_id"] == 3 and r.attrs["use_global_device_ids"] is True
    assert "channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum" in text


def test_replica_groups_empty():
    r, text = all_reduce("{}")
    assert r.attrs["replica_groups"].groups == ()
    assert "replica_groups={}" in text


def test_replica_groups_iota():
    r, text = all_reduce("[2,4]<=[8]")
    assert r.attrs["replica_groups"].groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert "replica_groups=[2,4]<=[8]" in text


def test_replica_groups_iota_transposed():
    r, text = all_reduce("[4,2]<=[2,4]T(1,0)")
    assert r.attrs["replica_groups"].groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert "replica_groups=[4,2]<=[2,4]T(1,0)" in text


def test_source_target_pairs():
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  ROOT %r = f32[8]{0} collective-permute(%a), channel_id=2, "
                              "source_target_pairs={{0,1},{1,0}}"))
    assert root(m).attrs["source_target_pairs"] == ((0, 1), (1, 0))
    assert "source_target_pairs={{0,1},{1,0}}" in text


# --------------------------------------------------------------------------- sharding

def sharded(sharding: str, shape: str = "f32[8]{0}"):
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n  ROOT %r = {shape} copy(%a), sharding={sharding}"))
    return root(m).sharding, text


@pytest.mark.parametrize("sharding", [
    "{replicated}", "{manual}", "{unknown}", "{unreduced}", "{maximal device=3}",
    "{devices=[2,2]0,1,2,3}", "{devices=[4,1]<=[4]}",
    "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
    "{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}",
    "{replicated shard_as 1}", "{devices=[2,2]<=[4] shard_like 2}",
    '{maximal device=0 metadata={op_name="x"}}',
])
def test_sharding_forms_print_back_verbatim(sharding):
    _, text = sharded(sharding)
    assert f"sharding={sharding}" in text


def test_sharding_values():
    s, _ = sharded("{devices=[2,2]0,1,2,3 last_tile_dim_replicate}")
    assert s.items == (V.Keyed("devices", V.Bracketed((2, 2))), 0, 1, 2, 3, V.Ident("last_tile_dim_replicate"))
    s, _ = sharded("{devices=[2,1,2]<=[2,2]T(1,0)}")
    assert s.items[0].value == V.Iota((2, 1, 2), (2, 2), (1, 0))


def test_sharding_is_printed_in_canonical_order():
    _, text = sharded("{last_tile_dim_replicate devices=[2,2]<=[4]}")
    assert "sharding={devices=[2,2]<=[4] last_tile_dim_replicate}" in text


def test_tuple_sharding_with_index_comment():
    leaves = ", ".join(["{replicated}"] * 5) + ", /*index=5*/{maximal device=0}"
    shape = "(" + ", ".join(["f32[8]{0}"] * 6) + ")"
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n"
                              f"  ROOT %t = {shape} tuple(%a, %a, %a, %a, %a, /*index=5*/%a), sharding={{{leaves}}}"))
    s = root(m).sharding
    assert len(s.items) == 6 and s.items[5].items == (V.Ident("maximal"), V.Keyed("device", 0))
    assert f"sharding={{{leaves}}}" in text


# --------------------------------------------------------------------------- metadata, frontend attributes, backend config

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


def test_metadata_lone_source_line_is_not_printed():
    _, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n  ROOT %r = f32[8]{0} copy(%a), metadata={source_line=3}"))
    assert "metadata" not in text


def test_frontend_attributes_with_json_values():
    fa = '{b="1",a={"k":"v{}","n":{"x":[1,2]}},composite.name="x"}'
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n"
                              f"  ROOT %r = f32[8]{{0}} copy(%a), frontend_attributes={fa}"))
    items = root(m).frontend_attributes.items
    assert items["b"] == "1" and items["composite.name"] == "x"
    assert items["a"].text == '{"k":"v{}","n":{"x":[1,2]}}'
    assert 'frontend_attributes={a={"k":"v{}","n":{"x":[1,2]}},b="1",composite.name="x"}' in text


def test_backend_config_json_with_nested_braces_and_braces_in_strings():
    config = '{"a":{"b":"}{\\"","c":[1,{"d":2}]},"e":""}'
    m, text = roundtrip(entry(f"  %a = f32[8]{{0}} parameter(0)\n"
                              f"  ROOT %r = f32[8]{{0}} custom-call(%a), custom_call_target=\"foo\", "
                              f"backend_config={config}"))
    assert root(m).backend_config == config
    assert f"backend_config={config}" in text


def test_backend_config_string():
    m, text = roundtrip(entry('  %a = f32[8]{0} parameter(0)\n'
                              '  ROOT %r = f32[8]{0} custom-call(%a), custom_call_target="foo", '
                              'backend_config="a\\"b\\n{"'))
    assert root(m).backend_config == 'a"b\n{'
    assert 'backend_config="a\\"b\\n{"' in text


def test_backend_config_braces_that_are_not_json():
    m, text = roundtrip(entry('  %a = f32[8]{0} parameter(0)\n'
                              '  ROOT %r = f32[8]{0} custom-call(%a), custom_call_target="foo", '
                              'backend_config={key: "value"}'))
    assert root(m).backend_config == '{key: "value"}'
    assert 'backend_config={key: "value"}' in text


def test_control_predecessors():
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n  %b = f32[8]{0} copy(%a)\n  %c = f32[8]{0} copy(%a)\n"
                              "  ROOT %r = f32[8]{0} copy(%a), control-predecessors={%b, %c}"))
    assert [p.name for p in root(m).control_predecessors] == ["b", "c"]
    assert "control-predecessors={%b, %c}" in text


# --------------------------------------------------------------------------- custom-call attributes

def test_custom_call_attributes():
    body = ('  %a = f32[2,3]{1,0} parameter(0)\n'
            '  ROOT %r = f32[2,3]{0,1} custom-call(%a), custom_call_target="baz", '
            'operand_layout_constraints={f32[2,3]{0,1}}, custom_call_has_side_effect=true, '
            'output_to_operand_aliasing={{}: (0, {})}, api_version=api_version_typed_ffi, schedule=SCHEDULE_LATEST, '
            'literal=s32[2]{0} {1, 2}')
    m, text = roundtrip(entry(body))
    r = root(m)
    assert r.attrs["custom_call_target"] == "baz"
    assert r.attrs["operand_layout_constraints"][0].layout.minor_to_major == (0, 1)
    assert r.attrs["custom_call_has_side_effect"] is True
    assert r.attrs["output_to_operand_aliasing"][0].operand == 0
    assert r.attrs["api_version"] == "API_VERSION_TYPED_FFI"
    assert r.attrs["schedule"] == "SCHEDULE_LATEST"
    assert r.attrs["literal"].array.tolist() == [1, 2]
    assert ('custom_call_target="baz", operand_layout_constraints={f32[2,3]{0,1}}, '
            'custom_call_has_side_effect=true, literal=s32[2]{0} {1, 2}, '
            'output_to_operand_aliasing={{}: (0, {})}, schedule=SCHEDULE_LATEST, '
            'api_version=API_VERSION_TYPED_FFI') in text


def test_custom_call_called_computations_and_tuple_literal():
    body = ('  %a = f32[2]{0} parameter(0)\n'
            '  ROOT %r = f32[2]{0} custom-call(%a), custom_call_target="t", called_computations={%sum, %sum}, '
            'literal=( s32[2]{0} {4, 128}, pred[2]{0} {1, 0} )')
    m, text = roundtrip(entry(body, computations=SUM))
    r = root(m)
    assert r.attrs["called_computations"] == (m.computation("sum"),) * 2
    assert r.attrs["literal"].elements[1].array.tolist() == [True, False]
    assert "literal=( s32[2]{0} {4, 128}, pred[2]{0} {1, 0} ), called_computations={%sum, %sum}" in text


def test_custom_call_scalar_literal_and_aliasing_map():
    body = ('  %a = (f32[2]{0}, f32[3]{0}) parameter(0)\n'
            '  ROOT %r = (f32[3]{0}, f32[2]{0}) custom-call(%a), custom_call_target="t", literal=f32[] 0.1, '
            'output_to_operand_aliasing={{0}: (0, {1}), {1}: (0, {0})}')
    m, text = roundtrip(entry(body))
    aliasing = root(m).attrs["output_to_operand_aliasing"]
    assert [(e.output_index, e.operand, e.operand_index) for e in aliasing] == [((0,), 0, (1,)), ((1,), 0, (0,))]
    assert "literal=f32[] 0.1, output_to_operand_aliasing={{0}: (0, {1}), {1}: (0, {0})}" in text


# --------------------------------------------------------------------------- other generic attributes

def test_statistics():
    m, text = roundtrip(entry("  ROOT %c = s32[] constant(-42), statistics={visualizing_index=1,stat-1=33,stat-2=44.5}"))
    s = root(m).statistics
    assert s.items[0] == V.Keyed("visualizing_index", 1) and s.items[2] == V.Keyed("stat-2", 44.5)
    assert "statistics={visualizing_index=1,stat-1=33,stat-2=44.5}" in text


def test_origin():
    m, text = roundtrip(entry('  %a = f32[] parameter(0), origin={{"v1"}}\n'
                              '  %s = f32[] parameter(1), origin={[synthetic_call]}\n'
                              '  ROOT %t = (f32[], f32[]) tuple(%a, %s), origin={({"v1"}, {"v2" {1}})}'))
    tree = root(m).origin.items[0]
    assert isinstance(tree, V.Paren) and tree.items[1].items == (V.Str("v2"), V.Braced((1,)))
    assert 'origin={{"v1"}}' in text and "origin={[synthetic_call]}" in text
    assert 'origin={({"v1"}, {"v2" {1}})}' in text


def test_parameter_replication():
    m, text = roundtrip(entry("  ROOT %a = (f32[], (f32[2]{0})) parameter(0), parameter_replication={true,false}"))
    assert root(m).parameter_replication == (True, False)
    assert "parameter_replication={true,false}" in text


def test_result_accuracy():
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  ROOT %r = f32[8]{0} exponential(%a), result_accuracy={mode=HIGHEST}"))
    assert root(m).attrs["result_accuracy"].items[0].key == "mode"
    assert "result_accuracy={mode=highest}" in text
    _, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n  ROOT %r = f32[8]{0} exponential(%a), "
                              "result_accuracy={tolerance={atol=1e-05,rtol=0.001,ulps=2}}"))
    assert "result_accuracy={tolerance={atol=1e-05,rtol=0.001,ulps=2}}" in text
    _, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n  ROOT %r = f32[8]{0} exponential(%a), "
                              "result_accuracy={mode=default}"))
    assert "result_accuracy" not in text


def test_domain():
    m, text = roundtrip(entry('  %a = f32[] parameter(0)\n  ROOT %d = f32[] domain(%a), '
                              'domain={kind="sharding", entry={maximal device=0}, exit={replicated}}'))
    fields = {i.key: i.value for i in root(m).attrs["domain"].items}
    assert fields["kind"] == V.Str("sharding")
    assert 'domain={kind="sharding", entry={maximal device=0}, exit={replicated}}' in text


# --------------------------------------------------------------------------- comments

def test_comments_anywhere():
    text = """/* module description */
HloModule m, entry_computation_layout={(f32[])->f32[]} // trailing
// whole line
ENTRY /*c*/ e {
  /* multi
     line */
  x = /*foo*/ f32[] parameter(/*n*/0) // hello
  ROOT r = f32[] add(/*c*/x, x /*d*/), metadata={op_name="/*not a comment*/"}
}
// after
"""
    m, printed = roundtrip(text)
    assert root(m).metadata.get("op_name") == "/*not a comment*/"
    assert [o.name for o in root(m).operands] == ["x", "x"]


def test_line_comments_end_at_carriage_returns():
    m, _ = roundtrip("HloModule m\r// Garbage\rENTRY c1 {\r// Foo bar\rROOT c = f32[1]{0} constant({1}) // x\r}")
    assert root(m).name == "c"
    m, _ = roundtrip("HloModule m\r\n// Garbage\r\nENTRY c1 {\r\nROOT c = f32[1]{0} constant({1}) // x\r\n}\r\n")
    assert root(m).name == "c"


def test_operand_index_comments():
    body = "\n".join(f"  %p{i} = f32[] parameter({i})" for i in range(6))
    body += "\n  ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%p0, %p1, %p2, %p3, %p4, /*index=5*/%p5)"
    m, text = roundtrip(entry(body))
    assert [o.name for o in root(m).operands] == [f"p{i}" for i in range(6)]
    assert "tuple(%p0, %p1, %p2, %p3, %p4, /*index=5*/%p5)" in text


# --------------------------------------------------------------------------- operands

def test_operands_with_shapes_old_dump_style():
    m, text = roundtrip(entry("  %x = f32[2]{0} parameter(0)\n  %t = (f32[2]{0}, s32[]) parameter(1)\n"
                              "  ROOT %r = f32[2]{0} add(f32[2]{0} %x, f32[2] %x)"))
    assert [o.name for o in root(m).operands] == ["x", "x"]
    assert "add(%x, %x)" in text


def test_nested_instruction_operands():
    m, text = roundtrip("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                        "  ROOT r = f32[] add(f32[] multiply(x, f32[] negate(y)), y)\n}\n")
    r = root(m)
    assert [o.name for o in r.operands] == ["multiply.anon", "y"]
    assert r.operands[0].operands[1].opcode == "negate"
    assert "%multiply.anon = f32[] multiply(%x, %negate.anon)" in text


def test_bare_names_and_percent_names_mix():
    m, _ = roundtrip("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] add(%x, x)\n}\n")
    assert [o.name for o in root(m).operands] == ["x", "x"]


def test_inline_computation():
    text = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT s = f32[] add(a, b)
  }
}
"""
    m, printed = roundtrip(text)
    called = root(m).attrs["to_apply"]
    assert called in m.computations and called.root.opcode == "add"
    assert f"to_apply=%{called.name}" in printed


def test_called_computations_by_reference():
    text = """HloModule m
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[]) parameter(0)
  ROOT t = (s32[], f32[]) copy(s)
}
ENTRY e {
  p = (s32[], f32[]) parameter(0)
  ROOT w = (s32[], f32[]) while(p), condition=cond, body=body
}
"""
    m, printed = roundtrip(text)
    w = root(m)
    assert (w.attrs["condition"].name, w.attrs["body"].name) == ("cond", "body")
    assert "condition=%cond, body=%body" in printed


def test_conditional_branch_computations():
    text = """HloModule m
neg {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
id {
  y = f32[] parameter(0)
  ROOT c = f32[] copy(y)
}
ENTRY e {
  i = s32[] parameter(0)
  a = f32[] parameter(1)
  ROOT c = f32[] conditional(i, a, a), branch_computations={neg, id}
}
"""
    m, printed = roundtrip(text)
    assert [c.name for c in root(m).attrs["branch_computations"]] == ["neg", "id"]
    assert "branch_computations={%neg, %id}" in printed


# --------------------------------------------------------------------------- async forms

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


def test_async_explicit_form():
    text = """HloModule m
%wrapped (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}
ENTRY e {
  x = f32[8]{0} parameter(0)
  s = ((f32[8]{0}), f32[8]{0}) async-start(x), calls=%wrapped
  u = ((f32[8]{0}), f32[8]{0}) async-update(s), calls=%wrapped
  ROOT d = f32[8]{0} async-done(u), calls=%wrapped
}
"""
    m, printed = roundtrip(text)
    assert inst(m, "s").attrs["calls"] is m.computation("wrapped")
    assert "async-start(%x), calls=%wrapped" in printed


def test_all_reduce_start_done():
    text = SUM + """ENTRY e {
  p = f32[8]{0} parameter(0)
  s = f32[8]{0} all-reduce-start(p), replica_groups={}, to_apply=%sum
  ROOT d = f32[8]{0} all-reduce-done(s)
}
"""
    m, printed = roundtrip(text)
    assert inst(m, "s").opcode == "all-reduce-start" and root(m).operands[0].opcode == "all-reduce-start"
    assert "all-reduce-start(%p), replica_groups={}, to_apply=%sum" in printed


def test_copy_start_done():
    text = """HloModule m
ENTRY e {
  p = f32[2,3]{1,0:S(1)} parameter(0)
  s = (f32[2,3]{1,0:S(2)}, f32[2,3]{1,0:S(1)}, u32[]) copy-start(p), cross_program_prefetch_index=0
  ROOT d = f32[2,3]{1,0:S(2)} copy-done(s)
}
"""
    m, printed = roundtrip(text)
    assert inst(m, "s").attrs["cross_program_prefetch_index"] == 0
    assert root(m).shape.layout.memory_space == 2
    assert "copy-start(%p), cross_program_prefetch_index=0" in printed


# --------------------------------------------------------------------------- other forms from XLA dumps

def test_composite_call():
    text = SUM + """ENTRY %e () -> f32[] {
  %c = f32[] constant(42)
  ROOT %call = f32[] call(%c, %c), to_apply=%sum, is_composite=true, frontend_attributes={composite.attributes={n = 1 : i32, tensor = dense<1> : tensor<i32>},composite.name="foo.bar",composite.version="1"}
}
"""
    m, printed = roundtrip(text)
    call = root(m)
    assert call.attrs["is_composite"] is True
    assert call.frontend_attributes.items["composite.attributes"].text == (
        "{n = 1 : i32, tensor = dense<1> : tensor<i32>}")
    assert "to_apply=%sum, is_composite=true, frontend_attributes={composite.attributes=" in printed


def test_origin_recovery_table_with_a_multi_line_string():
    text = """HloModule m, num_partitions=2, origin_recovery_table={
  {"constant"} : {"constant__ovp0"},
  "
    HloModule recovery_module
  "
}

ENTRY %e () -> s32[1,3] {
  ROOT %constant.1 = s32[1,3]{1,0} constant({ { 1, 1, 1 } }), origin={{"constant__ovp0"}}
}
"""
    m, printed = roundtrip(text)
    table = m.config.origin_recovery_table
    assert table.items[1] == V.Str("\n    HloModule recovery_module\n  ")
    assert 'origin_recovery_table={{"constant"}: {"constant__ovp0"}, "\\n    HloModule recovery_module\\n  "}' in printed


def test_parse_cache_gives_independent_modules():
    text = entry("  %a = f32[2]{0} parameter(0)\n  ROOT %b = f32[2]{0} negate(%a)")
    first, second = parse_module(text), parse_module(text)
    assert first is not second and root(first) is not root(second)
    root(first).name = "changed"
    assert root(parse_module(text)).name == "b"
    assert format_module(second) == format_module(parse_module(text))
