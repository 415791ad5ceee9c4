"""spmd-partitioner on hand-written modules: each way of moving data between shardings,
uneven blocks, the gather-compute-slice fallback, loops, and results equal to the
unpartitioned program's."""
import numpy as np
import pytest

import hlo
from hlo import format_module
from hlo.passes.spmd_stats import collective_stats
from hlo.spmd_run import partition_module, run_spmd, shard_array, unshard_array
from hlo.sharding import HloSharding

ADD = ("%add (ra: f32[], rb: f32[]) -> f32[] {\n  %ra = f32[] parameter(0)\n  %rb = f32[] parameter(1)\n"
       "  ROOT %rr = f32[] add(%ra, %rb)\n}\n\n")


def check(body: str, shapes, n: int, extra: str = ""):
    """Partition, run on n devices, compare with the interpreter on the unannotated program."""
    text = "HloModule m\n\n" + ADD + extra + "ENTRY %main {\n" + body + "\n}\n"
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    spmd, got_n, ctx = partition_module(text, n)
    got = run_spmd(spmd, args, n, result_shape=ctx.module.entry.root.shape)
    plain = hlo.parse_module(text)
    for inst in plain.instructions():
        inst.sharding = None
    want = hlo.run(_without_annotations(plain), *args)
    want = want if isinstance(got, list) else (want[0] if isinstance(want, (list, tuple)) else want)
    if isinstance(got, list):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return collective_stats(format_module(spmd), n)["counts"], ctx, spmd


def _without_annotations(module):
    text = format_module(module).replace('custom_call_target="Sharding"', 'custom_call_target="Sharding"')
    import re
    text = re.sub(r'custom-call\((%[\w.]+)\), custom_call_target="Sharding"', r"copy(\1)", text)
    return text


def reshard_body(src: str, dst: str, shape="f32[8,8]") -> str:
    return (f"  %p = {shape} parameter(0), sharding={src}\n"
            f"  %c = {shape} custom-call(%p), custom_call_target=\"Sharding\", sharding={dst}\n"
            f"  ROOT %r = {shape} negate(%c), sharding={dst}")


@pytest.mark.parametrize("src,dst,kind", [
    ("{devices=[4,1]<=[4]}", "{devices=[1,4]<=[4]}", "all-to-all"),
    ("{devices=[4,1]<=[4]}", "{devices=[4,1]3,2,1,0}", "collective-permute"),
    ("{devices=[4,1]<=[4]}", "{replicated}", "all-gather"),
    ("{devices=[2,2]<=[4]}", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "all-gather"),
])
def test_reshard_uses_the_collective(src, dst, kind):
    counts, ctx, _ = check(reshard_body(src, dst), [(8, 8)], 4)
    assert set(counts) == {kind}, counts


def test_refining_a_split_needs_no_collective():
    counts, _, spmd = check(reshard_body("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4]}"),
                            [(8, 8)], 4)
    assert counts == {}
    counts, _, _ = check(reshard_body("{replicated}", "{devices=[1,4]<=[4]}"), [(8, 8)], 4)
    assert counts == {}


def test_uneven_blocks_are_padded_and_masked():
    body = """
  %p = f32[10,7] parameter(0), sharding={devices=[4,1]<=[4]}
  %q = f32[10,7] parameter(1), sharding={devices=[1,4]<=[4]}
  %e = f32[10,7] exponential(%p)
  %a = f32[10,7] add(%e, %q)
  %z = f32[] constant(0)
  %s = f32[7] reduce(%a, %z), dimensions={0}, to_apply=%add
  ROOT %o = (f32[7], f32[10,7]) tuple(%s, %a), sharding={{replicated}, {devices=[1,4]<=[4]}}"""
    counts, ctx, spmd = check(body, [(10, 7), (10, 7)], 4)
    assert "all-reduce" in counts
    assert "f32[3,7]" in format_module(spmd)      # ceil(10/4) rows per device


def test_uneven_contracting_dimension_is_masked():
    body = """
  %x = f32[6,10] parameter(0), sharding={devices=[1,4]<=[4]}
  %w = f32[10,5] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT %d = f32[6,5] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}"""
    counts, ctx, _ = check(body, [(6, 10), (10, 5)], 4)
    assert counts == {"all-reduce": 1} and ctx.fallbacks == []


def test_ops_without_a_rule_take_the_fallback():
    body = """
  %p = f32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}
  %r = f32[8,6] reverse(%p), dimensions={0}
  %s = f32[6,6] slice(%r), slice={[1:7], [0:6]}
  ROOT %t = f32[6,6] tanh(%s), sharding={devices=[2,2]<=[4]}"""
    counts, ctx, _ = check(body, [(8, 6)], 4)
    assert any("reverse" in f for f in ctx.fallbacks) and any("slice" in f for f in ctx.fallbacks)
    assert "all-gather" in counts


def test_while_loop_runs_whole():
    loop = ("%body (t: (f32[8], s32[])) -> (f32[8], s32[]) {\n  %t = (f32[8], s32[]) parameter(0)\n"
            "  %v = f32[8] get-tuple-element(%t), index=0\n  %i = s32[] get-tuple-element(%t), index=1\n"
            "  %v2 = f32[8] sine(%v)\n  %one = s32[] constant(1)\n  %i2 = s32[] add(%i, %one)\n"
            "  ROOT %r = (f32[8], s32[]) tuple(%v2, %i2)\n}\n\n"
            "%cond (t: (f32[8], s32[])) -> pred[] {\n  %t = (f32[8], s32[]) parameter(0)\n"
            "  %i = s32[] get-tuple-element(%t), index=1\n  %n = s32[] constant(3)\n"
            "  ROOT %lt = pred[] compare(%i, %n), direction=LT\n}\n\n")
    body = """
  %p = f32[8] parameter(0), sharding={devices=[2]<=[2]}
  %zero = s32[] constant(0)
  %init = (f32[8], s32[]) tuple(%p, %zero)
  %w = (f32[8], s32[]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8] get-tuple-element(%w), index=0"""
    counts, ctx, _ = check(body, [(8,)], 2, loop)
    assert any("while" in f for f in ctx.fallbacks)


def test_dot_with_both_operands_split_along_free_dimensions():
    body = """
  %x = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  %w = f32[16,12] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT %d = f32[8,12] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,2]<=[4]}"""
    counts, ctx, spmd = check(body, [(8, 16), (16, 12)], 4)
    assert counts == {} and "f32[4,6]{1,0} dot" in format_module(spmd)


def test_maximal_and_manual_shardings_run_whole():
    body = """
  %p = f32[4] parameter(0), sharding={maximal device=1}
  ROOT %n = f32[4] negate(%p)"""
    counts, _, _ = check(body, [(4,)], 2)
    assert counts == {}


def test_shard_and_unshard_arrays_round_trip():
    s = HloSharding.from_grid(np.array([[3, 1], [0, 2]]).reshape(2, 1, 2), 2)
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    blocks = shard_array(x, s, 4)
    assert blocks[3].shape == (3, 7) and blocks[0].shape == (3, 7)
    np.testing.assert_array_equal(unshard_array(blocks, s, (5, 7), 4), x)


def test_partial_sums_wanted_split_take_a_reduce_scatter():
    body = """
  %x = f32[8,16] parameter(0), sharding={devices=[1,4]<=[4]}
  %w = f32[16,6] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT %d = f32[8,6] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}"""
    counts, ctx, _ = check(body, [(8, 16), (16, 6)], 4)
    assert counts == {"reduce-scatter": 1}


def test_all_to_all_with_other_split_dimensions():
    # found by the property test: the split moves from dimension 2 to 1 while dimension 0 stays split
    counts, _, _ = check(reshard_body("{devices=[2,1,2]1,2,0,3}", "{devices=[2,2,1]1,2,0,3}", "f32[2,2,2]"),
                         [(2, 2, 2)], 4)
    assert counts == {"all-to-all": 1}
