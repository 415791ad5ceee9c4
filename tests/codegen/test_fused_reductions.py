"""Fused reductions accumulated into scratch in their operand's memory order (fused_reductions.py):
the compiled result equals the interpreter's (the same order of combination), and the path is
taken where it should be and only there."""
import platform
import re

import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, compile_assembly
from hlo.codegen.lowering import lower_module, prepare
from hlo.codegen.fused_buffers import materialized
from hlo.codegen.fused_reductions import accumulable, memory_order
from hlo.interpreter import run
from hlo.opcodes import Op

RAW = CodegenOptions(run_pipeline=False)

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
"""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def _tree_norm(b: int, s: int, f: int, window: int, pad: tuple, t: str = "f32", combiner: str = "add") -> str:
    """A layer norm's mean over features f of a transposed activation (memory: [b, f, s]), cut
    into windows as XLA's tree reduction does, inside one fusion."""
    windows = (f + pad[0] + pad[1] - window) // window + 1
    return f"""HloModule m
{ADD}
%fused (x: {t}[{b},{f},{s}], g: {t}[{f}]) -> f32[{b},{s}] {{
  %x = {t}[{b},{f},{s}]{{2,1,0}} parameter(0)
  %g = {t}[{f}]{{0}} parameter(1)
  %gb = {t}[{b},{f},{s}]{{2,1,0}} broadcast(%g), dimensions={{1}}
  %y = {t}[{b},{f},{s}]{{2,1,0}} multiply(%x, %gb)
  %t = {t}[{b},{s},{f}]{{1,2,0}} transpose(%y), dimensions={{0,2,1}}
  %c = f32[{b},{s},{f}]{{2,1,0}} convert(%t)
  %sq = f32[{b},{s},{f}]{{2,1,0}} multiply(%c, %c)
  %zero = f32[] constant(0)
  %w = f32[{b},{s},{windows}]{{2,1,0}} reduce-window(%sq, %zero), window={{size=1x1x{window} stride=1x1x{window} pad=0_0x0_0x{pad[0]}_{pad[1]}}}, to_apply=%{combiner}
  %r = f32[{b},{s}]{{1,0}} reduce(%w, %zero), dimensions={{2}}, to_apply=%{combiner}
  %n = f32[] constant({f})
  %nb = f32[{b},{s}]{{1,0}} broadcast(%n), dimensions={{}}
  ROOT %mean = f32[{b},{s}]{{1,0}} divide(%r, %nb)
}}

ENTRY e {{
  %x = {t}[{b},{f},{s}]{{2,1,0}} parameter(0)
  %g = {t}[{f}]{{0}} parameter(1)
  ROOT %f = f32[{b},{s}]{{1,0}} fusion(%x, %g), kind=kInput, calls=%fused
}}
"""


def _check(text: str, *arrays, rtol=1e-6):
    module = parse_module(text, "t.hlo")
    want = run(module, *arrays)
    got = JitExecutable(module, RAW).run(*arrays)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=1e-6)
    return module


def _inputs(b, s, f, t="f32", seed=0):
    rng = np.random.default_rng(seed)
    dtype = parse_module(f"HloModule m\nENTRY e {{\n  ROOT p = {t}[] parameter(0)\n}}\n").entry.root.shape.element_type.dtype
    return rng.standard_normal((b, f, s)).astype(dtype), rng.standard_normal(f).astype(dtype)


@pytest.mark.parametrize("b,s,f,window,pad", [
    (4, 64, 48, 32, (8, 8)),    # the MLP-Mixer's layer norm: two windows, padded on both sides
    (3, 17, 100, 32, (14, 14)),  # odd sizes
    (2, 9, 70, 32, (0, 26)),    # padding at the end only
    (1, 5, 40, 16, (0, 0)),     # a remainder that no window covers (40 = 2 x 16 + 8)
    (2, 33, 7, 7, (0, 0)),      # a single window
])
def test_tree_reduction_windows_match_the_interpreter(b, s, f, window, pad):
    module = _check(_tree_norm(b, s, f, window, pad), *_inputs(b, s, f))
    fused = module.entry.root.attrs["calls"]
    assert [i.opcode for i in materialized(fused)] == [Op.REDUCE_WINDOW]   # the reduce of its few sums reads it


def test_bf16_operand_and_maximum_combiner():
    _check(_tree_norm(2, 24, 50, 32, (7, 7), t="bf16", combiner="max"), *_inputs(2, 24, 50, "bf16", seed=3))


def test_memory_order_follows_transposes_and_row_major_reshapes():
    module = parse_module(_tree_norm(4, 64, 48, 32, (8, 8)), "t.hlo")
    fused = {i.name: i for i in module.entry.root.attrs["calls"].instructions}
    assert memory_order(fused["y"]) == [2, 1, 0]
    assert memory_order(fused["sq"]) == [1, 2, 0]   # nominally {2,1,0}: the memory runs along s
    assert memory_order(fused["gb"]) is None         # a broadcast reads no array in order
    assert accumulable(fused["w"]) and not accumulable(fused["r"])


REDUCE_MINOR = f"""HloModule m
{ADD}
%fused (x: f32[6,40]) -> f32[6] {{
  %x = f32[6,40]{{1,0}} parameter(0)
  %e = f32[6,40]{{1,0}} exponential(%x)
  %zero = f32[] constant(0)
  %r = f32[6]{{0}} reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  ROOT %l = f32[6]{{0}} log(%r)
}}

ENTRY e {{
  %x = f32[6,40]{{1,0}} parameter(0)
  ROOT %f = f32[6]{{0}} fusion(%x), kind=kInput, calls=%fused
}}
"""

REDUCE_MAJOR = f"""HloModule m
{ADD}
%fused (x: f32[3,40,13]) -> f32[3,13] {{
  %x = f32[3,40,13]{{2,1,0}} parameter(0)
  %e = f32[3,40,13]{{2,1,0}} exponential(%x)
  %zero = f32[] constant(0)
  %r = f32[3,13]{{1,0}} reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  ROOT %l = f32[3,13]{{1,0}} log(%r)
}}

ENTRY e {{
  %x = f32[3,40,13]{{2,1,0}} parameter(0)
  ROOT %f = f32[3,13]{{1,0}} fusion(%x), kind=kInput, calls=%fused
}}
"""


def test_a_reduce_over_the_contiguous_dimension_keeps_the_element_by_element_loop():
    module = _check(REDUCE_MINOR, np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32))
    assert materialized(module.entry.root.attrs["calls"]) == []


def test_a_reduce_over_a_major_dimension_is_accumulated():
    module = _check(REDUCE_MAJOR, np.random.default_rng(2).standard_normal((3, 40, 13)).astype(np.float32))
    assert [i.opcode for i in materialized(module.entry.root.attrs["calls"])] == [Op.REDUCE]


def test_memory_order_looks_at_each_instruction_of_a_shared_graph_once():
    # x_k = x_{k-1} * x_{k-1} over a broadcast: 2^60 paths, none reaching memory (threefry's rounds)
    lines = ["  %x0 = f32[4,8]{1,0} broadcast(%p), dimensions={}"]
    lines += [f"  %x{k} = f32[4,8]{{1,0}} multiply(%x{k - 1}, %x{k - 1})" for k in range(1, 61)]
    text = ("HloModule m\n%fused (p: f32[]) -> f32[4,8] {\n  %p = f32[] parameter(0)\n" + "\n".join(lines)
            + "\n  ROOT %r = f32[4,8]{1,0} negate(%x60)\n}\n\nENTRY e {\n  %p = f32[] parameter(0)\n"
            "  ROOT %f = f32[4,8]{1,0} fusion(%p), kind=kLoop, calls=%fused\n}\n")
    root = parse_module(text, "t.hlo").entry.root.attrs["calls"].root
    assert memory_order(root) is None


ROW_SUM = """HloModule rowsum
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY e {
  %m = f32[256,1024] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[256] reduce(%m, %z), dimensions={1}, to_apply=%add
}
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly")
@pytest.mark.parametrize("features", [None, "-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd"])
def test_a_row_sum_cut_into_windows_reads_its_rows_in_order(features):
    """tree-reduction-rewriter makes a row sum a reduce-window along the contiguous dimension and a
    reduce: the window's loop stays a loop that reads the row in order (vectorised along it), not
    one unrolled under an output loop vectorised with gathers at the window's stride."""
    options = CodegenOptions(features=features)
    module = parse_module(ROW_SUM, "rowsum.hlo")
    assert any(i.opcode == Op.REDUCE_WINDOW for c in prepare(module, options).computations for i in c.instructions)
    asm = compile_assembly(lower_module(module, options), options)
    assert "gather" not in asm and re.search(r"\bvaddps\s+\(", asm)   # vector adds straight from memory
    m = np.random.default_rng(3).standard_normal((256, 1024)).astype(np.float32)
    got = JitExecutable(module, options).run(m)[0]
    np.testing.assert_allclose(got, m.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
