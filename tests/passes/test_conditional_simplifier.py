"""conditional-simplifier: expected output per rule, and interpreter equivalence on random inputs."""
import pytest

from pass_testing import PassTester, body

# Integer branch indices from -1 to 3: out-of-range indices pick the last branch.
CONDITIONAL_SIMPLIFIER = PassTester("conditional-simplifier", seeds=tuple(range(6)), rtol=1e-6, atol=0,
                                    ints=(-1, 4))
optimised, assert_same_outputs = CONDITIONAL_SIMPLIFIER.optimised, CONDITIONAL_SIMPLIFIER.assert_same_outputs
assert_unchanged = CONDITIONAL_SIMPLIFIER.assert_unchanged


def two_branches(predicate: str) -> str:
    return f"""HloModule m
on_true {{
  t = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(t), index=0
  n = f32[4] negate(a)
  ROOT r = (f32[4], f32[4]) tuple(n, a)
}}
on_false {{
  t = (f32[4], f32[4]) parameter(0)
  b = f32[4] get-tuple-element(t), index=1
  e = f32[4] exponential(b)
  ROOT r = (f32[4], f32[4]) tuple(e, b)
}}
ENTRY e {{
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  {predicate}
  ops = (f32[4], f32[4]) tuple(x, y)
  cond = (f32[4], f32[4]) conditional(c, ops, ops), true_computation=on_true, false_computation=on_false
  g0 = f32[4] get-tuple-element(cond), index=0
  g1 = f32[4] get-tuple-element(cond), index=1
  ROOT out = f32[4] add(g0, g1)
}}
"""


def test_constant_predicate_inlines_the_chosen_branch():
    text = two_branches("c = pred[] constant(true)")
    module, changed = optimised(text)
    assert changed
    assert body(module) == """ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %c = pred[] constant(true)
  %ops = (f32[4]{0}, f32[4]{0}) tuple(%x, %y)
  %a.1 = f32[4]{0} get-tuple-element(%ops), index=0
  %n.1 = f32[4]{0} negate(%a.1)
  %r.2 = (f32[4]{0}, f32[4]{0}) tuple(%n.1, %a.1)
  %g0 = f32[4]{0} get-tuple-element(%r.2), index=0
  %g1 = f32[4]{0} get-tuple-element(%r.2), index=1
  ROOT %out = f32[4]{0} add(%g0, %g1)
}
"""
    assert_same_outputs(text)
    assert "exponential" in body(optimised(two_branches("c = pred[] constant(false)"))[0])


def test_unknown_predicate_narrows_the_branch_parameters():
    text = two_branches("c = pred[] parameter(2)")
    module, changed = optimised(text)
    assert changed
    # Each branch reads one element of its tuple parameter: it gets a 1-tuple.
    assert body(module) == """%on_true.clone (t.clone: (f32[4])) -> (f32[4], f32[4]) {
  %t.clone = (f32[4]{0}) parameter(0)
  %a.clone = f32[4]{0} get-tuple-element(%t.clone), index=0
  %n.clone = f32[4]{0} negate(%a.clone)
  ROOT %r.clone = (f32[4]{0}, f32[4]{0}) tuple(%n.clone, %a.clone)
}

%on_false.clone (t.1.clone: (f32[4])) -> (f32[4], f32[4]) {
  %t.1.clone = (f32[4]{0}) parameter(0)
  %b.clone = f32[4]{0} get-tuple-element(%t.1.clone), index=0
  %e.1.clone = f32[4]{0} exponential(%b.clone)
  ROOT %r.1.clone = (f32[4]{0}, f32[4]{0}) tuple(%e.1.clone, %b.clone)
}

ENTRY %e (x: f32[4], y: f32[4], c: pred[]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %c = pred[] parameter(2)
  %ops = (f32[4]{0}, f32[4]{0}) tuple(%x, %y)
  %tuple = (f32[4]{0}) tuple(%x)
  %tuple.1 = (f32[4]{0}) tuple(%y)
  %cond = (f32[4]{0}, f32[4]{0}) conditional(%c, %tuple, %tuple.1), true_computation=%on_true.clone, false_computation=%on_false.clone
  %g0 = f32[4]{0} get-tuple-element(%cond), index=0
  %g1 = f32[4]{0} get-tuple-element(%cond), index=1
  ROOT %out = f32[4]{0} add(%g0, %g1)
}
"""
    assert_same_outputs(text)


INDEXED = """HloModule m
b0 {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
}
b1 {
  x = f32[3] parameter(0)
  ROOT e = f32[3] exponential(x)
}
b2 {
  x = f32[3] parameter(0)
  ROOT s = f32[3] sine(x)
}
ENTRY main {
  p = f32[3] parameter(0)
  INDEX
  ROOT c = f32[3] conditional(i, p, p, p), branch_computations={b0, b1, b2}
}
"""


@pytest.mark.parametrize("index,opcode", [("1", "exponential"), ("-1", "sine"), ("7", "sine"), ("0", "negate")])
def test_constant_index_picks_its_branch_and_out_of_range_picks_the_last(index, opcode):
    text = INDEXED.replace("INDEX", f"i = s32[] constant({index})")
    module, changed = optimised(text, "conditional-simplifier,dce")
    assert changed
    assert body(module) == f"""ENTRY %main (p: f32[3]) -> f32[3] {{
  %p = f32[3]{{0}} parameter(0)
  ROOT %{module.entry.root.name} = f32[3]{{0}} {opcode}(%p)
}}
"""
    assert_same_outputs(text, "conditional-simplifier,dce", seeds=range(2))


def test_single_branch_conditional_is_inlined_whatever_the_index():
    text = """HloModule m
only {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
}
ENTRY main {
  p = f32[3] parameter(0)
  i = s32[] parameter(1)
  ROOT c = f32[3] conditional(i, p), branch_computations={only}
}
"""
    module, changed = optimised(text)
    assert changed
    assert body(module) == """ENTRY %main (p: f32[3], i: s32[]) -> f32[3] {
  %p = f32[3]{0} parameter(0)
  %i = s32[] parameter(1)
  ROOT %n.1 = f32[3]{0} negate(%p)
}
"""
    assert_same_outputs(text)


UNUSED_OUTPUTS = """HloModule m
b0 {
  x = f32[3] parameter(0)
  n = f32[3] negate(x)
  e = f32[3] exponential(x)
  ROOT r = (f32[3], f32[3], f32[3]) tuple(n, e, n)
}
b1 {
  x = f32[3] parameter(0)
  s = f32[3] sine(x)
  c = f32[3] cosine(x)
  ROOT r = (f32[3], f32[3], f32[3]) tuple(s, c, s)
}
ENTRY main {
  p = f32[3] parameter(0)
  i = s32[] parameter(1)
  c = (f32[3], f32[3], f32[3]) conditional(i, p, p), branch_computations={b0, b1}
  g0 = f32[3] get-tuple-element(c), index=0
  g2 = f32[3] get-tuple-element(c), index=2
  ROOT out = f32[3] add(g0, g2)
}
"""


def test_duplicate_and_unused_results_are_removed():
    module, changed = optimised(UNUSED_OUTPUTS, "conditional-simplifier,dce")
    assert changed
    # Elements 0 and 2 are the same in every branch: g2 reads 0; 1 and 2 are then unused.
    assert body(module) == """%b0.clone (x.clone: f32[3]) -> (f32[3]) {
  %x.clone = f32[3]{0} parameter(0)
  %n.clone = f32[3]{0} negate(%x.clone)
  ROOT %tuple = (f32[3]{0}) tuple(%n.clone)
}

%b1.clone (x.1.clone: f32[3]) -> (f32[3]) {
  %x.1.clone = f32[3]{0} parameter(0)
  %s.clone = f32[3]{0} sine(%x.1.clone)
  ROOT %tuple.1 = (f32[3]{0}) tuple(%s.clone)
}

ENTRY %main (p: f32[3], i: s32[]) -> f32[3] {
  %p = f32[3]{0} parameter(0)
  %i = s32[] parameter(1)
  %c.1 = (f32[3]{0}) conditional(%i, %p, %p), branch_computations={%b0.clone, %b1.clone}
  %g0 = f32[3]{0} get-tuple-element(%c.1), index=0
  %g2 = f32[3]{0} get-tuple-element(%c.1), index=0
  ROOT %out = f32[3]{0} add(%g0, %g2)
}
"""
    assert_same_outputs(UNUSED_OUTPUTS, "conditional-simplifier,dce")


def test_side_effects_keep_the_conditional():
    text = """HloModule m
loud {
  x = f32[3] parameter(0)
  t = token[] after-all()
  o = token[] outfeed(x, t), outfeed_shape=f32[3]{0}
  ROOT n = f32[3] negate(x)
}
quiet {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
}
ENTRY main {
  p = f32[3] parameter(0)
  c = pred[] constant(true)
  ROOT r = f32[3] conditional(c, p, p), true_computation=loud, false_computation=quiet
}
"""
    assert_unchanged(text)


def test_random_predicates_keep_the_meaning_of_a_mixed_program():
    text = """HloModule m
b0 {
  t = (f32[2], s32[2], f32[2]) parameter(0)
  a = f32[2] get-tuple-element(t), index=0
  k = s32[2] get-tuple-element(t), index=1
  kf = f32[2] convert(k)
  s = f32[2] add(a, kf)
  ROOT r = (f32[2], f32[2]) tuple(s, a)
}
b1 {
  t = (f32[2], s32[2], f32[2]) parameter(0)
  z = f32[2] get-tuple-element(t), index=2
  m = f32[2] multiply(z, z)
  ROOT r = (f32[2], f32[2]) tuple(m, z)
}
ENTRY main {
  a = f32[2] parameter(0)
  k = s32[2] parameter(1)
  z = f32[2] parameter(2)
  i = s32[] parameter(3)
  ops = (f32[2], s32[2], f32[2]) tuple(a, k, z)
  c = (f32[2], f32[2]) conditional(i, ops, ops), branch_computations={b0, b1}
  ROOT g = f32[2] get-tuple-element(c), index=0
}
"""
    module, changed = optimised(text, "conditional-simplifier,dce")
    assert changed
    cond = module.entry.root.operands[0]
    assert str(cond.shape) == "(f32[2]{0})"
    assert [str(o.shape) for o in cond.operands[1:]] == ["(f32[2]{0}, s32[2]{0})", "(f32[2]{0})"]
    assert_same_outputs(text, "conditional-simplifier,dce", seeds=range(8))
