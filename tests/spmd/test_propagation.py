"""sharding-propagation: forward and backward through the listed ops, seeds never change,
and the pass runs in a pipeline."""
import pytest

from hlo import parse_module, format_module
from hlo.passes.pass_manager import run_pipeline
from hlo.passes.sharding_propagation import propagate
from hlo.sharding import sharding_of

REDUCERS = ("%add (ra: f32[], rb: f32[]) -> f32[] {\n  %ra = f32[] parameter(0)\n  %rb = f32[] parameter(1)\n"
            "  ROOT %rr = f32[] add(%ra, %rb)\n}\n\n")


def shardings(body: str, extra: str = "") -> dict:
    module = parse_module("HloModule m\n\n" + REDUCERS + extra + "ENTRY %main {\n" + body + "\n}\n")
    propagate(module)
    return {i.name: str(sharding_of(i)) for i in module.instructions()}


def test_forward_through_elementwise_broadcast_transpose_reshape_reduce():
    s = shardings("""
  %p = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  %e = f32[8,4] exponential(%p)
  %c = f32[] constant(1)
  %b = f32[8,4] broadcast(%c), dimensions={}
  %a = f32[8,4] add(%e, %b)
  %t = f32[4,8] transpose(%a), dimensions={1,0}
  %r = f32[4,2,4] reshape(%a)
  %z = f32[] constant(0)
  %s = f32[4] reduce(%t, %z), dimensions={1}, to_apply=%add
  ROOT %out = (f32[4,8], f32[4,2,4], f32[4]) tuple(%t, %r, %s)""")
    assert s["e"] == s["a"] == s["b"] == "{devices=[4,1]<=[4]}"
    assert s["t"] == "{devices=[1,4]<=[4]}"
    assert s["r"] == "{devices=[4,1,1]<=[4]}"
    assert s["s"] == "{replicated}"
    assert s["c"] == "{replicated}"


def test_backward_from_the_root_and_seeds_do_not_change():
    s = shardings("""
  %p = f32[8,4] parameter(0)
  %q = f32[8,4] parameter(1), sharding={replicated}
  %n = f32[8,4] negate(%p)
  %m = f32[8,4] multiply(%n, %q)
  ROOT %out = f32[8,4] copy(%m), sharding={devices=[1,2]<=[2]}""")
    assert s["p"] == s["n"] == s["m"] == "{devices=[1,2]<=[2]}"
    assert s["q"] == "{replicated}"


def test_dot_takes_batch_and_free_dimensions():
    s = shardings("""
  %x = f32[4,8,16] parameter(0), sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}
  %w = f32[4,16,6] parameter(1), sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT %d = f32[4,8,6] dot(%x, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""")
    assert s["d"] == "{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}"


def test_convolution_batch_and_spatial():
    s = shardings("""
  %x = f32[4,8,8,3] parameter(0), sharding={devices=[1,2,1,1]<=[2]}
  %k = f32[3,3,3,5] parameter(1), sharding={replicated}
  ROOT %c = f32[4,8,8,5] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f""")
    assert s["c"] == "{devices=[1,2,1,1]<=[2]}"


def test_slice_pad_concatenate_gather_scatter():
    s = shardings("""
  %p = f32[8,4] parameter(0), sharding={devices=[1,2]<=[2]}
  %sl = f32[6,4] slice(%p), slice={[1:7], [0:4]}
  %z = f32[] constant(0)
  %pd = f32[10,4] pad(%sl, %z), padding=2_2x0_0
  %cc = f32[20,4] concatenate(%pd, %pd), dimensions={0}
  %i = s32[6,1] parameter(1), sharding={devices=[2,1]<=[2]}
  %g = f32[6,4] gather(%p, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  %u = f32[6,4] parameter(2)
  %sc = f32[8,4] scatter(%p, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  ROOT %out = (f32[20,4], f32[6,4], f32[8,4]) tuple(%cc, %g, %sc)""")
    assert s["sl"] == s["pd"] == s["cc"] == "{devices=[1,2]<=[2]}"
    assert s["g"] == "{devices=[2,1]<=[2]}"
    assert s["sc"] == "{devices=[1,2]<=[2]}"


def test_while_conditional_and_call_bodies():
    body = ("%body (t: (f32[8], s32[])) -> (f32[8], s32[]) {\n  %t = (f32[8], s32[]) parameter(0)\n"
            "  %v = f32[8] get-tuple-element(%t), index=0\n  %i = s32[] get-tuple-element(%t), index=1\n"
            "  %v2 = f32[8] negate(%v)\n  %one = s32[] constant(1)\n  %i2 = s32[] add(%i, %one)\n"
            "  ROOT %r = (f32[8], s32[]) tuple(%v2, %i2)\n}\n\n"
            "%cond (t: (f32[8], s32[])) -> pred[] {\n  %t = (f32[8], s32[]) parameter(0)\n"
            "  %i = s32[] get-tuple-element(%t), index=1\n  %n = s32[] constant(3)\n"
            "  ROOT %lt = pred[] compare(%i, %n), direction=LT\n}\n\n"
            "%callee (x: f32[8]) -> f32[8] {\n  %x = f32[8] parameter(0)\n  ROOT %y = f32[8] tanh(%x)\n}\n\n")
    s = shardings("""
  %p = f32[8] parameter(0), sharding={devices=[2]<=[2]}
  %c = f32[8] call(%p), to_apply=%callee
  %zero = s32[] constant(0)
  %init = (f32[8], s32[]) tuple(%c, %zero)
  %w = (f32[8], s32[]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8] get-tuple-element(%w), index=0""", body)
    assert s["w"] == "{{devices=[2]<=[2]}, {replicated}}"
    assert s["out"] == "{devices=[2]<=[2]}"
    assert s["v2"] == "{devices=[2]<=[2]}"       # inside the loop body
    assert "c" not in s    # the call was inlined, and the tanh it ran took the sharding
    assert [v for k, v in s.items() if k.startswith("y")] == ["{devices=[2]<=[2]}"]


def test_pass_in_a_pipeline_and_no_op_without_shardings():
    text = "HloModule m\n\nENTRY %e {\n  %p = f32[4] parameter(0)\n  ROOT %n = f32[4] negate(%p)\n}\n"
    module = parse_module(text)
    assert not run_pipeline(module, "sharding-propagation,spmd-partitioner")
    assert "sharding" not in format_module(module)
    module = parse_module(text.replace("parameter(0)", "parameter(0), sharding={devices=[2]<=[2]}"))
    assert run_pipeline(module, "sharding-propagation,spmd-partitioner")
    out = format_module(module)
    assert "num_partitions=2" in out and "f32[2]{0} negate" in out
