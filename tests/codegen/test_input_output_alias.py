"""input_output_alias in the compiled backend: aliased outputs written into the parameter's
buffer (results[j] == params[i]) stay correct, and are truly in place for x = f(x) updates."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen.buffers import alias_leaves, assign_buffers
from hlo.interpreter import run

RAW = CodegenOptions(run_pipeline=False)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


UPDATE = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  x = f32[64] parameter(0)
  one = f32[] constant(1)
  b = f32[64] broadcast(one), dimensions={}
  ROOT r = f32[64] add(x, b)
}
"""

READ_AFTER = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  p = f32[8] parameter(0)
  two = f32[] constant(2)
  one = f32[] constant(1)
  t = f32[8] broadcast(two), dimensions={}
  o = f32[8] broadcast(one), dimensions={}
  out0 = f32[8] multiply(p, t)
  rev = f32[8] reverse(p), dimensions={0}
  out1 = f32[8] add(rev, o)
  ROOT r = (f32[8], f32[8]) tuple(out0, out1)
}
"""

TUPLE_LEAF = """HloModule m, input_output_alias={ {1}: (1, {1}, may-alias) }
ENTRY e {
  a = f32[4] parameter(0)
  q = (s32[3], f32[4]) parameter(1)
  w = f32[4] get-tuple-element(q), index=1
  n = s32[3] get-tuple-element(q), index=0
  s = f32[4] subtract(w, a)
  ROOT r = (s32[3], f32[4]) tuple(n, s)
}
"""

SWAP = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT r = (f32[4], f32[4]) tuple(b, a)
}
"""


def _check(text, make_args):
    module = parse_module(text, "alias.hlo")
    exe = JitExecutable(module, RAW)
    want = run(module, *make_args())
    for donate in (False, True):
        got = exe.run(*make_args(), donate=donate)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    return exe


def test_alias_leaves_flatten_tuple_indices():
    assert alias_leaves(parse_module(TUPLE_LEAF, "t.hlo")) == {1: 2}
    assert alias_leaves(parse_module(UPDATE, "u.hlo")) == {0: 0}


def test_elementwise_update_is_written_into_the_donated_parameter():
    exe = _check(UPDATE, lambda: (np.arange(64, dtype=np.float32),))
    x = np.arange(64, dtype=np.float32)
    (out,) = exe.run(x, donate=True)
    assert np.shares_memory(out, x)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32) + 1)
    assert not exe.run(np.arange(64, dtype=np.float32), donate=False)[0].base is x


def test_update_needs_no_copy_or_temp():
    a = assign_buffers(parse_module(UPDATE, "u.hlo"))
    assert a.result_copies == [] and a.result_stages == []
    # fused by the default pipeline, the update needs no temp memory at all
    assert lower_module(parse_module(UPDATE, "u.hlo")).temp_bytes == 0


def test_parameter_read_after_aliased_output_sees_original_values():
    _check(READ_AFTER, lambda: (np.arange(8, dtype=np.float32),))
    a = assign_buffers(parse_module(READ_AFTER, "r.hlo"))
    assert [j for j, _ in a.result_copies] == [0]   # out0 goes through temp memory


def test_tuple_output_with_one_aliased_leaf():
    exe = _check(TUPLE_LEAF, lambda: (np.arange(4, dtype=np.float32),
                                      (np.array([1, 2, 3], np.int32), np.full(4, 10, np.float32))))
    w = np.full(4, 10, np.float32)
    n, s = exe.run(np.arange(4, dtype=np.float32), (np.array([1, 2, 3], np.int32), w), donate=True)
    assert np.shares_memory(s, w)
    np.testing.assert_array_equal(s, [10, 9, 8, 7])
    np.testing.assert_array_equal(n, [1, 2, 3])


def test_swapped_aliased_parameters_are_staged():
    _check(SWAP, lambda: (np.arange(4, dtype=np.float32), np.arange(4, 8, dtype=np.float32)))


def test_non_donatable_input_is_left_alone():
    exe = JitExecutable(parse_module(UPDATE, "u.hlo"), RAW)
    base = np.arange(128, dtype=np.float32)
    x = base[::2]                          # not contiguous: passed as a copy, never written
    (out,) = exe.run(x, donate=True)
    np.testing.assert_array_equal(base, np.arange(128))
    np.testing.assert_array_equal(out, np.arange(0, 128, 2) + 1)
    frozen = np.arange(64, dtype=np.float32)
    frozen.flags.writeable = False
    (out,) = exe.run(frozen, donate=True)
    assert not np.shares_memory(out, frozen)
    np.testing.assert_array_equal(frozen, np.arange(64))


MIRROR = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[16] parameter(0)
  rev = f32[16] reverse(p), dimensions={0}
  ROOT r = f32[16] add(p, rev)
}
"""


def _counting(shape):
    if shape.is_tuple:
        return tuple(_counting(s) for s in shape.tuple_shapes)
    return np.arange(1, shape.dims[0] + 1).astype(shape.element_type.dtype)


@pytest.mark.parametrize("text", [UPDATE, READ_AFTER, TUPLE_LEAF, SWAP, MIRROR])
def test_pipeline_fused_modules_match_the_interpreter(text):
    # after fusion, the aliased output's producer may read the parameter at other indices
    module = parse_module(text, "p.hlo")
    exe = JitExecutable(module, CodegenOptions())
    params = sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"])
    nested = [_counting(p.shape) for p in params]
    want = run(module, *nested)
    for donate in (False, True):
        copies = [tuple(a.copy() for a in n) if isinstance(n, tuple) else n.copy() for n in nested]
        for g, w in zip(exe.run(*copies, donate=donate), want):
            np.testing.assert_array_equal(g, w)


IDENTITY = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  ROOT r = (f32[4], f32[4]) tuple(p, n)
}
"""

LOOP = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(j, w)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  loop = (s32[], f32[4]) while(init), condition=cond, body=body
  last = f32[4] get-tuple-element(loop), index=1
  ROOT r = f32[4] add(last, x)
}
"""


@pytest.mark.parametrize("text", [IDENTITY, LOOP])
@pytest.mark.parametrize("options", [RAW, CodegenOptions()])
def test_identity_and_loop_aliases_match_the_interpreter(text, options):
    module = parse_module(text, "i.hlo")
    exe = JitExecutable(module, options)
    want = run(module, np.arange(1, 5, dtype=np.float32))
    for donate in (False, True):
        for g, w in zip(exe.run(np.arange(1, 5, dtype=np.float32), donate=donate), want):
            np.testing.assert_array_equal(g, w)
