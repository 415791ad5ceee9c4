"""More syntax features of the HLO text format, in the forms XLA's own parser tests use.

Complements test_syntax.py: the less common layout attributes (dim level types,
split configs, physical shape, dynamic-shape metadata), dynamic dimensions in
signatures and entry layouts, nested tuple literals, every enum- and float-valued
attribute, convolution group counts, custom-call convolution attributes, scatter
batching dimensions, tuple and metadata-carrying shardings, fusion aliasing,
send/recv, collectives' optional flags, inline computations in computation lists,
ROOT before the last instruction, and operands prefixed with tuple shapes.

Each test parses a module, checks that its canonical print is a fixed point, and
checks the IR values the feature produces.
"""
from __future__ import annotations

import numpy as np
import pytest

from hlo import values as V
from hlo.attributes import ConvDims, ReplicaGroups, ScatterDims, Window, WindowDim
from hlo.analysis.checker import check_module
from hlo.text.parser import parse_module
from hlo.text.printer import format_module
from hlo.shapes import UNBOUNDED

SUM = """%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

"""


def roundtrip(text: str, check: bool = True):
    """(module, canonical text): the canonical text is a fixed point (and, by default, checks clean)."""
    module = parse_module(text)
    printed = format_module(module)
    assert format_module(parse_module(printed)) == printed
    if check:
        check_module(module)
    return module, printed


def entry(body: str, header: str = "HloModule m", computations: str = "") -> str:
    return f"{header}\n\n{computations}ENTRY %e {{\n{body}\n}}\n"


def root(module):
    return module.entry.root


def inst(module, name):
    return next(i for i in module.instructions() if i.name == name)


# --------------------------------------------------------------------------- layouts

def param_layout(layout_text: str, shape: str):
    m, text = roundtrip(entry(f"  ROOT %p = {shape}{{{layout_text}}} parameter(0)"))
    assert f"{shape}{{{layout_text}}} parameter(0)" in text
    return root(m).shape.layout


def test_layout_dim_level_types():
    layout = param_layout("1,0:D(D,C+~)", "f32[8,4]")
    assert layout.minor_to_major == (1, 0)
    assert layout.dim_level_types == ("D", "C+~")


def test_layout_split_configs():
    layout = param_layout("1,0:SC(0:2,4)", "f32[8,4]")
    assert layout.split_configs == ((0, 2, 4),)


def test_layout_physical_shape():
    layout = param_layout("0:D(C)P(s32[8]{0})", "f32[8]")
    assert layout.physical_shape.element_type.name == "s32"
    assert layout.physical_shape.dims == (8,)


def test_layout_dynamic_shape_metadata_prefix():
    layout = param_layout("0:M(8)", "f32[8]")
    assert layout.dynamic_shape_metadata_prefix_bytes == 8


def test_layout_tiles_with_element_size_on_sub_byte_constant():
    m, text = roundtrip(entry("  ROOT %c = s4[4]{0:T(4)E(4)} constant({-8, 7, 0, 1})"))
    layout = root(m).shape.layout
    assert layout.element_size_bits == 4 and layout.tiles[0].dims == (4,)
    assert root(m).attrs["literal"].array.astype(int).tolist() == [-8, 7, 0, 1]
    assert "s4[4]{0:T(4)E(4)} constant({-8, 7, 0, 1})" in text


def test_u2_and_s2_with_element_size():
    m, text = roundtrip(entry("  %a = u2[16]{0:E(2)} parameter(0)\n  ROOT %b = s2[16]{0:E(2)} bitcast-convert(%a)"))
    assert root(m).shape.element_type.name == "s2"
    assert root(m).shape.layout.element_size_bits == 2
    assert "ROOT %b = s2[16]{0:E(2)} bitcast-convert(%a)" in text


# --------------------------------------------------------------------------- dynamic dimensions

def test_dynamic_dims_in_entry_layout_and_signature():
    text = ("HloModule m, entry_computation_layout={(f32[<=4,?]{0,1})->f32[<=4,?]{0,1}}\n\n"
            "ENTRY %e (p: f32[<=4,?]) -> f32[<=4,?] {\n  ROOT %p = f32[<=4,?]{0,1} parameter(0)\n}\n")
    m, printed = roundtrip(text)
    layout = m.config.entry_computation_layout
    assert layout.parameters[0].dims == (4, UNBOUNDED) and layout.parameters[0].dynamic == (True, True)
    assert m.entry.declared_result_shape.dynamic == (True, True)
    assert "entry_computation_layout={(f32[<=4,?]{0,1})->f32[<=4,?]{0,1}}" in printed
    assert "ENTRY %e (p: f32[<=4,?]) -> f32[<=4,?] {" in printed


def test_bounded_dim_in_tuple_and_zero_sized_dim():
    m, text = roundtrip(entry("  ROOT %p = (f32[<=3]{0}, s32[0,3]{1,0}) parameter(0)"))
    first, second = root(m).shape.tuple_shapes
    assert first.dims == (3,) and first.dynamic == (True,)
    assert second.dims == (0, 3)
    assert "(f32[<=3]{0}, s32[0,3]{1,0}) parameter(0)" in text


# --------------------------------------------------------------------------- literals

def test_nested_tuple_literal():
    m, text = roundtrip(entry("  ROOT %c = ((s32[], f32[2]{0}), pred[]) constant(((1, {2, 3}), false))"))
    lit = root(m).attrs["literal"]
    inner = lit.elements[0]
    assert inner.is_tuple and int(inner.elements[0].array) == 1
    assert inner.elements[1].array.tolist() == [2.0, 3.0]
    assert bool(lit.elements[1].array) is False
    assert "constant(( ( 1, {2, 3} ), false ))" in text


def test_empty_tuple():
    m, text = roundtrip(entry("  ROOT %t = () tuple()"))
    assert root(m).shape.is_tuple and root(m).shape.tuple_shapes == ()
    assert "ROOT %t = () tuple()" in text


def test_non_finite_f8_constants():
    m, text = roundtrip(entry("  ROOT %c = f8e4m3fn[3]{0} constant({nan, 7, -nan})"))
    values = root(m).attrs["literal"].array.astype(np.float32)
    assert np.isnan(values[0]) and values[1] == 7 and np.isnan(values[2])
    assert "constant({nan, 7, -nan})" in text


def test_scalar_constants_of_half_types():
    for type_name in ("f16", "bf16"):
        m, text = roundtrip(entry(f"  ROOT %c = {type_name}[] constant(500)"))
        assert float(root(m).attrs["literal"].array) == 500.0
        assert f"{type_name}[] constant(500)" in text


# --------------------------------------------------------------------------- scalar and enum attribute values

@pytest.mark.parametrize("written,value,printed", [
    ("0.001", 0.001, "0.001"), ("1", 1.0, "1"), ("1e-05", 1e-05, "1e-05"),
])
def test_float_attribute(written, value, printed):
    body = ("  %x = f32[2,3]{1,0} parameter(0)\n  %s = f32[3]{0} parameter(1)\n  %o = f32[3]{0} parameter(2)\n"
            "  ROOT %b = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(%x, %s, %o), "
            f"epsilon={written}, feature_index=1")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["epsilon"] == pytest.approx(value)
    assert root(m).attrs["feature_index"] == 1
    assert f"epsilon={printed}, feature_index=1" in text


def test_compare_direction_and_type():
    m, text = roundtrip(entry("  %x = f32[3]{0} parameter(0)\n"
                              "  ROOT %c = pred[3]{0} compare(%x, %x), direction=GT, type=TOTALORDER"))
    assert root(m).attrs["direction"] == "GT" and root(m).attrs["type"] == "TOTALORDER"
    assert "compare(%x, %x), direction=GT, type=TOTALORDER" in text


def test_fft_type_and_length():
    m, text = roundtrip(entry("  %x = f32[8,16]{1,0} parameter(0)\n"
                              "  ROOT %f = c64[8,9]{1,0} fft(%x), fft_type=RFFT, fft_length={16}"))
    assert root(m).attrs["fft_type"] == "RFFT" and root(m).attrs["fft_length"] == (16,)
    assert "fft(%x), fft_type=RFFT, fft_length={16}" in text


def test_rng_distribution_is_case_insensitive_and_printed_lowercase():
    m, text = roundtrip(entry("  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                              "  ROOT %r = f32[4]{0} rng(%a, %b), distribution=RNG_NORMAL"))
    assert root(m).attrs["distribution"] == "rng_normal"
    assert "rng(%a, %b), distribution=rng_normal" in text


def test_rng_bit_generator_algorithm():
    m, text = roundtrip(entry("  %s = u64[2]{0} parameter(0)\n"
                              "  ROOT %r = (u64[2]{0}, u32[4]{0}) rng-bit-generator(%s), algorithm=RNG_PHILOX"))
    assert root(m).attrs["algorithm"] == "rng_philox"
    assert "rng-bit-generator(%s), algorithm=rng_philox" in text


def test_triangular_solve_options():
    m, text = roundtrip(entry("  %a = f32[4,4]{1,0} parameter(0)\n  %b = f32[4,3]{1,0} parameter(1)\n"
                              "  ROOT %r = f32[4,3]{1,0} triangular-solve(%a, %b), left_side=true, lower=true, "
                              "unit_diagonal=true, transpose_a=TRANSPOSE"))
    attrs = root(m).attrs
    assert (attrs["left_side"], attrs["lower"], attrs["unit_diagonal"], attrs["transpose_a"]) == (
        True, True, True, "TRANSPOSE")
    assert "left_side=true, lower=true, unit_diagonal=true, transpose_a=TRANSPOSE" in text


def test_reduce_precision_bits():
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  ROOT %r = f32[8]{0} reduce-precision(%a), exponent_bits=5, mantissa_bits=10"))
    assert (root(m).attrs["exponent_bits"], root(m).attrs["mantissa_bits"]) == (5, 10)
    assert "exponent_bits=5, mantissa_bits=10" in text


def test_sort_is_stable_and_topk_largest():
    comparator = ("%lt (x: f32[], y: f32[]) -> pred[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
                  "  ROOT %c = pred[] compare(%x, %y), direction=LT\n}\n\n")
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  %s = f32[8]{0} sort(%a), dimensions={0}, is_stable=true, to_apply=%lt\n"
                              "  ROOT %t = (f32[2]{0}, s32[2]{0}) topk(%s), k=2, largest=false",
                              computations=comparator))
    assert inst(m, "s").attrs["is_stable"] is True
    assert (root(m).attrs["k"], root(m).attrs["largest"]) == (2, False)
    assert "sort(%a), dimensions={0}, is_stable=true, to_apply=%lt" in text
    assert "topk(%s), k=2, largest=false" in text


def test_iota_and_dynamic_slice_sizes():
    m, text = roundtrip(entry("  %i = s32[] parameter(0)\n  %a = s32[4,6]{1,0} iota(), iota_dimension=1\n"
                              "  ROOT %d = s32[2,3]{1,0} dynamic-slice(%a, %i, %i), dynamic_slice_sizes={2,3}"))
    assert inst(m, "a").attrs["iota_dimension"] == 1
    assert root(m).attrs["dynamic_slice_sizes"] == (2, 3)
    assert "iota(), iota_dimension=1" in text and "dynamic_slice_sizes={2,3}" in text


# --------------------------------------------------------------------------- convolution and custom-call

def test_convolution_feature_group_count():
    body = ("  %a = f32[1,8,8,4]{3,2,1,0} parameter(0)\n  %k = f32[3,3,2,8]{3,2,1,0} parameter(1)\n"
            "  ROOT %c = f32[1,8,8,8]{3,2,1,0} convolution(%a, %k), window={size=3x3 pad=1_1x1_1}, "
            "dim_labels=b01f_01io->b01f, feature_group_count=2, operand_precision={high,high}")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["feature_group_count"] == 2
    assert root(m).attrs["operand_precision"] == ("high", "high")
    assert ("window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2, "
            "operand_precision={high,high}") in text


def test_convolution_batch_group_count():
    body = ("  %a = f32[4,8,8,2]{3,2,1,0} parameter(0)\n  %k = f32[3,3,2,4]{3,2,1,0} parameter(1)\n"
            "  ROOT %c = f32[1,6,6,4]{3,2,1,0} convolution(%a, %k), window={size=3x3}, "
            "dim_labels=b01f_01io->b01f, batch_group_count=4")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["batch_group_count"] == 4
    assert "dim_labels=b01f_01io->b01f, batch_group_count=4" in text


def test_convolution_kind():
    body = ("  %a = f32[1,8]{1,0} parameter(0)\n  %k = f32[8,4]{1,0} parameter(1)\n"
            "  ROOT %c = f32[1,4]{1,0} convolution(%a, %k), dim_labels=bf_io->bf, conv_kind=fprop")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["conv_kind"] == "fprop"
    assert "dim_labels=bf_io->bf, conv_kind=fprop" in text


def test_custom_call_with_convolution_attributes():
    body = ("  %a = f32[1,8,8,4]{3,2,1,0} parameter(0)\n  %k = f32[3,3,4,8]{3,2,1,0} parameter(1)\n"
            "  ROOT %c = (f32[1,8,8,8]{3,2,1,0}, u8[0]{0}) custom-call(%a, %k), "
            "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, operand_precision={highest,highest}, "
            'padding_type=PADDING_SAME, custom_call_target="__cudnn$convForward", '
            'backend_config={"conv_result_scale":1}')
    m, text = roundtrip(entry(body))
    r = root(m)
    assert r.attrs["window"] == Window((WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1)))
    assert isinstance(r.attrs["dim_labels"], ConvDims)
    assert r.attrs["padding_type"] == "PADDING_SAME"
    assert r.backend_config == '{"conv_result_scale":1}'
    assert ("custom-call(%a, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
            "operand_precision={highest,highest}, padding_type=PADDING_SAME, "
            'custom_call_target="__cudnn$convForward", backend_config={"conv_result_scale":1}') in text


def test_custom_call_to_apply():
    m, text = roundtrip(entry('  %x = f32[] parameter(0)\n'
                              '  ROOT %c = f32[] custom-call(%x, %x), custom_call_target="reduce", to_apply=%sum',
                              computations=SUM))
    assert root(m).attrs["to_apply"] is m.computation("sum")
    assert 'custom_call_target="reduce", to_apply=%sum' in text


def test_custom_call_layout_constraints_with_tuple_and_scalar():
    body = ('  %a = f32[2,3]{1,0} parameter(0)\n  %s = s32[] parameter(1)\n'
            '  ROOT %r = f32[3,2]{1,0} custom-call(%a, %s), custom_call_target="t", '
            'operand_layout_constraints={f32[2,3]{0,1}, s32[]}')
    m, text = roundtrip(entry(body))
    constraints = root(m).attrs["operand_layout_constraints"]
    assert [c.layout.minor_to_major for c in constraints] == [(0, 1), ()]
    assert "operand_layout_constraints={f32[2,3]{0,1}, s32[]}" in text


# --------------------------------------------------------------------------- gather/scatter

def test_scatter_batching_dims():
    body = ("  %a = f32[2,5,4]{2,1,0} parameter(0)\n  %i = s32[2,3,1]{2,1,0} parameter(1)\n"
            "  %u = f32[2,3,4]{2,1,0} parameter(2)\n"
            "  ROOT %s = f32[2,5,4]{2,1,0} scatter(%a, %i, %u), update_window_dims={2}, inserted_window_dims={1}, "
            "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, "
            "index_vector_dim=2, to_apply=%sum")
    m, text = roundtrip(entry(body, computations=SUM))
    dims = ScatterDims.of(root(m))
    assert dims.input_batching_dims == (0,) and dims.scatter_indices_batching_dims == (0,)
    assert ("scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, "
            "index_vector_dim=2, to_apply=%sum") in text


# --------------------------------------------------------------------------- sharding

def test_empty_tuple_sharding():
    m, text = roundtrip(entry("  ROOT %t = () tuple(), sharding={}"))
    assert root(m).sharding == V.Braced(())
    assert "ROOT %t = () tuple(), sharding={}" in text


def test_sharding_with_a_list_of_metadata():
    m, text = roundtrip(entry('  %a = f32[8]{0} parameter(0)\n'
                              '  ROOT %r = f32[8]{0} copy(%a), sharding={replicated metadata={{op_name="a"}, '
                              '{op_name="b"}}}'))
    items = root(m).sharding.items
    assert items[0] == V.Ident("replicated") and items[1].key == "metadata"
    assert 'sharding={replicated metadata={{op_name="a"}, {op_name="b"}}}' in text


def test_tuple_sharding_on_recv_and_sharded_parameters():
    text = """HloModule m

ENTRY %e () -> (f32[], token[]) {
  %token0 = token[] after-all()
  %recv = (f32[], u32[], token[]) recv(token[] %token0), channel_id=15, sharding={{maximal device=1}, {replicated}, {replicated}}
  ROOT %recv-done = (f32[], token[]) recv-done((f32[], u32[], token[]) %recv), channel_id=15, sharding={{maximal device=1}, {replicated}}
}
"""
    m, printed = roundtrip(text)
    assert len(inst(m, "recv").sharding.items) == 3
    assert ("%recv = (f32[], u32[], token[]) recv(%token0), channel_id=15, "
            "sharding={{maximal device=1}, {replicated}, {replicated}}") in printed


# --------------------------------------------------------------------------- fusion, send/recv, infeed/outfeed

def test_fusion_kind_aliasing_and_calls():
    fused = "%fc (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n  ROOT %n = f32[8]{0} negate(%p)\n}\n\n"
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  ROOT %f = f32[8]{0} fusion(%a), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, "
                              "calls=%fc", computations=fused))
    f = root(m)
    assert f.attrs["kind"] == "kLoop" and f.attrs["calls"] is m.computation("fc")
    assert [(e.output_index, e.operand, e.operand_index) for e in f.attrs["output_to_operand_aliasing"]] == [
        ((), 0, ())]
    assert "fusion(%a), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=%fc" in text


def test_send_recv_with_channels_and_host_transfer():
    body = ("  %t = token[] after-all()\n  %d = f32[4]{0} parameter(0)\n"
            "  %s = (f32[4]{0}, u32[], token[]) send(%d, %t), channel_id=5, is_host_transfer=true\n"
            "  %sd = token[] send-done(%s), channel_id=5, is_host_transfer=true\n"
            "  %r = (f32[4]{0}, u32[], token[]) recv(%t)\n"
            "  %rd = (f32[4]{0}, token[]) recv-done(%r)\n"
            "  ROOT %g = f32[4]{0} get-tuple-element(%rd), index=0")
    m, text = roundtrip(entry(body))
    assert inst(m, "s").attrs == {"channel_id": 5, "is_host_transfer": True}
    assert inst(m, "r").attrs == {}
    assert "send(%d, %t), channel_id=5, is_host_transfer=true" in text
    assert "send-done(%s), channel_id=5, is_host_transfer=true" in text


def test_infeed_and_outfeed_configs():
    body = ('  %t = token[] after-all()\n  %i = (f32[4]{0}, token[]) infeed(%t), infeed_config="cfg"\n'
            '  %d = f32[4]{0} get-tuple-element(%i), index=0\n'
            '  ROOT %o = token[] outfeed(%d, %t), outfeed_shape=f32[4]{0}, outfeed_config="oc"')
    m, text = roundtrip(entry(body))
    assert inst(m, "i").attrs["infeed_config"] == "cfg"
    assert root(m).attrs["outfeed_shape"].dims == (4,)
    assert 'infeed(%t), infeed_config="cfg"' in text
    assert 'outfeed(%d, %t), outfeed_shape=f32[4]{0}, outfeed_config="oc"' in text


# --------------------------------------------------------------------------- collectives

def test_all_gather_flags():
    m, text = roundtrip(entry("  %a = f32[8]{0} parameter(0)\n"
                              "  ROOT %g = f32[16]{0} all-gather(%a), channel_id=1, replica_groups={{0,1}}, "
                              "constrain_layout=true, dimensions={0}, use_global_device_ids=true"))
    attrs = root(m).attrs
    assert attrs["replica_groups"] == ReplicaGroups(((0, 1),))
    assert attrs["constrain_layout"] is True and attrs["dimensions"] == (0,)
    assert ("all-gather(%a), channel_id=1, replica_groups={{0,1}}, constrain_layout=true, dimensions={0}, "
            "use_global_device_ids=true") in text


def test_reduce_scatter_and_all_to_all_with_iota_groups():
    body = ("  %x = f32[8]{0} parameter(0)\n"
            "  %rs = f32[4]{0} reduce-scatter(%x), replica_groups=[1,2]<=[2], dimensions={0}, to_apply=%sum\n"
            "  ROOT %t = f32[8]{0} all-to-all(%x), replica_groups={{0,1}}, dimensions={0}")
    m, text = roundtrip(entry(body, computations=SUM))
    assert inst(m, "rs").attrs["replica_groups"].groups == ((0, 1),)
    assert "reduce-scatter(%x), replica_groups=[1,2]<=[2], dimensions={0}, to_apply=%sum" in text
    assert "all-to-all(%x), replica_groups={{0,1}}, dimensions={0}" in text


def test_collective_permute_in_place_form_with_slice_sizes():
    body = ("  %a = f32[8]{0} parameter(0)\n  %o = f32[8]{0} parameter(1)\n  %z = s32[] constant(0)\n"
            "  %i = (s32[]) tuple(%z)\n"
            "  ROOT %r = f32[8]{0} collective-permute(%a, %o, %i, %i), channel_id=1, "
            "source_target_pairs={{0,1},{1,0}}, slice_sizes={{4}}")
    m, text = roundtrip(entry(body))
    assert root(m).attrs["slice_sizes"] == ((4,),)
    assert "source_target_pairs={{0,1},{1,0}}, slice_sizes={{4}}" in text


# --------------------------------------------------------------------------- computations

def test_inline_computation_in_a_computation_list():
    body = ("  %i = s32[] parameter(0)\n  %a = f32[] parameter(1)\n"
            "  ROOT %c = f32[] conditional(%i, %a), branch_computations={{\n"
            "    x = f32[] parameter(0)\n    ROOT n = f32[] negate(x)\n  }}")
    m, text = roundtrip(entry(body))
    (branch,) = root(m).attrs["branch_computations"]
    assert branch in m.computations and branch.root.opcode == "negate"
    assert f"branch_computations={{%{branch.name}}}" in text


def test_conditional_with_true_and_false_computations():
    identity = "%id (x: f32[]) -> f32[] {\n  ROOT %x = f32[] parameter(0)\n}\n\n"
    m, text = roundtrip(entry("  %p = pred[] parameter(0)\n  %a = f32[] parameter(1)\n"
                              "  ROOT %c = f32[] conditional(%p, %a, %a), true_computation=%id, "
                              "false_computation=%id", computations=identity))
    assert root(m).attrs["true_computation"] is m.computation("id")
    assert "conditional(%p, %a, %a), true_computation=%id, false_computation=%id" in text


def test_root_need_not_be_the_last_instruction():
    m, text = roundtrip(entry("  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a)\n  %unused = f32[] copy(%a)"))
    assert root(m).name == "n"
    assert "  ROOT %n = f32[] negate(%a)\n  %unused = f32[] copy(%a)\n" in text


def test_operand_with_a_tuple_shape_prefix():
    m, text = roundtrip(entry("  %v = f32[] parameter(0)\n"
                              "  %cs = (f32[], f32[], u32[]) copy-start(f32[] %v)\n"
                              "  ROOT %cd = f32[] copy-done((f32[], f32[], u32[]) %cs)"))
    assert root(m).operands[0].name == "cs"
    assert "ROOT %cd = f32[] copy-done(%cs)" in text


def test_omitted_result_shape_is_inferred():
    m, text = roundtrip(entry("  %a = f32[2,3]{0,1} parameter(0)\n  ROOT %n = negate(%a)"))
    assert root(m).shape.dims == (2, 3)
    assert "ROOT %n = f32[2,3]{1,0} negate(%a)" in text or "ROOT %n = f32[2,3]{0,1} negate(%a)" in text


def test_header_alias_of_the_whole_output():
    m, text = roundtrip(entry("  ROOT %p = f32[] parameter(0)",
                              "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }"))
    alias = m.config.input_output_alias[0]
    assert (alias.output_index, alias.parameter, alias.parameter_index) == ((), 0, ())
    assert "input_output_alias={ {}: (0, {}, may-alias) }" in text


def test_metadata_and_backend_config_on_a_pred_constant_with_escapes():
    m, text = roundtrip(entry('  ROOT %c = pred[] constant(true), metadata={op_type="const" '
                              'op_name="\\"it\'s here\\n" source_file="t.cc" source_line=68}, '
                              'backend_config="foo\\" bar"'))
    assert root(m).metadata.get("op_name") == "\"it's here\n"
    assert root(m).backend_config == 'foo" bar'
    assert 'source_line=68}, backend_config="foo\\" bar"' in text


LEGACY_SELECT = """HloModule m
ENTRY e {
  p = pred[] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  s = f32[3] select(p, a, b)
  t = (f32[3], s32[]) parameter(3)
  u = (f32[3], s32[]) parameter(4)
  ts = (f32[3], s32[]) select(p, t, u)
  ROOT r = (f32[3], (f32[3], s32[])) tuple(s, ts)
}
"""


def test_select_with_a_scalar_predicate_or_tuples_is_canonicalised():
    # Old dumps and XLA's builder allow both; the module read is strict HLO (ops-2, Select).
    module = parse_module(LEGACY_SELECT, "legacy.hlo")
    check_module(module)
    text = format_module(module)
    assert "%broadcast.anon = pred[3]{0} broadcast(%p), dimensions={}" in text
    assert "%s = f32[3]{0} select(%broadcast.anon, %a, %b)" in text
    assert "%select.anon.1 = s32[] select(%p, %get-tuple-element.anon.2, %get-tuple-element.anon.3)" in text
    assert "%ts = (f32[3]{0}, s32[]) tuple(%select.anon, %select.anon.1)" in text
    assert format_module(parse_module(text, "again.hlo")) == text
    import hlo
    a, b = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    t, u = (a * 10, np.int32(7)), (b * 10, np.int32(8))
    for p, want in ((True, (a, a * 10, 7)), (False, (b, b * 10, 8))):
        s, ts0, ts1 = hlo.run(module, np.bool_(p), a, b, t, u)
        np.testing.assert_array_equal(s, want[0])
        np.testing.assert_array_equal(ts0, want[1])
        assert ts1 == want[2]
