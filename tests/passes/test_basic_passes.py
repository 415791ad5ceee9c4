"""dce, cse, tuple-simplifier, call-inliner and the pipeline syntax."""
import pytest

from hlo import HloError
from hlo.passes.pass_manager import FixedPoint, available_passes, parse_pipeline
from pass_testing import body, optimised


def run(text: str, pipeline: str) -> str:
    return body(optimised(text, pipeline)[0])


def test_registry_lists_names_and_descriptions():
    passes = available_passes()
    for name in ("dce", "cse", "tuple-simplifier", "call-inliner"):
        assert passes[name].name == name and passes[name].description


def test_pipeline_syntax():
    assert parse_pipeline("cse, fixpoint(dce,tuple-simplifier) ,dce") == [
        "cse", FixedPoint(["dce", "tuple-simplifier"]), "dce"]


@pytest.mark.parametrize("text,message", [
    ("nope", "unknown pass 'nope'"),
    ("fixpoint(dce", "missing ')'"),
    ("dce)", "unbalanced ')'"),
    ("fixpoint dce", "fixpoint must be followed by '('"),
    ("", "the pipeline is empty"),
])
def test_pipeline_errors(text, message):
    with pytest.raises(HloError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_pipeline(text)


def test_dce_removes_unused_but_keeps_parameters_and_side_effects():
    out = run("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  q = f32[2] parameter(1)
  dead = f32[2] negate(p)
  dead2 = f32[2] add(dead, dead)
  t = token[] after-all()
  o = token[] outfeed(p, t), outfeed_shape=f32[2]{0}
  ROOT r = f32[2] exponential(p)
}
""", "dce")
    assert out == """ENTRY %e (p: f32[2], q: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %q = f32[2]{0} parameter(1)
  %t = token[] after-all()
  %o = token[] outfeed(%p, %t), outfeed_shape=f32[2]{0}
  ROOT %r = f32[2]{0} exponential(%p)
}
"""


def test_dce_removes_uncalled_computations():
    out = run("""HloModule m
unused {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
ENTRY e {
  ROOT p = f32[] parameter(0)
}
""", "dce")
    assert "unused" not in out


def test_cse_merges_identical_instructions_and_constants():
    out = run("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  b1 = f32[2] broadcast(c1), dimensions={}
  b2 = f32[2] broadcast(c2), dimensions={}
  m1 = f32[2] multiply(p, b1)
  m2 = f32[2] multiply(p, b2)
  ROOT r = f32[2] add(m1, m2)
}
""", "cse")
    assert out == """ENTRY %e (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %c1 = f32[] constant(2)
  %b1 = f32[2]{0} broadcast(%c1), dimensions={}
  %m1 = f32[2]{0} multiply(%p, %b1)
  ROOT %r = f32[2]{0} add(%m1, %m1)
}
"""


def test_cse_keeps_different_attributes_and_rng():
    text = """HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  t1 = f32[2,2] transpose(p), dimensions={1,0}
  t2 = f32[2,2] transpose(p), dimensions={0,1}
  ROOT r = f32[2,2] add(t1, t2)
}
"""
    assert run(text, "cse") == body(text)


def test_tuple_simplifier_folds_gte_of_tuple_and_rebuilt_tuples():
    out = run("""HloModule m
ENTRY e {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  t = (f32[], s32[]) tuple(a, b)
  g0 = f32[] get-tuple-element(t), index=0
  g1 = s32[] get-tuple-element(t), index=1
  ROOT r = (f32[], s32[]) tuple(g0, g1)
}
""", "tuple-simplifier,dce")
    assert out == """ENTRY %e (a: f32[], b: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = (f32[], s32[]) tuple(%a, %b)
}
"""


def test_call_inliner_inlines_nested_calls_and_drops_callees():
    out = run("""HloModule m
inner {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
outer {
  y = f32[] parameter(0)
  c = f32[] call(y), to_apply=inner
  ROOT e = f32[] exponential(c)
}
ENTRY main {
  p = f32[] parameter(0)
  ROOT r = f32[] call(p), to_apply=outer
}
""", "call-inliner")
    assert out == """ENTRY %main (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %n.2 = f32[] negate(%p)
  ROOT %e.1 = f32[] exponential(%n.2)
}
"""


def test_fixpoint_runs_until_nothing_changes():
    out = run("""HloModule m
ENTRY e {
  a = f32[] parameter(0)
  t = (f32[], f32[]) tuple(a, a)
  t2 = ((f32[], f32[]), f32[]) tuple(t, a)
  g = (f32[], f32[]) get-tuple-element(t2), index=0
  ROOT h = f32[] get-tuple-element(g), index=1
}
""", "fixpoint(tuple-simplifier,dce)")
    assert out == """ENTRY %e (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}
"""


def test_cse_merges_reduces_whose_reducers_are_identical_computations():
    out = run("""HloModule m
add1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
add2 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT t = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  r1 = f32[] reduce(p, z), dimensions={0}, to_apply=add1
  r2 = f32[] reduce(p, z), dimensions={0}, to_apply=add2
  ROOT m = f32[] multiply(r1, r2)
}
""", "cse,dce")
    assert "%r2" not in out and "add2" not in out
    assert "ROOT %m = f32[] multiply(%r1, %r1)" in out


def test_cse_keeps_reduces_whose_reducers_differ():
    text = """HloModule m
add1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max1 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT t = f32[] maximum(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  r1 = f32[] reduce(p, z), dimensions={0}, to_apply=add1
  r2 = f32[] reduce(p, z), dimensions={0}, to_apply=max1
  ROOT m = f32[] multiply(r1, r2)
}
"""
    assert run(text, "cse") == body(text)


def test_optimization_barrier_expander_forwards_the_operand():
    out = run("""HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = s32[] parameter(1)
  t = (f32[2], s32[]) tuple(a, b)
  o = (f32[2], s32[]) opt-barrier(t)
  g = f32[2] get-tuple-element(o), index=0
  ROOT n = f32[2] negate(g)
}
""", "optimization-barrier-expander,tuple-simplifier,dce")
    assert "opt-barrier" not in out
    assert "ROOT %n = f32[2]{0} negate(%a)" in out
