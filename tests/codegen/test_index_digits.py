"""Loops through reshapes without division (hlo/codegen/index_digits.py): the loop over a fusion's
output is split where reshapes below it cut, and reshapes split and merge digits.

Differential: compiled fusions of reshape / transpose / broadcast / elementwise chains against the
interpreter, with random shapes, layouts and cuts (hypothesis), with AVX2 forced as well.
"""
import numpy as np
from hypothesis import given, settings, strategies as st
from target_cases import AVX2, HOST, RAW, check as check_targets, private_cache  # noqa: F401

from hlo import parse_module
from hlo.codegen import lower_module
from hlo.codegen.index_digits import _cut, _digit_extents, loop_splits


def check(text, *arrays, options=(HOST,)):
    check_targets(text, *arrays, options=options, rtol=1e-6)


GELU_OF_HEADS = """HloModule m
fused {
  p0 = f32[96,192]{1,0} parameter(0)
  p1 = f32[96]{0} parameter(1)
  r = f32[96,4,48]{2,1,0} reshape(p0)
  bb = f32[96,4,48]{2,1,0} broadcast(p1), dimensions={0}
  a = f32[96,4,48]{2,1,0} add(r, bb)
  t = f32[4,48,96]{1,0,2} transpose(a), dimensions={1,2,0}
  th = f32[4,48,96]{1,0,2} tanh(t)
  m = f32[4,48,96]{1,0,2} multiply(t, th)
  back = f32[96,4,48]{2,1,0} transpose(m), dimensions={2,0,1}
  ROOT o = f32[96,192]{1,0} reshape(back)
}
ENTRY e {
  x = f32[96,192]{1,0} parameter(0)
  b = f32[96]{0} parameter(1)
  ROOT f = f32[96,192]{1,0} fusion(x, b), kind=kLoop, calls=fused
}
"""


def test_a_reshape_round_trip_splits_the_loop_and_needs_no_division():
    module = parse_module(GELU_OF_HEADS, "digits.hlo")
    root = module.computations[0].root
    params = set(id(p) for p in module.computations[0].parameters)
    assert loop_splits([root], root.shape, lambda i: id(i) in params) == {1: [4, 48]}
    ir = lower_module(module, RAW).llvm_ir
    assert "udiv" not in ir and "urem" not in ir
    rng = np.random.default_rng(0)
    check(GELU_OF_HEADS, rng.standard_normal((96, 192), np.float32), rng.standard_normal(96, np.float32),
          options=(HOST, AVX2))


def test_cuts_follow_chunks_and_refuse_what_does_not_nest():
    cuts = {0: set(), 1: set()}
    # [6] (root dim 0) as [2, 3]: a cut at stride 3
    assert _cut([((0, 1, 6),)], [2, 3], cuts) == [((0, 3, 6),), ((0, 1, 3),)]
    assert cuts[0] == {3}
    # [6, 4] -> [4, 6]: the minor 6 takes all of dim 1 (4) and cannot take 1.5 of dim 0
    assert _cut([((0, 1, 6),), ((1, 1, 4),)], [4, 6], {0: set(), 1: set()}) is None
    assert _digit_extents(192, {48, 12}) == [4, 4, 12]
    assert _digit_extents(192, {48, 32}) == [4, 48]       # 32 does not nest inside 48: dropped
    assert _digit_extents(10, set()) == [10]


def _factorisations(n):
    return [d for d in range(2, n) if n % d == 0]


@st.composite
def reshape_chains(draw):
    """A fusion: x[a, b*c] -> reshape [a, b, c] (+ broadcast bias) -> transpose -> exp/mul
    -> transpose back -> reshape to a third factorisation; random layouts on the way."""
    a = draw(st.sampled_from([1, 2, 3, 5]))
    b = draw(st.sampled_from([2, 3, 4, 6]))
    c = draw(st.sampled_from([4, 6, 8, 12, 16, 20]))
    perm = draw(st.permutations([0, 1, 2]))
    layout3 = draw(st.permutations([0, 1, 2]))
    inverse = [perm.index(d) for d in range(3)]
    out_split = draw(st.sampled_from(_factorisations(b * c) or [b * c]))
    out_dims = [a, out_split, b * c // out_split] if out_split != b * c else [a, b * c]
    out_layout = list(range(len(out_dims) - 1, -1, -1))
    if draw(st.booleans()):
        out_layout = list(reversed(out_layout))
    t_dims = [[a, b, c][p] for p in perm]
    lay = lambda ds: "{" + ",".join(map(str, ds)) + "}"   # noqa: E731
    out_shape = f"f32[{','.join(map(str, out_dims))}]{lay(out_layout)}"
    text = f"""HloModule m
fused {{
  p0 = f32[{a},{b * c}]{{1,0}} parameter(0)
  p1 = f32[{b}]{{0}} parameter(1)
  r = f32[{a},{b},{c}]{{2,1,0}} reshape(p0)
  bb = f32[{a},{b},{c}]{{2,1,0}} broadcast(p1), dimensions={{1}}
  s = f32[{a},{b},{c}]{{2,1,0}} add(r, bb)
  t = f32[{','.join(map(str, t_dims))}]{lay(layout3)} transpose(s), dimensions={{{','.join(map(str, perm))}}}
  e = f32[{','.join(map(str, t_dims))}]{lay(layout3)} exponential(t)
  m = f32[{','.join(map(str, t_dims))}]{lay(layout3)} multiply(e, t)
  back = f32[{a},{b},{c}]{{2,1,0}} transpose(m), dimensions={{{','.join(map(str, inverse))}}}
  ROOT o = {out_shape} reshape(back)
}}
ENTRY e {{
  x = f32[{a},{b * c}]{{1,0}} parameter(0)
  bias = f32[{b}]{{0}} parameter(1)
  ROOT f = {out_shape} fusion(x, bias), kind=kLoop, calls=fused
}}
"""
    return text, (a, b * c), b


@settings(max_examples=12, deadline=None)
@given(reshape_chains(), st.booleans())
def test_reshape_transpose_chains_match_the_interpreter(chain, avx2):
    text, x_dims, b = chain
    rng = np.random.default_rng(1)
    check(text, rng.uniform(-1, 1, x_dims).astype(np.float32), rng.uniform(-1, 1, b).astype(np.float32),
          options=(AVX2 if avx2 else RAW,))


def test_layout_changing_bitcast_in_a_fusion():
    text = """HloModule m
fused {
  p0 = f32[6,40]{0,1} parameter(0)
  bc = f32[2,3,40]{0,1,2} bitcast(p0)
  n = f32[2,3,40]{0,1,2} negate(bc)
  ROOT c = f32[2,3,40]{2,1,0} copy(n)
}
ENTRY e {
  x = f32[6,40]{0,1} parameter(0)
  ROOT f = f32[2,3,40]{2,1,0} fusion(x), kind=kLoop, calls=fused
}
"""
    x = np.random.default_rng(2).standard_normal((6, 40)).astype(np.float32)
    check(text, x, options=(RAW, AVX2))


def test_reduce_of_a_reshape_keeps_its_row_digits():
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  p0 = f32[12,64]{1,0} parameter(0)
  r = f32[3,4,8,8]{3,2,1,0} reshape(p0)
  z = f32[] constant(0)
  red = f32[3,4,8]{2,1,0} reduce(r, z), dimensions={3}, to_apply=add
  ROOT o = f32[12,8]{1,0} reshape(red)
}
ENTRY e {
  x = f32[12,64]{1,0} parameter(0)
  ROOT f = f32[12,8]{1,0} fusion(x), kind=kLoop, calls=fused
}
"""
    x = np.random.default_rng(3).standard_normal((12, 64)).astype(np.float32)
    check(text, x, options=(RAW, AVX2))
