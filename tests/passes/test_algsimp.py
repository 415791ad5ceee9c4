"""algsimp: one test per rule (expected text after `algsimp,dce` and interpreter equivalence
on random inputs, special float values included), plus pass-level properties."""
import math
import re

import pytest

from hlo import format_module, parse_module
from hlo.passes.algsimp.facts import cast_preserves_values, map_dims_through_reshape, ones_inserted_or_deleted
from hlo.passes.pass_manager import available_passes
from hlo.shapes import PRIMITIVE_TYPES
from pass_testing import PassTester, assert_same_outputs, entry_text, optimised

# Inputs include NaN, infinities and signed zeros: a rule must be right for them too.
INPUTS = dict(ints=(-6, 7), special_floats=True)
ALGSIMP = PassTester("algsimp,dce", seeds=(0, 1), rtol=1e-5, **INPUTS)


def simplify(text: str, pipeline: str = "algsimp,dce"):
    """(module before, module after `pipeline`, checked)."""
    return parse_module(text), optimised(text, pipeline)[0]


def assert_same_results(before, after, seed=0):
    assert_same_outputs(before, after, seeds=(seed,), rtol=1e-5, **INPUTS)


def check(text: str, expected: str):
    after, _ = ALGSIMP.optimise(text)
    assert entry_text(after) == expected
    return after


def module(params: str, body: str, extra: str = "") -> str:
    return f"HloModule m\n{extra}\nENTRY main {{\n{params}\n{body}\n}}\n"


# (parameters, body, expected entry after `algsimp,dce`, extra computations)
RULE_CASES = [
    # A + 0 -> A for +0 and -0 (float) and integers
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  a = f32[4] add(p, zb)
  mz = f32[] constant(-0)
  mzb = f32[4] broadcast(mz), dimensions={}
  b = f32[4] add(mzb, a)
  zi = s32[4] constant({0, 0, 0, 0})
  c = s32[4] add(q, zi)
  ROOT t = (f32[4], s32[4]) tuple(b, c)""",
                 """ENTRY %main (p: f32[4], q: s32[4]) -> (f32[4], s32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  ROOT %t = (f32[4]{0}, s32[4]{0}) tuple(%p, %q)
}
""",
                 "", id='add_zero'),
    # A - 0 -> A; A - A -> 0 for integers only
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  a = f32[4] subtract(p, zb)
  b = f32[4] subtract(a, a)
  c = s32[4] subtract(q, q)
  ROOT t = (f32[4], f32[4], s32[4]) tuple(a, b, c)""",
                 """ENTRY %main (p: f32[4], q: s32[4]) -> (f32[4], f32[4], s32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %b = f32[4]{0} subtract(%p, %p)
  %constant = s32[] constant(0)
  %broadcast = s32[4]{0} broadcast(%constant), dimensions={}
  ROOT %t = (f32[4]{0}, f32[4]{0}, s32[4]{0}) tuple(%p, %b, %broadcast)
}
""",
                 "", id='subtract'),
    # A * 1 -> A, 1 * A -> A
    pytest.param('  p = f32[4] parameter(0)\n  q = c64[4] parameter(1)',
                 """  one = f32[] constant(1)
  ob = f32[4] broadcast(one), dimensions={}
  a = f32[4] multiply(ob, p)
  b = f32[4] multiply(a, ob)
  onec = c64[4] constant({(1,0), (1,0), (1,0), (1,0)})
  c = c64[4] multiply(q, onec)
  ROOT t = (f32[4], c64[4]) tuple(b, c)""",
                 """ENTRY %main (p: f32[4], q: c64[4]) -> (f32[4], c64[4]) {
  %p = f32[4]{0} parameter(0)
  %q = c64[4]{0} parameter(1)
  ROOT %t = (f32[4]{0}, c64[4]{0}) tuple(%p, %q)
}
""",
                 "", id='multiply_one'),
    # A * 0 -> 0 for integers; kept for floats (NaN, inf)
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  a = f32[4] multiply(p, zb)
  zi = s32[] constant(0)
  zib = s32[4] broadcast(zi), dimensions={}
  b = s32[4] multiply(zib, q)
  ROOT t = (f32[4], s32[4]) tuple(a, b)""",
                 """ENTRY %main (p: f32[4], q: s32[4]) -> (f32[4], s32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %z = f32[] constant(0)
  %zb = f32[4]{0} broadcast(%z), dimensions={}
  %a = f32[4]{0} multiply(%p, %zb)
  %zi = s32[] constant(0)
  %zib = s32[4]{0} broadcast(%zi), dimensions={}
  ROOT %t = (f32[4]{0}, s32[4]{0}) tuple(%a, %zib)
}
""",
                 "", id='multiply_zero'),
    # (-A) * (-B) -> A * B
    pytest.param('  p = f32[4] parameter(0)\n  q = f32[4] parameter(1)',
                 """  a = f32[4] negate(p)
  b = f32[4] negate(q)
  ROOT m = f32[4] multiply(a, b)""",
                 """ENTRY %main (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  ROOT %m = f32[4]{0} multiply(%p, %q)
}
""",
                 "", id='multiply_negations'),
    # A / 1 -> A
    pytest.param('  p = f32[4] parameter(0)\n  q = u8[4] parameter(1)',
                 """  one = f32[] constant(1)
  ob = f32[4] broadcast(one), dimensions={}
  a = f32[4] divide(p, ob)
  onei = u8[4] constant({1, 1, 1, 1})
  b = u8[4] divide(q, onei)
  ROOT t = (f32[4], u8[4]) tuple(a, b)""",
                 """ENTRY %main (p: f32[4], q: u8[4]) -> (f32[4], u8[4]) {
  %p = f32[4]{0} parameter(0)
  %q = u8[4]{0} parameter(1)
  ROOT %t = (f32[4]{0}, u8[4]{0}) tuple(%p, %q)
}
""",
                 "", id='divide_one'),
    # pow(A,0) -> 1, pow(A,1) -> A, pow(A,2) -> A*A, pow(A,-1) -> 1/A (floats only)
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  c0 = f32[] constant(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  cm1 = f32[] constant(-1)
  b0 = f32[4] broadcast(c0), dimensions={}
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  bm1 = f32[4] broadcast(cm1), dimensions={}
  a = f32[4] power(p, b0)
  b = f32[4] power(p, b1)
  c = f32[4] power(p, b2)
  d = f32[4] power(p, bm1)
  im1 = s32[] constant(-1)
  ibm1 = s32[4] broadcast(im1), dimensions={}
  e = s32[4] power(q, ibm1)
  ROOT t = (f32[4], f32[4], f32[4], f32[4], s32[4]) tuple(a, b, c, d, e)""",
                 """ENTRY %main (p: f32[4], q: s32[4]) -> (f32[4], f32[4], f32[4], f32[4], s32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %constant = f32[] constant(1)
  %broadcast = f32[4]{0} broadcast(%constant), dimensions={}
  %multiply = f32[4]{0} multiply(%p, %p)
  %constant.1 = f32[] constant(1)
  %broadcast.1 = f32[4]{0} broadcast(%constant.1), dimensions={}
  %divide = f32[4]{0} divide(%broadcast.1, %p)
  %im1 = s32[] constant(-1)
  %ibm1 = s32[4]{0} broadcast(%im1), dimensions={}
  %e = s32[4]{0} power(%q, %ibm1)
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, s32[4]{0}) tuple(%broadcast, %p, %multiply, %divide, %e)
}
""",
                 "", id='power'),
    # A & true -> A, A & false -> false (pred); A & ~0 -> A, A & 0 -> 0 (integers)
    pytest.param('  p = pred[4] parameter(0)\n  q = u8[4] parameter(1)',
                 """  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  f = pred[] constant(false)
  fb = pred[4] broadcast(f), dimensions={}
  a = pred[4] and(tb, p)
  b = pred[4] and(a, fb)
  ones = u8[4] constant({255, 255, 255, 255})
  c = u8[4] and(q, ones)
  z = u8[] constant(0)
  zb = u8[4] broadcast(z), dimensions={}
  d = u8[4] and(zb, c)
  ROOT r = (pred[4], pred[4], u8[4], u8[4]) tuple(a, b, c, d)""",
                 """ENTRY %main (p: pred[4], q: u8[4]) -> (pred[4], pred[4], u8[4], u8[4]) {
  %p = pred[4]{0} parameter(0)
  %q = u8[4]{0} parameter(1)
  %f = pred[] constant(false)
  %fb = pred[4]{0} broadcast(%f), dimensions={}
  %z = u8[] constant(0)
  %zb = u8[4]{0} broadcast(%z), dimensions={}
  ROOT %r = (pred[4]{0}, pred[4]{0}, u8[4]{0}, u8[4]{0}) tuple(%p, %fb, %q, %zb)
}
""",
                 "", id='and'),
    # A | false -> A, A | true -> true (pred); A | 0 -> A, A | ~0 -> ~0 (integers)
    pytest.param('  p = pred[4] parameter(0)\n  q = s8[4] parameter(1)',
                 """  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  f = pred[] constant(false)
  fb = pred[4] broadcast(f), dimensions={}
  a = pred[4] or(fb, p)
  b = pred[4] or(a, tb)
  z = s8[] constant(0)
  zb = s8[4] broadcast(z), dimensions={}
  c = s8[4] or(q, zb)
  m1 = s8[] constant(-1)
  m1b = s8[4] broadcast(m1), dimensions={}
  d = s8[4] or(c, m1b)
  ROOT r = (pred[4], pred[4], s8[4], s8[4]) tuple(a, b, c, d)""",
                 """ENTRY %main (p: pred[4], q: s8[4]) -> (pred[4], pred[4], s8[4], s8[4]) {
  %p = pred[4]{0} parameter(0)
  %q = s8[4]{0} parameter(1)
  %t = pred[] constant(true)
  %tb = pred[4]{0} broadcast(%t), dimensions={}
  %m1 = s8[] constant(-1)
  %m1b = s8[4]{0} broadcast(%m1), dimensions={}
  ROOT %r = (pred[4]{0}, pred[4]{0}, s8[4]{0}, s8[4]{0}) tuple(%p, %tb, %q, %m1b)
}
""",
                 "", id='or'),
    # A ^ A -> 0, A ^ 0 -> A
    pytest.param('  p = pred[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  a = pred[4] xor(p, p)
  z = s32[] constant(0)
  zb = s32[4] broadcast(z), dimensions={}
  b = s32[4] xor(zb, q)
  ROOT r = (pred[4], s32[4]) tuple(a, b)""",
                 """ENTRY %main (p: pred[4], q: s32[4]) -> (pred[4], s32[4]) {
  %p = pred[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %constant = pred[] constant(false)
  %broadcast = pred[4]{0} broadcast(%constant), dimensions={}
  ROOT %r = (pred[4]{0}, s32[4]{0}) tuple(%broadcast, %q)
}
""",
                 "", id='xor'),
    # max(A,A) -> A; max(A,-inf) -> A; min(A,+inf) -> A; integer bounds; nested max
    pytest.param('  p = f32[4] parameter(0)\n  q = s16[4] parameter(1)\n  r = f32[4] parameter(2)',
                 """  a = f32[4] maximum(p, p)
  ninf = f32[] constant(-inf)
  nb = f32[4] broadcast(ninf), dimensions={}
  b = f32[4] maximum(nb, a)
  pinf = f32[] constant(inf)
  ib = f32[4] broadcast(pinf), dimensions={}
  c = f32[4] minimum(b, ib)
  lo = s16[] constant(-32768)
  lob = s16[4] broadcast(lo), dimensions={}
  d = s16[4] maximum(q, lob)
  hi = s16[] constant(32767)
  hib = s16[4] broadcast(hi), dimensions={}
  e = s16[4] minimum(d, hib)
  m = f32[4] maximum(c, r)
  n = f32[4] maximum(m, r)
  ROOT t = (f32[4], s16[4], f32[4]) tuple(c, e, n)""",
                 """ENTRY %main (p: f32[4], q: s16[4], r: f32[4]) -> (f32[4], s16[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s16[4]{0} parameter(1)
  %r = f32[4]{0} parameter(2)
  %m = f32[4]{0} maximum(%p, %r)
  ROOT %t = (f32[4]{0}, s16[4]{0}, f32[4]{0}) tuple(%p, %q, %m)
}
""",
                 "", id='max_min'),
    # clamp(lo, clamp(lo, X, hi), hi) -> clamp(lo, X, hi)
    pytest.param('  p = f32[4] parameter(0)\n  lo = f32[] parameter(1)\n  hi = f32[] parameter(2)',
                 """  lob = f32[4] broadcast(lo), dimensions={}
  hib = f32[4] broadcast(hi), dimensions={}
  a = f32[4] clamp(lob, p, hib)
  ROOT b = f32[4] clamp(lob, a, hib)""",
                 """ENTRY %main (p: f32[4], lo: f32[], hi: f32[]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %lo = f32[] parameter(1)
  %hi = f32[] parameter(2)
  %lob = f32[4]{0} broadcast(%lo), dimensions={}
  %hib = f32[4]{0} broadcast(%hi), dimensions={}
  ROOT %a = f32[4]{0} clamp(%lob, %p, %hib)
}
""",
                 "", id='clamp_of_clamp'),
    # exp(0) -> 1
    pytest.param('  p = f32[4] parameter(0)',
                 """  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  e = f32[4] exponential(zb)
  ROOT m = f32[4] multiply(p, e)""",
                 """ENTRY %main (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0)
}
""",
                 "", id='exp_zero'),
    # negate(negate(A)) -> A, not(not(A)) -> A
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)\n  r = pred[4] parameter(2)',
                 """  a = f32[4] negate(p)
  b = f32[4] negate(a)
  c = s32[4] not(q)
  d = s32[4] not(c)
  e = pred[4] not(r)
  f = pred[4] not(e)
  ROOT t = (f32[4], s32[4], pred[4]) tuple(b, d, f)""",
                 """ENTRY %main (p: f32[4], q: s32[4], r: pred[4]) -> (f32[4], s32[4], pred[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %r = pred[4]{0} parameter(2)
  ROOT %t = (f32[4]{0}, s32[4]{0}, pred[4]{0}) tuple(%p, %q, %r)
}
""",
                 "", id='double_negation'),
    # abs(abs(A)) -> abs(A) for floats; kept for signed integers (abs(INT_MIN) < 0)
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)',
                 """  a = f32[4] abs(p)
  b = f32[4] abs(a)
  c = s32[4] abs(q)
  d = s32[4] abs(c)
  e = f32[4] exponential(p)
  f = f32[4] abs(e)
  ROOT t = (f32[4], s32[4], f32[4]) tuple(b, d, f)""",
                 """ENTRY %main (p: f32[4], q: s32[4]) -> (f32[4], s32[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %a = f32[4]{0} abs(%p)
  %c = s32[4]{0} abs(%q)
  %d = s32[4]{0} abs(%c)
  %e = f32[4]{0} exponential(%p)
  ROOT %t = (f32[4]{0}, s32[4]{0}, f32[4]{0}) tuple(%a, %d, %e)
}
""",
                 "", id='abs_of_abs'),
    # real(A) -> A, imag(A) -> 0 for real A; complex(real(C), imag(C)) -> C; real(complex(R, I)) -> R
    pytest.param('  p = f32[4] parameter(0)\n  c = c64[4] parameter(1)\n  i = f32[4] parameter(2)',
                 """  a = f32[4] real(p)
  b = f32[4] imag(p)
  re = f32[4] real(c)
  im = f32[4] imag(c)
  d = c64[4] complex(re, im)
  e = c64[4] complex(a, i)
  f = f32[4] real(e)
  g = f32[4] imag(e)
  ROOT t = (f32[4], f32[4], c64[4], f32[4], f32[4]) tuple(a, b, d, f, g)""",
                 """ENTRY %main (p: f32[4], c: c64[4], i: f32[4]) -> (f32[4], f32[4], c64[4], f32[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %c = c64[4]{0} parameter(1)
  %i = f32[4]{0} parameter(2)
  %constant = f32[] constant(0)
  %broadcast = f32[4]{0} broadcast(%constant), dimensions={}
  ROOT %t = (f32[4]{0}, f32[4]{0}, c64[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%p, %broadcast, %c, %p, %i)
}
""",
                 "", id='real_imag_complex'),
    # select(P, A, A) -> A; select(true/false, A, B); select(not(P), A, B) -> select(P, B, A)
    pytest.param('  p = pred[4] parameter(0)\n  x = f32[4] parameter(1)\n  y = f32[4] parameter(2)',
                 """  a = f32[4] select(p, x, x)
  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  b = f32[4] select(tb, a, y)
  f = pred[4] constant({0, 0, 0, 0})
  c = f32[4] select(f, x, y)
  np = pred[4] not(p)
  d = f32[4] select(np, b, c)
  ROOT r = (f32[4], f32[4], f32[4]) tuple(b, c, d)""",
                 """ENTRY %main (p: pred[4], x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %p = pred[4]{0} parameter(0)
  %x = f32[4]{0} parameter(1)
  %y = f32[4]{0} parameter(2)
  %select = f32[4]{0} select(%p, %y, %x)
  ROOT %r = (f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%x, %y, %select)
}
""",
                 "", id='select'),
    # on pred: select(P, true, false) -> P, select(P, false, true) -> not(P)
    pytest.param('  p = pred[4] parameter(0)',
                 """  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  f = pred[] constant(false)
  fb = pred[4] broadcast(f), dimensions={}
  a = pred[4] select(p, tb, fb)
  b = pred[4] select(p, fb, tb)
  ROOT r = (pred[4], pred[4]) tuple(a, b)""",
                 """ENTRY %main (p: pred[4]) -> (pred[4], pred[4]) {
  %p = pred[4]{0} parameter(0)
  %not = pred[4]{0} not(%p)
  ROOT %r = (pred[4]{0}, pred[4]{0}) tuple(%p, %not)
}
""",
                 "", id='select_pred'),
    # compare of splat constants folds; compare(X, X) folds for integers only
    pytest.param('  p = s32[4] parameter(0)\n  x = f32[4] parameter(1)',
                 """  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  a = pred[4] compare(b1, b2), direction=LT
  qnan = f32[] constant(nan)
  nb = f32[4] broadcast(qnan), dimensions={}
  n = pred[4] compare(nb, nb), direction=EQ
  e = pred[4] compare(p, p), direction=GE
  f = pred[4] compare(p, p), direction=NE
  g = pred[4] compare(x, x), direction=EQ
  ROOT r = (pred[4], pred[4], pred[4], pred[4], pred[4]) tuple(a, n, e, f, g)""",
                 """ENTRY %main (p: s32[4], x: f32[4]) -> (pred[4], pred[4], pred[4], pred[4], pred[4]) {
  %p = s32[4]{0} parameter(0)
  %x = f32[4]{0} parameter(1)
  %constant = pred[] constant(true)
  %broadcast = pred[4]{0} broadcast(%constant), dimensions={}
  %constant.1 = pred[] constant(false)
  %broadcast.1 = pred[4]{0} broadcast(%constant.1), dimensions={}
  %constant.2 = pred[] constant(true)
  %broadcast.2 = pred[4]{0} broadcast(%constant.2), dimensions={}
  %constant.3 = pred[] constant(false)
  %broadcast.3 = pred[4]{0} broadcast(%constant.3), dimensions={}
  %g = pred[4]{0} compare(%x, %x), direction=EQ
  ROOT %r = (pred[4]{0}, pred[4]{0}, pred[4]{0}, pred[4]{0}, pred[4]{0}) tuple(%broadcast, %broadcast.1, %broadcast.2, %broadcast.3, %g)
}
""",
                 "", id='compare_constants'),
    # X u< 0 -> false, X u>= 0 -> true; pred: A != false -> A, true == A -> A
    pytest.param('  u = u32[4] parameter(0)\n  p = pred[4] parameter(1)',
                 """  z = u32[] constant(0)
  zb = u32[4] broadcast(z), dimensions={}
  a = pred[4] compare(u, zb), direction=LT
  b = pred[4] compare(zb, u), direction=LE
  f = pred[] constant(false)
  fb = pred[4] broadcast(f), dimensions={}
  c = pred[4] compare(p, fb), direction=NE
  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  d = pred[4] compare(tb, c), direction=EQ
  ROOT r = (pred[4], pred[4], pred[4]) tuple(a, b, d)""",
                 """ENTRY %main (u: u32[4], p: pred[4]) -> (pred[4], pred[4], pred[4]) {
  %u = u32[4]{0} parameter(0)
  %p = pred[4]{0} parameter(1)
  %constant = pred[] constant(false)
  %broadcast = pred[4]{0} broadcast(%constant), dimensions={}
  %constant.1 = pred[] constant(true)
  %broadcast.1 = pred[4]{0} broadcast(%constant.1), dimensions={}
  ROOT %r = (pred[4]{0}, pred[4]{0}, pred[4]{0}) tuple(%broadcast, %broadcast.1, %p)
}
""",
                 "", id='compare_unsigned_and_pred'),
    # convert to the same type -> A; exact round trips (s8->s32->s8, f16->f32->f16) -> A; lossy ones kept
    pytest.param('  p = s8[4] parameter(0)\n  h = f16[4] parameter(1)\n  x = f32[4] parameter(2)',
                 """  a = s8[4] convert(p)
  b = s32[4] convert(a)
  c = s8[4] convert(b)
  d = f32[4] convert(h)
  e = f16[4] convert(d)
  f = s32[4] convert(x)
  g = f32[4] convert(f)
  i = u8[4] convert(p)
  j = s8[4] convert(i)
  ROOT r = (s8[4], f16[4], f32[4], s8[4]) tuple(c, e, g, j)""",
                 """ENTRY %main (p: s8[4], h: f16[4], x: f32[4]) -> (s8[4], f16[4], f32[4], s8[4]) {
  %p = s8[4]{0} parameter(0)
  %h = f16[4]{0} parameter(1)
  %x = f32[4]{0} parameter(2)
  %f = s32[4]{0} convert(%x)
  %g = f32[4]{0} convert(%f)
  %i = u8[4]{0} convert(%p)
  %j = s8[4]{0} convert(%i)
  ROOT %r = (s8[4]{0}, f16[4]{0}, f32[4]{0}, s8[4]{0}) tuple(%p, %h, %g, %j)
}
""",
                 "", id='convert'),
    # bitcast-convert to the same type -> A; chains merge
    pytest.param('  p = f32[4] parameter(0)',
                 """  a = f32[4] bitcast-convert(p)
  b = s32[4] bitcast-convert(a)
  c = u32[4] bitcast-convert(b)
  d = u8[4,4] bitcast-convert(p)
  e = f32[4] bitcast-convert(d)
  ROOT r = (u32[4], f32[4]) tuple(c, e)""",
                 """ENTRY %main (p: f32[4]) -> (u32[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %bitcast-convert = u32[4]{0} bitcast-convert(%p)
  ROOT %r = (u32[4]{0}, f32[4]{0}) tuple(%bitcast-convert, %p)
}
""",
                 "", id='bitcast_convert'),
    # copy/bitcast to the same shape and layout -> A; a layout-changing copy stays; chains merge
    pytest.param('  p = f32[2,3]{1,0} parameter(0)',
                 """  a = f32[2,3]{1,0} copy(p)
  b = f32[2,3]{0,1} copy(a)
  c = f32[2,3]{1,0} copy(b)
  d = f32[2,3]{1,0} bitcast(a)
  e = f32[3,2]{1,0} bitcast(d)
  f = f32[6]{0} bitcast(e)
  ROOT r = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[6]{0}) tuple(c, d, f)""",
                 """ENTRY %main (p: f32[2,3]) -> (f32[2,3], f32[2,3], f32[6]) {
  %p = f32[2,3]{1,0} parameter(0)
  %bitcast = f32[6]{0} bitcast(%p)
  ROOT %r = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[6]{0}) tuple(%p, %p, %bitcast)
}
""",
                 "", id='copy_bitcast'),
    # reduce-precision to the type's own widths -> A
    pytest.param('  p = f32[4] parameter(0)',
                 """  a = f32[4] reduce-precision(p), exponent_bits=8, mantissa_bits=23
  ROOT b = f32[4] reduce-precision(a), exponent_bits=5, mantissa_bits=10""",
                 """ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %b = f32[4]{0} reduce-precision(%p), exponent_bits=5, mantissa_bits=10
}
""",
                 "", id='reduce_precision'),
    # reshape to the same shape -> A; reshape(reshape(A)) -> reshape(A); zero elements -> constant
    pytest.param('  p = f32[2,3] parameter(0)\n  e = f32[0,3] parameter(1)',
                 """  a = f32[2,3] reshape(p)
  b = f32[6] reshape(a)
  c = f32[3,2] reshape(b)
  d = f32[3,0] reshape(e)
  ROOT r = (f32[3,2], f32[3,0]) tuple(c, d)""",
                 """ENTRY %main (p: f32[2,3], e: f32[0,3]) -> (f32[3,2], f32[3,0]) {
  %p = f32[2,3]{1,0} parameter(0)
  %e = f32[0,3]{1,0} parameter(1)
  %reshape = f32[3,2]{1,0} reshape(%p)
  %constant = f32[3,0]{1,0} constant({ {}, {}, {} })
  ROOT %r = (f32[3,2]{1,0}, f32[3,0]{1,0}) tuple(%reshape, %constant)
}
""",
                 "", id='reshape'),
    # reshape(broadcast(X)) -> broadcast(X) when X's dims survive (always for scalars)
    pytest.param('  s = f32[] parameter(0)\n  v = f32[3] parameter(1)',
                 """  a = f32[2,3] broadcast(s), dimensions={}
  b = f32[3,1,2] reshape(a)
  c = f32[2,3] broadcast(v), dimensions={1}
  d = f32[2,1,3] reshape(c)
  e = f32[6] reshape(c)
  ROOT r = (f32[3,1,2], f32[2,1,3], f32[6]) tuple(b, d, e)""",
                 """ENTRY %main (s: f32[], v: f32[3]) -> (f32[3,1,2], f32[2,1,3], f32[6]) {
  %s = f32[] parameter(0)
  %v = f32[3]{0} parameter(1)
  %broadcast = f32[3,1,2]{2,1,0} broadcast(%s), dimensions={}
  %c = f32[2,3]{1,0} broadcast(%v), dimensions={1}
  %broadcast.1 = f32[2,1,3]{2,1,0} broadcast(%v), dimensions={2}
  %e = f32[6]{0} reshape(%c)
  ROOT %r = (f32[3,1,2]{2,1,0}, f32[2,1,3]{2,1,0}, f32[6]{0}) tuple(%broadcast, %broadcast.1, %e)
}
""",
                 "", id='reshape_of_broadcast'),
    # identity transpose -> A; transpose(transpose) composes; degenerate-only transpose -> reshape
    pytest.param('  p = f32[2,3,4] parameter(0)\n  q = f32[1,5] parameter(1)',
                 """  a = f32[2,3,4] transpose(p), dimensions={0,1,2}
  b = f32[4,2,3] transpose(a), dimensions={2,0,1}
  c = f32[3,4,2] transpose(b), dimensions={2,0,1}
  d = f32[2,3,4] transpose(c), dimensions={2,0,1}
  e = f32[4,3,2] transpose(b), dimensions={0,2,1}
  f = f32[5,1] transpose(q), dimensions={1,0}
  ROOT r = (f32[3,4,2], f32[2,3,4], f32[4,3,2], f32[5,1]) tuple(c, d, e, f)""",
                 """ENTRY %main (p: f32[2,3,4], q: f32[1,5]) -> (f32[3,4,2], f32[2,3,4], f32[4,3,2], f32[5,1]) {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %q = f32[1,5]{1,0} parameter(1)
  %transpose = f32[3,4,2]{2,1,0} transpose(%p), dimensions={1,2,0}
  %transpose.1 = f32[4,3,2]{2,1,0} transpose(%p), dimensions={2,1,0}
  %reshape = f32[5,1]{1,0} reshape(%q)
  ROOT %r = (f32[3,4,2]{2,1,0}, f32[2,3,4]{2,1,0}, f32[4,3,2]{2,1,0}, f32[5,1]{1,0}) tuple(%transpose, %p, %transpose.1, %reshape)
}
""",
                 "", id='transpose'),
    # transpose(broadcast(X)) -> broadcast(X) when X's dims keep their order
    pytest.param('  v = f32[3] parameter(0)\n  m = f32[2,3] parameter(1)',
                 """  a = f32[3,4,5] broadcast(v), dimensions={0}
  b = f32[4,3,5] transpose(a), dimensions={1,0,2}
  c = f32[2,3,4] broadcast(m), dimensions={0,1}
  d = f32[3,2,4] transpose(c), dimensions={1,0,2}
  ROOT r = (f32[4,3,5], f32[3,2,4]) tuple(b, d)""",
                 """ENTRY %main (v: f32[3], m: f32[2,3]) -> (f32[4,3,5], f32[3,2,4]) {
  %v = f32[3]{0} parameter(0)
  %m = f32[2,3]{1,0} parameter(1)
  %broadcast = f32[4,3,5]{2,1,0} broadcast(%v), dimensions={1}
  %c = f32[2,3,4]{2,1,0} broadcast(%m), dimensions={0,1}
  %d = f32[3,2,4]{2,1,0} transpose(%c), dimensions={1,0,2}
  ROOT %r = (f32[4,3,5]{2,1,0}, f32[3,2,4]{2,1,0}) tuple(%broadcast, %d)
}
""",
                 "", id='transpose_of_broadcast'),
    # broadcast(broadcast) composes; element-preserving broadcast -> reshape/transpose; scalar constant broadcast kept
    pytest.param('  v = f32[3] parameter(0)\n  m = f32[2,3] parameter(1)',
                 """  a = f32[3,4] broadcast(v), dimensions={0}
  b = f32[5,3,4] broadcast(a), dimensions={1,2}
  c = f32[1,3] broadcast(v), dimensions={1}
  d = f32[3,2] broadcast(m), dimensions={1,0}
  k = f32[] constant(2)
  kb = f32[2,3] broadcast(k), dimensions={}
  e = f32[2,3] multiply(m, kb)
  ROOT r = (f32[5,3,4], f32[1,3], f32[3,2], f32[2,3]) tuple(b, c, d, e)""",
                 """ENTRY %main (v: f32[3], m: f32[2,3]) -> (f32[5,3,4], f32[1,3], f32[3,2], f32[2,3]) {
  %v = f32[3]{0} parameter(0)
  %m = f32[2,3]{1,0} parameter(1)
  %broadcast = f32[5,3,4]{2,1,0} broadcast(%v), dimensions={1}
  %reshape = f32[1,3]{1,0} reshape(%v)
  %transpose = f32[3,2]{1,0} transpose(%m), dimensions={1,0}
  %k = f32[] constant(2)
  %kb = f32[2,3]{1,0} broadcast(%k), dimensions={}
  %e = f32[2,3]{1,0} multiply(%m, %kb)
  ROOT %r = (f32[5,3,4]{2,1,0}, f32[1,3]{1,0}, f32[3,2]{1,0}, f32[2,3]{1,0}) tuple(%broadcast, %reshape, %transpose, %e)
}
""",
                 "", id='broadcast'),
    # broadcast(reshape(X)) inserting 1s -> broadcast(X); broadcast(X) drops X's size-1 dims; broadcast(iota) -> iota
    pytest.param('  v = f32[3] parameter(0)\n  w = f32[3,1] parameter(1)',
                 """  a = f32[1,3,1] reshape(v)
  b = f32[2,1,3,1] broadcast(a), dimensions={1,2,3}
  c = f32[3,4] broadcast(w), dimensions={0,1}
  i = s32[4] iota(), iota_dimension=0
  j = s32[3,4] broadcast(i), dimensions={1}
  k = s32[5,1] iota(), iota_dimension=1
  ROOT r = (f32[2,1,3,1], f32[3,4], s32[3,4], s32[5,1]) tuple(b, c, j, k)""",
                 """ENTRY %main (v: f32[3], w: f32[3,1]) -> (f32[2,1,3,1], f32[3,4], s32[3,4], s32[5,1]) {
  %v = f32[3]{0} parameter(0)
  %w = f32[3,1]{1,0} parameter(1)
  %broadcast = f32[2,1,3,1]{3,2,1,0} broadcast(%v), dimensions={2}
  %reshape = f32[3]{0} reshape(%w)
  %broadcast.1 = f32[3,4]{1,0} broadcast(%reshape), dimensions={0}
  %iota = s32[3,4]{1,0} iota(), iota_dimension=1
  %constant = s32[] constant(0)
  %broadcast.2 = s32[5,1]{1,0} broadcast(%constant), dimensions={}
  ROOT %r = (f32[2,1,3,1]{3,2,1,0}, f32[3,4]{1,0}, s32[3,4]{1,0}, s32[5,1]{1,0}) tuple(%broadcast, %broadcast.1, %iota, %broadcast.2)
}
""",
                 "", id='broadcast_reshape_iota'),
    # full slice -> A; slice(slice(A)) composes (strides multiply); slice(broadcast(X)) -> broadcast(slice(X))
    pytest.param('  p = f32[10,4] parameter(0)\n  v = f32[6] parameter(1)',
                 """  a = f32[10,4] slice(p), slice={[0:10], [0:4]}
  b = f32[8,4] slice(a), slice={[1:9], [0:4]}
  c = f32[3,2] slice(b), slice={[2:8:2], [1:4:2]}
  d = f32[6,5] broadcast(v), dimensions={0}
  e = f32[6,2] slice(d), slice={[0:6], [1:3]}
  f = f32[2,5] slice(d), slice={[1:5:2], [0:5]}
  ROOT r = (f32[3,2], f32[6,2], f32[2,5]) tuple(c, e, f)""",
                 """ENTRY %main (p: f32[10,4], v: f32[6]) -> (f32[3,2], f32[6,2], f32[2,5]) {
  %p = f32[10,4]{1,0} parameter(0)
  %v = f32[6]{0} parameter(1)
  %slice = f32[3,2]{1,0} slice(%p), slice={[3:8:2], [1:4:2]}
  %broadcast = f32[6,2]{1,0} broadcast(%v), dimensions={0}
  %slice.1 = f32[2]{0} slice(%v), slice={[1:5:2]}
  %broadcast.1 = f32[2,5]{1,0} broadcast(%slice.1), dimensions={0}
  ROOT %r = (f32[3,2]{1,0}, f32[6,2]{1,0}, f32[2,5]{1,0}) tuple(%slice, %broadcast, %broadcast.1)
}
""",
                 "", id='slice'),
    # slice(pad(X, v)): only padding -> broadcast(v); exactly X -> X; inside X -> slice(X)
    pytest.param('  p = f32[4,3] parameter(0)\n  v = f32[] parameter(1)',
                 """  a = f32[8,3] pad(p, v), padding=2_2x0_0
  b = f32[2,3] slice(a), slice={[0:2], [0:3]}
  c = f32[4,3] slice(a), slice={[2:6], [0:3]}
  d = f32[2,2] slice(a), slice={[3:5], [1:3]}
  ROOT r = (f32[2,3], f32[4,3], f32[2,2]) tuple(b, c, d)""",
                 """ENTRY %main (p: f32[4,3], v: f32[]) -> (f32[2,3], f32[4,3], f32[2,2]) {
  %p = f32[4,3]{1,0} parameter(0)
  %v = f32[] parameter(1)
  %broadcast = f32[2,3]{1,0} broadcast(%v), dimensions={}
  %slice = f32[2,2]{1,0} slice(%p), slice={[1:3], [1:3]}
  ROOT %r = (f32[2,3]{1,0}, f32[4,3]{1,0}, f32[2,2]{1,0}) tuple(%broadcast, %p, %slice)
}
""",
                 "", id='slice_of_pad'),
    # a slice of a concatenate within one operand -> that operand or a slice of it
    pytest.param('  p = f32[2,3] parameter(0)\n  q = f32[4,3] parameter(1)',
                 """  c = f32[6,3] concatenate(p, q), dimensions={0}
  a = f32[2,3] slice(c), slice={[0:2], [0:3]}
  b = f32[2,3] slice(c), slice={[3:5], [0:3]}
  ROOT r = (f32[2,3], f32[2,3]) tuple(a, b)""",
                 """ENTRY %main (p: f32[2,3], q: f32[4,3]) -> (f32[2,3], f32[2,3]) {
  %p = f32[2,3]{1,0} parameter(0)
  %q = f32[4,3]{1,0} parameter(1)
  %slice = f32[2,3]{1,0} slice(%q), slice={[1:3], [0:3]}
  ROOT %r = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%p, %slice)
}
""",
                 "", id='slice_of_concatenate'),
    # reverse of size-1 dims -> A; reverse(reverse) cancels; reverse(broadcast(X)) over new dims -> broadcast(X)
    pytest.param('  p = f32[1,4] parameter(0)\n  v = f32[3] parameter(1)',
                 """  a = f32[1,4] reverse(p), dimensions={0}
  b = f32[1,4] reverse(a), dimensions={1}
  c = f32[1,4] reverse(b), dimensions={1}
  d = f32[3,5] broadcast(v), dimensions={0}
  e = f32[3,5] reverse(d), dimensions={1}
  ROOT r = (f32[1,4], f32[3,5]) tuple(c, e)""",
                 """ENTRY %main (p: f32[1,4], v: f32[3]) -> (f32[1,4], f32[3,5]) {
  %p = f32[1,4]{1,0} parameter(0)
  %v = f32[3]{0} parameter(1)
  %broadcast = f32[3,5]{1,0} broadcast(%v), dimensions={0}
  ROOT %r = (f32[1,4]{1,0}, f32[3,5]{1,0}) tuple(%p, %broadcast)
}
""",
                 "", id='reverse'),
    # pad with zero config -> A; pad of an empty operand -> broadcast(value); interior padding of size-1 dims cleared
    pytest.param('  p = f32[2,3] parameter(0)\n  e = f32[0,3] parameter(1)\n  q = f32[1,3] parameter(2)\n  v = f32[] parameter(3)',
                 """  a = f32[2,3] pad(p, v), padding=0_0x0_0
  b = f32[2,5] pad(e, v), padding=1_1x1_1
  c = f32[1,5] pad(q, v), padding=0_0_3x0_0_1
  ROOT r = (f32[2,3], f32[2,5], f32[1,5]) tuple(a, b, c)""",
                 """ENTRY %main (p: f32[2,3], e: f32[0,3], q: f32[1,3], v: f32[]) -> (f32[2,3], f32[2,5], f32[1,5]) {
  %p = f32[2,3]{1,0} parameter(0)
  %e = f32[0,3]{1,0} parameter(1)
  %q = f32[1,3]{1,0} parameter(2)
  %v = f32[] parameter(3)
  %broadcast = f32[2,5]{1,0} broadcast(%v), dimensions={}
  %pad = f32[1,5]{1,0} pad(%q, %v), padding=0_0_0x0_0_1
  ROOT %r = (f32[2,3]{1,0}, f32[2,5]{1,0}, f32[1,5]{1,0}) tuple(%p, %broadcast, %pad)
}
""",
                 "", id='pad'),
    # single operand -> A; zero-element operands dropped; nested concatenates flattened
    pytest.param('  p = f32[2,3] parameter(0)\n  e = f32[0,3] parameter(1)\n  q = f32[1,3] parameter(2)',
                 """  a = f32[2,3] concatenate(p), dimensions={0}
  b = f32[2,3] concatenate(e, a, e), dimensions={0}
  c = f32[3,3] concatenate(p, q), dimensions={0}
  d = f32[5,3] concatenate(q, c, q), dimensions={0}
  ROOT r = (f32[2,3], f32[5,3]) tuple(b, d)""",
                 """ENTRY %main (p: f32[2,3], e: f32[0,3], q: f32[1,3]) -> (f32[2,3], f32[5,3]) {
  %p = f32[2,3]{1,0} parameter(0)
  %e = f32[0,3]{1,0} parameter(1)
  %q = f32[1,3]{1,0} parameter(2)
  %concatenate = f32[5,3]{1,0} concatenate(%q, %p, %q, %q), dimensions={0}
  ROOT %r = (f32[2,3]{1,0}, f32[5,3]{1,0}) tuple(%p, %concatenate)
}
""",
                 "", id='concatenate'),
    # adjacent slices of one operand merge; concatenate with a broadcast scalar -> pad; repeated size-1 operand -> broadcast
    pytest.param('  p = f32[6,3] parameter(0)\n  v = f32[] parameter(1)\n  q = f32[1,3] parameter(2)',
                 """  a = f32[2,3] slice(p), slice={[1:3], [0:3]}
  b = f32[3,3] slice(p), slice={[3:6], [0:3]}
  c = f32[5,3] concatenate(a, b), dimensions={0}
  vb = f32[2,3] broadcast(v), dimensions={}
  d = f32[8,3] concatenate(p, vb), dimensions={0}
  e = f32[3,3] concatenate(q, q, q), dimensions={0}
  ROOT r = (f32[5,3], f32[8,3], f32[3,3]) tuple(c, d, e)""",
                 """ENTRY %main (p: f32[6,3], v: f32[], q: f32[1,3]) -> (f32[5,3], f32[8,3], f32[3,3]) {
  %p = f32[6,3]{1,0} parameter(0)
  %v = f32[] parameter(1)
  %q = f32[1,3]{1,0} parameter(2)
  %slice = f32[5,3]{1,0} slice(%p), slice={[1:6], [0:3]}
  %pad = f32[8,3]{1,0} pad(%p, %v), padding=0_2x0_0
  %reshape = f32[3]{0} reshape(%q)
  %broadcast = f32[3,3]{1,0} broadcast(%reshape), dimensions={1}
  ROOT %r = (f32[5,3]{1,0}, f32[8,3]{1,0}, f32[3,3]{1,0}) tuple(%slice, %pad, %broadcast)
}
""",
                 "", id='concatenate_slices'),
    # dynamic-slice of the whole operand -> A; constant starts -> slice (clamped); dynamic-update-slice of a whole update -> update
    pytest.param('  p = f32[5,4] parameter(0)\n  i = s32[] parameter(1)\n  u = f32[5,4] parameter(2)',
                 """  a = f32[5,4] dynamic-slice(p, i, i), dynamic_slice_sizes={5,4}
  c3 = s32[] constant(3)
  c1 = s32[] constant(1)
  b = f32[3,2] dynamic-slice(a, c3, c1), dynamic_slice_sizes={3,2}
  d = f32[5,4] dynamic-update-slice(p, u, i, i)
  ROOT r = (f32[3,2], f32[5,4]) tuple(b, d)""",
                 """ENTRY %main (p: f32[5,4], i: s32[], u: f32[5,4]) -> (f32[3,2], f32[5,4]) {
  %p = f32[5,4]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %u = f32[5,4]{1,0} parameter(2)
  %slice = f32[3,2]{1,0} slice(%p), slice={[2:5], [1:3]}
  ROOT %r = (f32[3,2]{1,0}, f32[5,4]{1,0}) tuple(%slice, %u)
}
""",
                 "", id='dynamic_slices'),
    # sort along a size-1 dim -> operand(s); map with a trivial computation -> elementwise op
    pytest.param('  p = f32[3,1] parameter(0)\n  q = s32[3,1] parameter(1)\n  x = f32[4] parameter(2)\n  y = f32[4] parameter(3)',
                 """  a = f32[3,1] sort(p), dimensions={1}, to_apply=lt
  b = (f32[3,1], s32[3,1]) sort(p, q), dimensions={1}, to_apply=lt2
  m = f32[4] map(x, y), dimensions={0}, to_apply=add
  n = f32[4] map(x, y), dimensions={0}, to_apply=second
  ROOT r = (f32[3,1], (f32[3,1], s32[3,1]), f32[4], f32[4]) tuple(a, b, m, n)""",
                 """ENTRY %main (p: f32[3,1], q: s32[3,1], x: f32[4], y: f32[4]) -> (f32[3,1], (f32[3,1], s32[3,1]), f32[4], f32[4]) {
  %p = f32[3,1]{1,0} parameter(0)
  %q = s32[3,1]{1,0} parameter(1)
  %x = f32[4]{0} parameter(2)
  %y = f32[4]{0} parameter(3)
  %tuple = (f32[3,1]{1,0}, s32[3,1]{1,0}) tuple(%p, %q)
  %add.1 = f32[4]{0} add(%x, %y)
  ROOT %r = (f32[3,1]{1,0}, (f32[3,1]{1,0}, s32[3,1]{1,0}), f32[4]{0}, f32[4]{0}) tuple(%p, %tuple, %add.1, %y)
}
""",
                 """lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
lt2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
second {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
""", id='sort_map'),
    # iota along a size-1 dimension -> zeros
    pytest.param('  p = s32[4,1] parameter(0)',
                 """  i = s32[4,1] iota(), iota_dimension=1
  ROOT a = s32[4,1] add(p, i)""",
                 """ENTRY %main (p: s32[4,1]) -> s32[4,1] {
  ROOT %p = s32[4,1]{1,0} parameter(0)
}
""",
                 "", id='iota'),
    # dot without contracting dims -> multiply of broadcasts; a contracting dim of size 1 -> multiply
    pytest.param('  v = f32[3] parameter(0)\n  w = f32[4] parameter(1)\n  a = f32[3,1] parameter(2)\n  b = f32[1,4] parameter(3)',
                 """  o = f32[3,4] dot(v, w), lhs_contracting_dims={}, rhs_contracting_dims={}
  m = f32[3,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (f32[3,4], f32[3,4]) tuple(o, m)""",
                 """ENTRY %main (v: f32[3], w: f32[4], a: f32[3,1], b: f32[1,4]) -> (f32[3,4], f32[3,4]) {
  %v = f32[3]{0} parameter(0)
  %w = f32[4]{0} parameter(1)
  %a = f32[3,1]{1,0} parameter(2)
  %b = f32[1,4]{1,0} parameter(3)
  %broadcast = f32[3,4]{1,0} broadcast(%v), dimensions={0}
  %broadcast.1 = f32[3,4]{1,0} broadcast(%w), dimensions={1}
  %multiply = f32[3,4]{1,0} multiply(%broadcast, %broadcast.1)
  %reshape = f32[3]{0} reshape(%a)
  %reshape.1 = f32[4]{0} reshape(%b)
  %broadcast.2 = f32[3,4]{1,0} broadcast(%reshape), dimensions={0}
  %broadcast.3 = f32[3,4]{1,0} broadcast(%reshape.1), dimensions={1}
  %multiply.1 = f32[3,4]{1,0} multiply(%broadcast.2, %broadcast.3)
  ROOT %r = (f32[3,4]{1,0}, f32[3,4]{1,0}) tuple(%multiply, %multiply.1)
}
""",
                 "", id='dot_outer_and_unit_contraction'),
    # vector . vector -> reduce(multiply) with f32 accumulation; batched dot with unit dims
    pytest.param('  v = bf16[5] parameter(0)\n  w = bf16[5] parameter(1)\n  x = f32[2,1,3] parameter(2)\n  y = f32[2,3,1] parameter(3)',
                 """  d = f32[] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  e = f32[2,1,1] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT r = (f32[], f32[2,1,1]) tuple(d, e)""",
                 """ENTRY %main (v: bf16[5], w: bf16[5], x: f32[2,1,3], y: f32[2,3,1]) -> (f32[], f32[2,1,1]) {
  %v = bf16[5]{0} parameter(0)
  %w = bf16[5]{0} parameter(1)
  %x = f32[2,1,3]{2,1,0} parameter(2)
  %y = f32[2,3,1]{2,1,0} parameter(3)
  %convert = f32[5]{0} convert(%v)
  %convert.1 = f32[5]{0} convert(%w)
  %multiply = f32[5]{0} multiply(%convert, %convert.1)
  %constant = f32[] constant(0)
  %reduce = f32[] reduce(%multiply, %constant), dimensions={0}, to_apply=%add.f32.reducer
  %reshape = f32[2,3]{1,0} reshape(%x)
  %reshape.1 = f32[2,3]{1,0} reshape(%y)
  %multiply.1 = f32[2,3]{1,0} multiply(%reshape, %reshape.1)
  %constant.1 = f32[] constant(0)
  %reduce.1 = f32[2]{0} reduce(%multiply.1, %constant.1), dimensions={1}, to_apply=%add.f32.reducer
  %reshape.2 = f32[2,1,1]{2,1,0} reshape(%reduce.1)
  ROOT %r = (f32[], f32[2,1,1]{2,1,0}) tuple(%reduce, %reshape.2)
}
""",
                 "", id='dot_vector_and_batch'),
    # dot with a zero-sized contracting dimension -> broadcast(0)
    pytest.param('  a = f32[3,0] parameter(0)\n  b = f32[0,4] parameter(1)',
                 """  ROOT d = f32[3,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
                 """ENTRY %main (a: f32[3,0], b: f32[0,4]) -> f32[3,4] {
  %a = f32[3,0]{1,0} parameter(0)
  %b = f32[0,4]{1,0} parameter(1)
  %constant = f32[] constant(0)
  ROOT %broadcast = f32[3,4]{1,0} broadcast(%constant), dimensions={}
}
""",
                 "", id='dot_zero_elements'),
    # reduce of a scalar / over no dims / over size-1 dims: reshape when init is the identity, else op(init, X)
    pytest.param('  sc = f32[] parameter(0)\n  p = f32[4,1] parameter(1)\n  q = s32[3] parameter(2)',
                 """  z = f32[] constant(0)
  a = f32[] reduce(sc, z), dimensions={}, to_apply=add
  b = f32[4] reduce(p, z), dimensions={1}, to_apply=add
  one = f32[] constant(1)
  c = f32[4,1] reduce(p, one), dimensions={}, to_apply=add
  m = s32[] constant(-2147483648)
  d = s32[3] reduce(q, m), dimensions={}, to_apply=imax
  ROOT r = (f32[], f32[4], f32[4,1], s32[3]) tuple(a, b, c, d)""",
                 """ENTRY %main (sc: f32[], p: f32[4,1], q: s32[3]) -> (f32[], f32[4], f32[4,1], s32[3]) {
  %sc = f32[] parameter(0)
  %p = f32[4,1]{1,0} parameter(1)
  %q = s32[3]{0} parameter(2)
  %reshape = f32[4]{0} reshape(%p)
  %one = f32[] constant(1)
  %broadcast = f32[4,1]{1,0} broadcast(%one), dimensions={}
  %add.1 = f32[4,1]{1,0} add(%broadcast, %p)
  ROOT %r = (f32[], f32[4]{0}, f32[4,1]{1,0}, s32[3]{0}) tuple(%sc, %reshape, %add.1, %q)
}
""",
                 """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
imax {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] maximum(a, b)
}
""", id='reduce_trivial'),
    # reduce of a zero-element input -> broadcast(init) (variadic: a tuple of them)
    pytest.param('  p = f32[0,3] parameter(0)\n  q = s32[0,3] parameter(1)',
                 """  z = f32[] constant(0)
  a = f32[3] reduce(p, z), dimensions={0}, to_apply=add
  zi = s32[] constant(7)
  b = (f32[3], s32[3]) reduce(p, q, z, zi), dimensions={0}, to_apply=pair
  ROOT r = (f32[3], (f32[3], s32[3])) tuple(a, b)""",
                 """ENTRY %main (p: f32[0,3], q: s32[0,3]) -> (f32[3], (f32[3], s32[3])) {
  %p = f32[0,3]{1,0} parameter(0)
  %q = s32[0,3]{1,0} parameter(1)
  %z = f32[] constant(0)
  %broadcast = f32[3]{0} broadcast(%z), dimensions={}
  %zi = s32[] constant(7)
  %broadcast.1 = f32[3]{0} broadcast(%z), dimensions={}
  %broadcast.2 = s32[3]{0} broadcast(%zi), dimensions={}
  %tuple = (f32[3]{0}, s32[3]{0}) tuple(%broadcast.1, %broadcast.2)
  ROOT %r = (f32[3]{0}, (f32[3]{0}, s32[3]{0})) tuple(%broadcast, %tuple)
}
""",
                 """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
pair {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  s = f32[] add(a, b)
  k = s32[] add(i, j)
  ROOT t = (f32[], s32[]) tuple(s, k)
}
""", id='reduce_empty'),
    # max of a broadcast scalar -> max(X, init); dims of X -> broadcast(reduce(X)); add over new dims -> broadcast(init + X*N)
    pytest.param('  sc = f32[] parameter(0)\n  v = f32[3] parameter(1)\n  w = s32[3] parameter(2)',
                 """  sb = f32[2,3] broadcast(sc), dimensions={}
  ninf = f32[] constant(-inf)
  a = f32[] reduce(sb, ninf), dimensions={0,1}, to_apply=fmax
  vb = f32[3,4] broadcast(v), dimensions={0}
  z = f32[] constant(0)
  b = f32[4] reduce(vb, z), dimensions={0}, to_apply=add
  wb = s32[5,3,2] broadcast(w), dimensions={1}
  zi = s32[] constant(1)
  c = s32[3] reduce(wb, zi), dimensions={0,2}, to_apply=iadd
  ROOT r = (f32[], f32[4], s32[3]) tuple(a, b, c)""",
                 """ENTRY %main (sc: f32[], v: f32[3], w: s32[3]) -> (f32[], f32[4], s32[3]) {
  %sc = f32[] parameter(0)
  %v = f32[3]{0} parameter(1)
  %w = s32[3]{0} parameter(2)
  %z = f32[] constant(0)
  %reduce = f32[] reduce(%v, %z), dimensions={0}, to_apply=%add
  %broadcast = f32[4]{0} broadcast(%reduce), dimensions={}
  %zi = s32[] constant(1)
  %constant = s32[] constant(10)
  %broadcast.1 = s32[3]{0} broadcast(%constant), dimensions={}
  %multiply = s32[3]{0} multiply(%w, %broadcast.1)
  %broadcast.2 = s32[3]{0} broadcast(%zi), dimensions={}
  %add.1 = s32[3]{0} add(%broadcast.2, %multiply)
  ROOT %r = (f32[], f32[4]{0}, s32[3]{0}) tuple(%sc, %broadcast, %add.1)
}
""",
                 """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fmax {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
iadd {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
""", id='reduce_of_broadcast'),
    # reduce(transpose(X)) -> reduce(X) over the permuted dims (plus a transpose if needed)
    pytest.param('  p = f32[2,3,4] parameter(0)',
                 """  t = f32[4,2,3] transpose(p), dimensions={2,0,1}
  z = f32[] constant(0)
  a = f32[4,2] reduce(t, z), dimensions={2}, to_apply=add
  ROOT b = f32[2] reduce(t, z), dimensions={0,2}, to_apply=add""",
                 """ENTRY %main (p: f32[2,3,4]) -> f32[2] {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %reduce = f32[2]{0} reduce(%p, %z), dimensions={1,2}, to_apply=%add
}
""",
                 """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
""", id='reduce_of_transpose'),
    # ---- sub-rules the cases above do not reach (one case each)
    # pow(A, 3) -> A*(A*A)
    pytest.param('  p = f32[4] parameter(0)',
                 """  c3 = f32[] constant(3)
  b3 = f32[4] broadcast(c3), dimensions={}
  ROOT a = f32[4] power(p, b3)""",
                 """ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %multiply = f32[4]{0} multiply(%p, %p)
  ROOT %multiply.1 = f32[4]{0} multiply(%p, %multiply)
}
""",
                 "", id='power_cube'),
    # max(A, max(A, B)) -> max(A, B); min(min(A, B), A) -> min(A, B); max(B, max(A, B)) kept (NaN sign, as XLA)
    pytest.param('  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  i = s32[4] parameter(2)\n  j = s32[4] parameter(3)',
                 """  m = f32[4] maximum(a, b)
  x = f32[4] maximum(a, m)
  y = f32[4] maximum(b, m)
  n = s32[4] minimum(i, j)
  z = s32[4] minimum(n, i)
  ROOT t = (f32[4], f32[4], s32[4]) tuple(x, y, z)""",
                 """ENTRY %main (a: f32[4], b: f32[4], i: s32[4], j: s32[4]) -> (f32[4], f32[4], s32[4]) {
  %a = f32[4]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %i = s32[4]{0} parameter(2)
  %j = s32[4]{0} parameter(3)
  %m = f32[4]{0} maximum(%a, %b)
  %y = f32[4]{0} maximum(%b, %m)
  %n = s32[4]{0} minimum(%i, %j)
  ROOT %t = (f32[4]{0}, f32[4]{0}, s32[4]{0}) tuple(%m, %y, %n)
}
""",
                 "", id='minmax_nested_right'),
    # abs(A) -> A for float X*X, a small s32 iota, max with a non-negative, a select of non-negatives;
    # kept for signed X*X and for min with a possibly negative value
    pytest.param('  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)\n  c = pred[4] parameter(2)',
                 """  sq = f32[4] multiply(p, p)
  a = f32[4] abs(sq)
  isq = s32[4] multiply(q, q)
  b = s32[4] abs(isq)
  io = s32[4] iota(), iota_dimension=0
  c1 = s32[4] abs(io)
  two = f32[] constant(2)
  tb = f32[4] broadcast(two), dimensions={}
  mx = f32[4] maximum(p, tb)
  d = f32[4] abs(mx)
  ex = f32[4] exponential(p)
  se = f32[4] select(c, ex, sq)
  e = f32[4] abs(se)
  mn = f32[4] minimum(p, tb)
  f = f32[4] abs(mn)
  ROOT t = (f32[4], s32[4], s32[4], f32[4], f32[4], f32[4]) tuple(a, b, c1, d, e, f)""",
                 """ENTRY %main (p: f32[4], q: s32[4], c: pred[4]) -> (f32[4], s32[4], s32[4], f32[4], f32[4], /*index=5*/f32[4]) {
  %p = f32[4]{0} parameter(0)
  %q = s32[4]{0} parameter(1)
  %c = pred[4]{0} parameter(2)
  %sq = f32[4]{0} multiply(%p, %p)
  %isq = s32[4]{0} multiply(%q, %q)
  %b = s32[4]{0} abs(%isq)
  %io = s32[4]{0} iota(), iota_dimension=0
  %two = f32[] constant(2)
  %tb = f32[4]{0} broadcast(%two), dimensions={}
  %mx = f32[4]{0} maximum(%p, %tb)
  %ex = f32[4]{0} exponential(%p)
  %se = f32[4]{0} select(%c, %ex, %sq)
  %mn = f32[4]{0} minimum(%p, %tb)
  %f = f32[4]{0} abs(%mn)
  ROOT %t = (f32[4]{0}, s32[4]{0}, s32[4]{0}, f32[4]{0}, f32[4]{0}, /*index=5*/f32[4]{0}) tuple(%sq, %b, %io, %mx, %se, /*index=5*/%f)
}
""",
                 "", id='abs_non_negative'),
    # copy(copy(A)) -> copy(A) when both copies change the layout
    pytest.param('  p = f32[2,3,4]{2,1,0} parameter(0)',
                 """  a = f32[2,3,4]{0,1,2} copy(p)
  b = f32[2,3,4]{1,0,2} copy(a)
  ROOT c = f32[2,3,4]{0,2,1} bitcast(b)""",
                 """ENTRY %main (p: f32[2,3,4]) -> f32[2,3,4] {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %copy = f32[2,3,4]{1,0,2} copy(%p)
  ROOT %c = f32[2,3,4]{0,2,1} bitcast(%copy)
}
""",
                 "", id='copy_of_layout_copies'),
    # reverse(reverse(A, d1), d2) -> reverse(A, d1 xor d2)
    pytest.param('  p = f32[2,3,4] parameter(0)',
                 """  a = f32[2,3,4] reverse(p), dimensions={0,1}
  ROOT b = f32[2,3,4] reverse(a), dimensions={1,2}""",
                 """ENTRY %main (p: f32[2,3,4]) -> f32[2,3,4] {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  ROOT %reverse = f32[2,3,4]{2,1,0} reverse(%p), dimensions={0,2}
}
""",
                 "", id='reverse_xor'),
    # a slice spanning a run of operands (not all) -> slice of their concatenate; a full slice -> the concatenate
    pytest.param('  p = f32[2,3] parameter(0)\n  q = f32[4,3] parameter(1)\n  r = f32[3,3] parameter(2)\n  s = f32[1,3] parameter(3)',
                 """  c = f32[10,3] concatenate(p, q, r, s), dimensions={0}
  a = f32[5,2] slice(c), slice={[3:8], [1:3]}
  b = f32[10,3] slice(c), slice={[0:10], [0:3]}
  ROOT t = (f32[5,2], f32[10,3]) tuple(a, b)""",
                 """ENTRY %main (p: f32[2,3], q: f32[4,3], r: f32[3,3], s: f32[1,3]) -> (f32[5,2], f32[10,3]) {
  %p = f32[2,3]{1,0} parameter(0)
  %q = f32[4,3]{1,0} parameter(1)
  %r = f32[3,3]{1,0} parameter(2)
  %s = f32[1,3]{1,0} parameter(3)
  %c = f32[10,3]{1,0} concatenate(%p, %q, %r, %s), dimensions={0}
  %concatenate = f32[7,3]{1,0} concatenate(%q, %r), dimensions={0}
  %slice = f32[5,2]{1,0} slice(%concatenate), slice={[1:6], [1:3]}
  ROOT %t = (f32[5,2]{1,0}, f32[10,3]{1,0}) tuple(%slice, %c)
}
""",
                 "", id='slice_of_concat_run'),
    # concatenate(broadcast(s), X) -> pad(X, s) with low padding
    pytest.param('  p = f32[2,3] parameter(0)\n  v = f32[] parameter(1)',
                 """  vb = f32[2,2] broadcast(v), dimensions={}
  ROOT d = f32[2,5] concatenate(vb, p), dimensions={1}""",
                 """ENTRY %main (p: f32[2,3], v: f32[]) -> f32[2,5] {
  %p = f32[2,3]{1,0} parameter(0)
  %v = f32[] parameter(1)
  ROOT %pad = f32[2,5]{1,0} pad(%p, %v), padding=0_0x2_0
}
""",
                 "", id='concat_broadcast_low'),
    # dynamic-update-slice with a zero-element update -> A
    pytest.param('  p = f32[5,4] parameter(0)\n  u = f32[0,4] parameter(1)\n  i = s32[] parameter(2)',
                 """  ROOT d = f32[5,4] dynamic-update-slice(p, u, i, i)""",
                 """ENTRY %main (p: f32[5,4], u: f32[0,4], i: s32[]) -> f32[5,4] {
  ROOT %p = f32[5,4]{1,0} parameter(0)
  %u = f32[0,4]{1,0} parameter(1)
  %i = s32[] parameter(2)
}
""",
                 "", id='dus_empty_update'),
    # map whose computation returns a scalar constant -> broadcast of it
    pytest.param('  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)',
                 """  ROOT m = f32[4] map(x, y), dimensions={0}, to_apply=seven""",
                 """ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %constant = f32[] constant(7)
  ROOT %broadcast = f32[4]{0} broadcast(%constant), dimensions={}
}
""",
                 """seven {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] constant(7)
}
""", id='map_constant'),
    # unsigned X >= 0 -> true, 0 > X -> false
    pytest.param('  u = u32[4] parameter(0)\n  v = u8[4] parameter(1)',
                 """  z = u32[] constant(0)
  zb = u32[4] broadcast(z), dimensions={}
  a = pred[4] compare(u, zb), direction=GE
  zb8 = u8[4] constant({0, 0, 0, 0})
  b = pred[4] compare(zb8, v), direction=GT
  ROOT r = (pred[4], pred[4]) tuple(a, b)""",
                 """ENTRY %main (u: u32[4], v: u8[4]) -> (pred[4], pred[4]) {
  %u = u32[4]{0} parameter(0)
  %v = u8[4]{0} parameter(1)
  %constant = pred[] constant(true)
  %broadcast = pred[4]{0} broadcast(%constant), dimensions={}
  %constant.1 = pred[] constant(false)
  %broadcast.1 = pred[4]{0} broadcast(%constant.1), dimensions={}
  ROOT %r = (pred[4]{0}, pred[4]{0}) tuple(%broadcast, %broadcast.1)
}
""",
                 "", id='compare_unsigned_ge_gt'),
    # reduce(transpose(X)) -> transpose(reduce(X)) when the kept dimensions change order
    pytest.param('  p = f32[2,3,4] parameter(0)',
                 """  t = f32[4,2,3] transpose(p), dimensions={2,0,1}
  z = f32[] constant(0)
  ROOT a = f32[4,2] reduce(t, z), dimensions={2}, to_apply=add""",
                 """ENTRY %main (p: f32[2,3,4]) -> f32[4,2] {
  %p = f32[2,3,4]{2,1,0} parameter(0)
  %z = f32[] constant(0)
  %reduce = f32[2,4]{1,0} reduce(%p, %z), dimensions={1}, to_apply=%add
  ROOT %transpose = f32[4,2]{1,0} transpose(%reduce), dimensions={1,0}
}
""",
                 """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
""", id='reduce_of_transpose_reordered'),
    # copy at the entry root with a sharding is kept
    pytest.param('  p = f32[4] parameter(0)',
                 """  ROOT c = f32[4] copy(p), sharding={replicated}""",
                 """ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} copy(%p), sharding={replicated}
}
""",
                 "", id='sharded_root_copy'),
    # broadcast(X) to X's own shape with dimensions in order -> X
    pytest.param('  p = f32[4,3] parameter(0)',
                 """  ROOT b = f32[4,3] broadcast(p), dimensions={0,1}""",
                 """ENTRY %main (p: f32[4,3]) -> f32[4,3] {
  ROOT %p = f32[4,3]{1,0} parameter(0)
}
""",
                 "", id='broadcast_same_shape'),
    # dot rules only for an unset algorithm or dot_f32_f32_f32 (XLA's SupportedDotPrecisionConfig)
    pytest.param('  a = f32[3] parameter(0)\n  b = f32[4] parameter(1)',
                 """  o = f32[3,4] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}, algorithm=dot_bf16_bf16_f32
  p = f32[3,4] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}, algorithm=dot_f32_f32_f32
  ROOT t = (f32[3,4], f32[3,4]) tuple(o, p)""",
                 """ENTRY %main (a: f32[3], b: f32[4]) -> (f32[3,4], f32[3,4]) {
  %a = f32[3]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %o = f32[3,4]{1,0} dot(%a, %b), lhs_contracting_dims={}, rhs_contracting_dims={}, algorithm=dot_bf16_bf16_f32
  %broadcast = f32[3,4]{1,0} broadcast(%a), dimensions={0}
  %broadcast.1 = f32[3,4]{1,0} broadcast(%b), dimensions={1}
  %multiply = f32[3,4]{1,0} multiply(%broadcast, %broadcast.1)
  ROOT %t = (f32[3,4]{1,0}, f32[3,4]{1,0}) tuple(%o, %multiply)
}
""",
                 "", id='dot_algorithm_kept'),
]


@pytest.mark.parametrize("params,body,expected,extra", RULE_CASES)
def test_rule(params, body, expected, extra):
    check(module(params, body, extra), expected)


# =========================================================================== pass-level properties


def test_registered_with_a_description():
    passes = available_passes()
    assert passes["algsimp"].description


def test_jax_broadcast_in_dim_chain():
    """JAX's broadcast_in_dim lowering: reshape, identity broadcast, reshape back, broadcast."""
    check(module("  x.1 = f32[2,3,4]{2,1,0} parameter(0)\n  y.1 = f32[4]{0} parameter(1)",
                 """  broadcast_in_dim.6 = f32[1,1,4]{2,1,0} reshape(y.1)
  mul.4 = f32[1,1,4]{2,1,0} broadcast(broadcast_in_dim.6), dimensions={0,1,2}
  mul.5 = f32[4]{0} reshape(mul.4)
  mul.6 = f32[2,3,4]{2,1,0} broadcast(mul.5), dimensions={2}
  ROOT mul.7 = f32[2,3,4]{2,1,0} multiply(x.1, mul.6)"""),
          """ENTRY %main (x.1: f32[2,3,4], y.1: f32[4]) -> f32[2,3,4] {
  %x.1 = f32[2,3,4]{2,1,0} parameter(0)
  %y.1 = f32[4]{0} parameter(1)
  %broadcast = f32[2,3,4]{2,1,0} broadcast(%y.1), dimensions={2}
  ROOT %mul.7 = f32[2,3,4]{2,1,0} multiply(%x.1, %broadcast)
}
""")


def test_broadcast_without_dimensions_attribute():
    """A scalar broadcast may omit `dimensions=`; rules read it as empty."""
    check(module("  p = f32[] parameter(0)",
                 """  b = f32[3] broadcast(p)
  r = f32[3] reverse(b), dimensions={0}
  ROOT t = f32[2,3] broadcast(r), dimensions={1}"""),
          """ENTRY %main (p: f32[]) -> f32[2,3] {
  %p = f32[] parameter(0)
  ROOT %broadcast.1 = f32[2,3]{1,0} broadcast(%p), dimensions={}
}
""")


def test_layout_changing_ops_are_kept():
    """An identity transpose or a same-dims reshape that changes the layout feeds a bitcast:
    removing it would change what the bitcast reads."""
    text = module("  p = f32[2,3]{1,0} parameter(0)",
                  """  t = f32[2,3]{0,1} transpose(p), dimensions={0,1}
  r = f32[2,3]{0,1} reshape(p)
  a = f32[6]{0} bitcast(t)
  b = f32[6]{0} bitcast(r)
  ROOT o = (f32[6]{0}, f32[6]{0}) tuple(a, b)""")
    before, after = simplify(text, "algsimp")
    assert entry_text(after) == entry_text(before)
    assert_same_results(before, after)


def test_side_effects_and_control_dependencies_are_left_alone():
    text = module("  p = f32[4] parameter(0)",
                  """  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  one = f32[] constant(1)
  r = f32[4] rng(z, one), distribution=rng_uniform
  s = f32[4] add(r, zb)
  m = f32[4] add(p, zb)
  a = f32[4] add(p, zb), control-predecessors={m}
  tok = token[] after-all()
  o = token[] outfeed(a, tok), outfeed_shape=f32[4]{0}
  ROOT t = (f32[4], f32[4]) tuple(s, a)""")
    _, after = simplify(text)
    assert entry_text(after) == """ENTRY %main (p: f32[4]) -> (f32[4], f32[4]) {
  %p = f32[4]{0} parameter(0)
  %z = f32[] constant(0)
  %zb = f32[4]{0} broadcast(%z), dimensions={}
  %one = f32[] constant(1)
  %r = f32[4]{0} rng(%z, %one), distribution=rng_uniform
  %m = f32[4]{0} add(%p, %zb)
  %a = f32[4]{0} add(%p, %zb), control-predecessors={%m}
  %tok = token[] after-all()
  %o = token[] outfeed(%a, %tok), outfeed_shape=f32[4]{0}
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%r, %a)
}
"""


def test_fusion_bodies_are_not_simplified():
    text = """HloModule m
fused {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  ROOT a = f32[4] add(x, zb)
}
ENTRY main {
  p = f32[4] parameter(0)
  f = f32[4] fusion(p), kind=kLoop, calls=fused
  c = f32[] constant(1)
  cb = f32[4] broadcast(c), dimensions={}
  ROOT m = f32[4] multiply(f, cb)
}
"""
    before, after = simplify(text)
    assert "ROOT %a = f32[4]{0} add(%x, %zb)" in format_module(after)
    assert "ROOT %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused" in format_module(after)
    assert_same_results(before, after)


def test_program_shape_kept_and_second_run_changes_nothing():
    text = module("  p = f32[3,1] parameter(0)",
                  """  r = f32[3] reshape(p)
  b = f32[3,1] broadcast(r), dimensions={0}
  z = f32[] constant(0)
  zb = f32[3,1] broadcast(z), dimensions={}
  ROOT a = f32[3,1] add(b, zb)""")
    m = parse_module(text)
    shape = m.entry_program_shape()
    algsimp = available_passes()["algsimp"]()
    assert algsimp.run(m)
    assert m.entry_program_shape() == shape
    assert not algsimp.run(m)
    assert "ROOT %p = f32[3,1]{1,0} parameter(0)" in entry_text(m)


def test_new_names_follow_xla_uniquing():
    """New instructions are named after their opcode, with `.N` when the name is taken
    (including names that already carry a suffix), and the result prints and re-parses."""
    after, _ = ALGSIMP.optimise(module("  q = s32[4] parameter(0)", """  constant = s32[] constant(3)
  broadcast.2 = s32[4] broadcast(constant), dimensions={}
  a = s32[4] subtract(q, q)
  b = s32[4] subtract(broadcast.2, broadcast.2)
  ROOT t = (s32[4], s32[4]) tuple(a, b)"""))
    names = [i.name for c in after.computations for i in c.instructions]
    assert len(names) == len(set(names))
    new = [n for n in names if n not in ("q", "t")]
    assert len(new) == 4 and all(re.fullmatch(r"(constant|broadcast)(\.\d+)?", n) for n in new)
    assert "constant" not in new  # taken by the (now dead) parsed constant when the rules ran


# =========================================================================== helpers


@pytest.mark.parametrize("frm,to,expected", [
    ("s8", "s32", True), ("s32", "s8", False), ("u8", "s16", True), ("u8", "s8", False), ("s8", "u32", False),
    ("f16", "f32", True), ("bf16", "f32", True), ("f16", "bf16", False), ("f32", "f16", False),
    ("s16", "f32", True), ("s32", "f32", False), ("u8", "bf16", True), ("pred", "f32", True),
    ("f32", "pred", False), ("f32", "c64", True), ("c64", "f32", False), ("f8e4m3fn", "f16", True),
    ("f16", "f8e4m3fn", False), ("f8e5m2", "f16", True),
])
def test_cast_preserves_values(frm, to, expected):
    assert cast_preserves_values(PRIMITIVE_TYPES[frm], PRIMITIVE_TYPES[to]) is expected


def test_reshape_dimension_maps():
    assert map_dims_through_reshape((2, 3), (2, 1, 3), (0, 1)) == [0, 2]
    assert map_dims_through_reshape((2, 3), (6,), (1,)) is None
    assert map_dims_through_reshape((4, 6), (4, 2, 3), (0,)) == [0]
    assert map_dims_through_reshape((0, 3), (3, 0), (0,)) is None
    assert ones_inserted_or_deleted((3, 1, 4), (1, 3, 4)) == ([1], [0])
    assert ones_inserted_or_deleted((3, 4), (12,)) is None


# =========================================================================== property: random data-movement chains

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _shapes_with_count(n: int, max_rank: int = 4):
    """Every dims tuple of rank 1..max_rank whose product is n."""
    out = []

    def grow(prefix, rest):
        if prefix and rest == 1:
            out.append(tuple(prefix))
        if len(prefix) == max_rank:
            return
        for d in range(1, rest + 1):
            if rest % d == 0 and not (d == 1 and rest == 1 and len(prefix) >= 2):
                grow(prefix + [d], rest // d)

    grow([], n)
    return out


def _dims_text(dims):
    return ",".join(map(str, dims))


def _chain_step(draw, name, src, dims):
    """One random data-movement (or identity arithmetic) op applied to `src`; (line, new dims)."""
    kind = draw(st.sampled_from(["reshape", "transpose", "broadcast", "slice", "reverse", "add0", "mul1",
                                 "pad", "concat"]))
    rank = len(dims)
    if kind == "reshape":
        new = draw(st.sampled_from(_shapes_with_count(math.prod(dims))))
        return f"{name} = f32[{_dims_text(new)}] reshape({src})", new
    if kind == "transpose":
        perm = draw(st.permutations(range(rank)))
        new = tuple(dims[p] for p in perm)
        return f"{name} = f32[{_dims_text(new)}] transpose({src}), dimensions={{{_dims_text(perm)}}}", new
    if kind == "broadcast" and rank < 4:
        at = draw(st.integers(0, rank))
        size = draw(st.integers(1, 3))
        new = dims[:at] + (size,) + dims[at:]
        mapping = [d if d < at else d + 1 for d in range(rank)]
        return f"{name} = f32[{_dims_text(new)}] broadcast({src}), dimensions={{{_dims_text(mapping)}}}", new
    if kind == "slice":
        ranges, new = [], []
        for n in dims:
            start = draw(st.integers(0, n - 1))
            limit = draw(st.integers(start + 1, n))
            stride = draw(st.integers(1, 2))
            ranges.append(f"[{start}:{limit}:{stride}]")
            new.append(-(-(limit - start) // stride))
        return f"{name} = f32[{_dims_text(new)}] slice({src}), slice={{{', '.join(ranges)}}}", tuple(new)
    if kind == "reverse":
        rdims = draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1))
        return f"{name} = f32[{_dims_text(dims)}] reverse({src}), dimensions={{{_dims_text(sorted(rdims))}}}", dims
    if kind in ("add0", "mul1"):
        op, value = ("add", 0) if kind == "add0" else ("multiply", 1)
        return (f"{name}.c = f32[] constant({value})\n  {name}.b = f32[{_dims_text(dims)}] broadcast({name}.c), "
                f"dimensions={{}}\n  {name} = f32[{_dims_text(dims)}] {op}({src}, {name}.b)"), dims
    if kind == "pad":
        config, new = [], []
        for n in dims:
            lo, hi, interior = draw(st.integers(0, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 1))
            config.append(f"{lo}_{hi}_{interior}")
            new.append(lo + hi + n + (n - 1) * interior)
        return (f"{name}.v = f32[] constant(0)\n  {name} = f32[{_dims_text(new)}] pad({src}, {name}.v), "
                f"padding={'x'.join(config)}"), tuple(new)
    dim = draw(st.integers(0, rank - 1))
    new = dims[:dim] + (2 * dims[dim],) + dims[dim + 1:]
    return f"{name} = f32[{_dims_text(new)}] concatenate({src}, {src}), dimensions={{{dim}}}", new


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_data_movement_chains_keep_their_value(data):
    draw = data.draw
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    lines, src, cur = [], "p", dims
    for i in range(draw(st.integers(1, 5))):
        line, cur = _chain_step(draw, f"v{i}", src, cur)
        lines.append("  " + line)
        src = f"v{i}"
    lines[-1] = lines[-1].replace(f"  {src} = ", f"  ROOT {src} = ") if "\n" not in lines[-1] else \
        lines[-1].rsplit("\n", 1)[0] + "\n  ROOT " + lines[-1].rsplit("\n  ", 1)[1]
    text = module(f"  p = f32[{_dims_text(dims)}] parameter(0)", "\n".join(lines))
    before, after = simplify(text)
    assert_same_results(before, after)


_SPECIAL_CONSTANTS = {
    "f32": ["0", "-0", "1", "-1", "2", "3", "inf", "-inf", "nan"],
    "s32": ["0", "1", "-1", "2", "3", "-2147483648", "2147483647"],
    "u8": ["0", "1", "2", "3", "255"],
    "pred": ["true", "false"],
}
_OPS = {
    "f32": ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"],
    "s32": ["add", "subtract", "multiply", "maximum", "minimum", "power", "and", "or", "xor"],
    "u8": ["add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor"],
    "pred": ["and", "or", "xor"],
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_elementwise_expressions_with_special_constants_keep_their_value(data):
    draw = data.draw
    t = draw(st.sampled_from(sorted(_OPS)))
    values = ["p", "q"]
    lines = []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["binary", "unary", "select", "compare"]))
        a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values + ["const"] * 2))
        if b == "const":
            lines += [f"  k{i} = {t}[] constant({draw(st.sampled_from(_SPECIAL_CONSTANTS[t]))})",
                      f"  kb{i} = {t}[4] broadcast(k{i}), dimensions={{}}"]
            b = f"kb{i}"
        if draw(st.booleans()):
            a, b = b, a
        if kind == "binary":
            lines.append(f"  v{i} = {t}[4] {draw(st.sampled_from(_OPS[t]))}({a}, {b})")
        elif kind == "unary":
            op = "not" if t in ("pred", "u8") else draw(st.sampled_from(["negate", "abs"]))
            lines.append(f"  v{i} = {t}[4] {op}({a})")
        else:
            direction = draw(st.sampled_from(["EQ", "NE", "LT", "LE", "GT", "GE"]))
            lines.append(f"  c{i} = pred[4] compare({a}, {b}), direction={direction}")
            if kind == "compare" and t == "pred":
                lines.append(f"  v{i} = pred[4] and(c{i}, {a})")
            else:
                lines.append(f"  v{i} = {t}[4] select(c{i}, {a}, {b})")
        values.append(f"v{i}")
    body = "\n".join(lines) + f"\n  ROOT out = ({t}[4], {t}[4]) tuple({values[-1]}, {values[-2]})"
    text = module(f"  p = {t}[4] parameter(0)\n  q = {t}[4] parameter(1)", body)
    before, after = simplify(text)
    assert_same_results(before, after)
    assert_same_results(before, after, seed=3)
