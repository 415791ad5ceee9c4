"""while-loop-invariant-code-motion: expected output, and interpreter equivalence on random inputs."""
from pass_testing import PassTester, body

PASS = "while-loop-invariant-code-motion"
LICM = PassTester(PASS, rtol=1e-5, atol=1e-6, ints=(0, 4))
optimised, assert_same_outputs = LICM.optimised, LICM.assert_same_outputs


def loop(body_lines: str, state: str = "(s32[], f32[4], f32[4,4], f32[4])", trips: int = 3) -> str:
    return f"""HloModule m
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[4] get-tuple-element(s), index=1
  m = f32[4,4] get-tuple-element(s), index=2
  b = f32[4] get-tuple-element(s), index=3
{body_lines}
  ROOT r = {state} tuple(j, x2, m, b)
}}
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({trips})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
ENTRY main {{
  p = f32[4] parameter(0)
  pm = f32[4,4] parameter(1)
  pb = f32[4] parameter(2)
  zero = s32[] constant(0)
  init = {state} tuple(zero, p, pm, pb)
  w = {state} while(init), condition=cond, body=body
  ROOT g = f32[4] get-tuple-element(w), index=1
}}
"""


HOISTABLE = loop("""  mt = f32[4,4] transpose(m), dimensions={1,0}
  mm = f32[4,4] dot(m, mt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  eb = f32[4] exponential(b)
  two = f32[] constant(2)
  twos = f32[4] broadcast(two), dimensions={}
  mx = f32[4] dot(mm, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sum = f32[4] add(mx, eb)
  x2 = f32[4] multiply(sum, twos)""")


def test_hoists_invariant_computations_into_new_loop_carried_elements():
    module, changed = optimised(HOISTABLE)
    assert changed
    # m.m^T and exp(b) only read elements the body passes through: they are computed
    # once before the loop (the transpose comes along) and carried as elements 4 and 5.
    # The broadcast of a constant is not worth an element of its own: it stays.
    assert body(module) == """%body.clone (s.clone: (s32[], f32[4], f32[4,4], f32[4], f32[4,4], /*index=5*/f32[4])) -> (s32[], f32[4], f32[4,4], f32[4], f32[4,4], /*index=5*/f32[4]) {
  %s.clone = (s32[], f32[4]{0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}, /*index=5*/f32[4]{0}) parameter(0)
  %get-tuple-element = f32[4,4]{1,0} get-tuple-element(%s.clone), index=4
  %get-tuple-element.1 = f32[4]{0} get-tuple-element(%s.clone), index=5
  %i.clone = s32[] get-tuple-element(%s.clone), index=0
  %one.clone = s32[] constant(1)
  %j.clone = s32[] add(%i.clone, %one.clone)
  %x.clone = f32[4]{0} get-tuple-element(%s.clone), index=1
  %m.clone = f32[4,4]{1,0} get-tuple-element(%s.clone), index=2
  %b.clone = f32[4]{0} get-tuple-element(%s.clone), index=3
  %two.clone = f32[] constant(2)
  %twos.clone = f32[4]{0} broadcast(%two.clone), dimensions={}
  %mx.clone = f32[4]{0} dot(%get-tuple-element, %x.clone), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sum.clone = f32[4]{0} add(%mx.clone, %get-tuple-element.1)
  %x2.clone = f32[4]{0} multiply(%sum.clone, %twos.clone)
  ROOT %r.clone = (s32[], f32[4]{0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}, /*index=5*/f32[4]{0}) tuple(%j.clone, %x2.clone, %m.clone, %b.clone, %get-tuple-element, /*index=5*/%get-tuple-element.1)
}

%cond.clone (s.1.clone: (s32[], f32[4], f32[4,4], f32[4], f32[4,4], /*index=5*/f32[4])) -> pred[] {
  %s.1.clone = (s32[], f32[4]{0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}, /*index=5*/f32[4]{0}) parameter(0)
  %i.1.clone = s32[] get-tuple-element(%s.1.clone), index=0
  %n.clone = s32[] constant(3)
  ROOT %lt.clone = pred[] compare(%i.1.clone, %n.clone), direction=LT
}

ENTRY %main (p: f32[4], pm: f32[4,4], pb: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %pm = f32[4,4]{1,0} parameter(1)
  %pb = f32[4]{0} parameter(2)
  %zero = s32[] constant(0)
  %mt.1 = f32[4,4]{1,0} transpose(%pm), dimensions={1,0}
  %mm.1 = f32[4,4]{1,0} dot(%pm, %mt.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %eb.1 = f32[4]{0} exponential(%pb)
  %tuple = (s32[], f32[4]{0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}, /*index=5*/f32[4]{0}) tuple(%zero, %p, %pm, %pb, %mm.1, /*index=5*/%eb.1)
  %w.1 = (s32[], f32[4]{0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}, /*index=5*/f32[4]{0}) while(%tuple), condition=%cond.clone, body=%body.clone
  ROOT %get-tuple-element.3 = f32[4]{0} get-tuple-element(%w.1), index=1
}
"""
    assert_same_outputs(HOISTABLE)


def test_chains_are_carried_once_and_the_simplifier_drops_what_became_dead():
    text = loop("""  e1 = f32[4] exponential(b)
  e2 = f32[4] log(e1)
  e3 = f32[4] sqrt(e2)
  x2 = f32[4] add(x, e3)""")
    module, changed = optimised(text, PASS + ",while-loop-simplifier,tuple-simplifier,dce")
    assert changed
    loop_op = next(i for i in module.entry.instructions if i.opcode == "while")
    # only e3 is carried; m and b, now unused in the body, are dropped by the simplifier
    assert str(loop_op.shape) == "(s32[], f32[4]{0}, f32[4]{0})"
    assert [i.opcode for i in module.entry.instructions if i.opcode in ("exponential", "log", "sqrt")] == \
        ["exponential", "log", "sqrt"]
    assert_same_outputs(text, PASS + ",while-loop-simplifier,tuple-simplifier,dce")


def test_not_worth_hoisting_alone():
    # Broadcasts, transposes and reshapes of invariants, and constants, only grow the state.
    text = loop("""  bb = f32[4,4] broadcast(b), dimensions={1}
  mt = f32[4,4] transpose(m), dimensions={1,0}
  sm = f32[4,4] add(mt, bb)
  xs = f32[4,4] broadcast(x), dimensions={0}
  prod = f32[4,4] multiply(sm, xs)
  k = f32[] constant(0)
  red = f32[4] reduce(prod, k), dimensions={1}, to_apply=add_f32
  x2 = f32[4] negate(red)""").replace("body {", """add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
body {""")
    module, changed = optimised(text, PASS + ",tuple-simplifier,dce")
    assert changed
    # add(transpose(m), broadcast(b)) is worth hoisting: it is carried; its operands come along.
    assert [i.opcode for i in module.entry.instructions if i.opcode in ("broadcast", "transpose", "add")] == \
        ["transpose", "broadcast", "add"]
    assert_same_outputs(text, PASS + ",tuple-simplifier,dce")

    lone = loop("""  c = f32[4] constant({1, 2, 3, 4})
  bb = f32[4,4] broadcast(b), dimensions={1}
  rs = f32[16] reshape(bb)
  sl = f32[4] slice(rs), slice={[0:4]}
  xc = f32[4] add(x, c)
  x2 = f32[4] add(xc, sl)""")
    module, changed = optimised(lone)
    assert not changed


def test_side_effects_variant_values_and_short_loops_stay():
    variant = loop("""  x2 = f32[4] exponential(x)""")
    assert not optimised(variant)[1]
    noisy = loop("""  z = f32[] constant(0)
  o = f32[] constant(1)
  r0 = f32[4] rng(z, o), distribution=rng_uniform
  e = f32[4] exponential(b)
  t = token[] after-all()
  of = token[] outfeed(b, t), outfeed_shape=f32[4]{0}
  fr = f32[4] fusion(b), kind=kLoop, calls=fused_rng
  sum = f32[4] add(r0, x)
  sum2 = f32[4] add(sum, fr)
  x2 = f32[4] add(sum2, e)""").replace("body {", """fused_rng {
  v = f32[4] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  u = f32[4] rng(lo, hi), distribution=rng_uniform
  ROOT a = f32[4] add(v, u)
}
body {""")
    module, changed = optimised(noisy)
    assert changed  # exp(b) moves; the rng, the fusion calling rng and the outfeed stay in the body
    new_body = next(i for i in module.entry.instructions if i.opcode == "while").attrs["body"]
    assert {"rng", "outfeed", "after-all", "fusion"} <= {i.opcode for i in new_body.instructions}
    assert "exponential" not in {i.opcode for i in new_body.instructions}
    once = loop("""  e = f32[4] exponential(b)
  x2 = f32[4] add(x, e)""", trips=1)
    assert not optimised(once)[1]


def test_loop_state_read_as_a_whole_and_nested_loops():
    text = """HloModule m
inner_body {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[3] get-tuple-element(s), index=1
  c = f32[3] get-tuple-element(s), index=2
  cc = f32[3] cosine(c)
  x2 = f32[3] add(x, cc)
  ROOT r = (s32[], f32[3], f32[3]) tuple(j, x2, c)
}
inner_cond {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
outer_body {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  zero = s32[] constant(0)
  x = f32[3] get-tuple-element(s), index=1
  c = f32[3] get-tuple-element(s), index=2
  sc = f32[3] sine(c)
  init = (s32[], f32[3], f32[3]) tuple(zero, x, sc)
  w = (s32[], f32[3], f32[3]) while(init), condition=inner_cond, body=inner_body
  y = f32[3] get-tuple-element(w), index=1
  copy = (s32[], f32[3], f32[3]) copy(s)
  ROOT r = (s32[], f32[3], f32[3]) tuple(j, y, c)
}
outer_cond {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  p = f32[3] parameter(0)
  q = f32[3] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(zero, p, q)
  w = (s32[], f32[3], f32[3]) while(init), condition=outer_cond, body=outer_body
  ROOT g = f32[3] get-tuple-element(w), index=1
}
"""
    module, changed = optimised(text, PASS + ",dce")
    assert changed
    entry_ops = [i.opcode for i in module.entry.instructions]
    assert "sine" in entry_ops  # hoisted out of the outer loop
    assert_same_outputs(text, PASS + ",dce")
