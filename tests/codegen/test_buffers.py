"""Buffer assignment: arena packing with reuse, in-place updates, results written in place."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen.buffers import BufferKind, assign_buffers, leaves_of, resolve
from hlo.interpreter import run

RAW = CodegenOptions(run_pipeline=False)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def compiled_equals_interpreter(text, *arrays):
    module = parse_module(text, "b.hlo")
    for got, want in zip(JitExecutable(module, RAW).run(*arrays), run(module, *arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_elementwise_chain_computes_in_place_into_the_result():
    chain = "\n".join(f"  v{i + 1} = f32[256] exponential(v{i})" for i in range(5))
    text = f"HloModule m\nENTRY e {{\n  v0 = f32[256] parameter(0)\n{chain}\n  ROOT r = f32[256] negate(v5)\n}}\n"
    assert lower_module(parse_module(text, "c.hlo"), RAW).temp_bytes == 0
    compiled_equals_interpreter(text, np.linspace(-1, 0, 256, dtype=np.float32) / 8)


def test_disjoint_lifetimes_share_arena_memory():
    # a is dead once s exists, so t (same size as a) can take a's memory.
    text = """HloModule m
ENTRY e {
  x = f32[64] parameter(0)
  a = f32[128] concatenate(x, x), dimensions={0}
  s = f32[64] slice(a), slice={[32:96]}
  t = f32[128] concatenate(s, s), dimensions={0}
  u = f32[64] slice(t), slice={[16:80]}
  ROOT r = f32[64] add(u, x)
}
"""
    module = parse_module(text, "s.hlo")
    assignment = assign_buffers(module)
    arena = {id(resolve(b)): resolve(b) for v in assignment.values.values() for b in leaves_of(v)
             if resolve(b).kind is BufferKind.ARENA}
    assert assignment.temp_bytes < sum(-(-b.size // 64) * 64 for b in arena.values())
    compiled_equals_interpreter(text, np.arange(64, dtype=np.float32))


def test_dynamic_update_slice_updates_a_dying_operand_in_place():
    text = """HloModule m
ENTRY e {
  x = f32[1024] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  a = f32[1024] exponential(x)
  d = f32[1024] dynamic-update-slice(a, u, i)
  ROOT r = f32[1024] negate(d)
}
"""
    module = parse_module(text, "d.hlo")
    assignment = assign_buffers(module)
    dus = next(inst for inst in module.entry.instructions if inst.opcode == "dynamic-update-slice")
    assert id(dus) in assignment.in_place
    for start in (0, 500, 1022):
        compiled_equals_interpreter(text, np.linspace(0, 1, 1024, dtype=np.float32), np.ones(4, np.float32),
                                    np.int32(start))


def test_scan_like_loop_with_updates_in_the_body():
    text = """HloModule m
cond {
  s = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(8)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[8,4] get-tuple-element(s), index=1
  zero = s32[] constant(0)
  prev = f32[1,4] dynamic-slice(acc, i, zero), dynamic_slice_sizes={1,4}
  two = f32[1,4] constant({{2, 2, 2, 2}})
  row = f32[1,4] multiply(prev, two)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  m = s32[] constant(7)
  k = s32[] minimum(j, m)
  upd = f32[8,4] dynamic-update-slice(acc, row, k, zero)
  ROOT t = (s32[], f32[8,4]) tuple(j, upd)
}
ENTRY e {
  x = f32[8,4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[8,4]) tuple(z, x)
  ROOT w = (s32[], f32[8,4]) while(init), condition=cond, body=body
}
"""
    module = parse_module(text, "scan.hlo")
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    want = run(module, x)
    for options in (RAW, CodegenOptions()):
        got = JitExecutable(module, options).run(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_result_leaves_are_written_in_place_and_duplicates_copied():
    text = """HloModule m
ENTRY e {
  x = f32[16] parameter(0)
  y = f32[16] exponential(x)
  ROOT t = (f32[16], f32[16], f32[16]) tuple(y, y, x)
}
"""
    module = parse_module(text, "r.hlo")
    assignment = assign_buffers(module)
    assert [j for j, _ in assignment.result_copies] == [1, 2]
    assert assignment.temp_bytes == 0
    compiled_equals_interpreter(text, np.linspace(-1, 1, 16, dtype=np.float32))
