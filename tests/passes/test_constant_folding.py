"""constant-folding: expected output per rule, and interpreter equivalence on random inputs."""
import numpy as np
import pytest

from hlo.passes import analysis, constant_folding
from hlo import parse_module
from pass_testing import PassTester, body

CONSTANT_FOLDING = PassTester("constant-folding")
optimised, assert_same_outputs = CONSTANT_FOLDING.optimised, CONSTANT_FOLDING.assert_same_outputs
assert_unchanged = CONSTANT_FOLDING.assert_unchanged


FOLDS_CHAINS = """HloModule m
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[3] parameter(0)
  a = f32[3] constant({1, 2, 3})
  b = f32[] constant(10)
  bb = f32[3] broadcast(b), dimensions={}
  s = f32[3] add(a, bb)
  n = f32[3] negate(s)
  z = f32[] constant(0)
  r = f32[] reduce(n, z), dimensions={0}, to_apply=add_f32
  rb = f32[3] broadcast(r), dimensions={}
  ROOT out = f32[3] add(p, rb)
}
"""


def test_folds_chains_through_broadcast_operands_and_reductions():
    module, changed = optimised(FOLDS_CHAINS)
    assert changed
    # add(a, broadcast(10)) = {11,12,13}; negated; summed: -36. The broadcast of the
    # result is not folded (it would only materialise a bigger constant).
    assert body(module).split("ENTRY", 1)[1] == """ %e (p: f32[3]) -> f32[3] {
  %p = f32[3]{0} parameter(0)
  %constant.2 = f32[] constant(-36)
  %rb = f32[3]{0} broadcast(%constant.2), dimensions={}
  ROOT %out = f32[3]{0} add(%p, %rb)
}
"""
    assert_same_outputs(FOLDS_CHAINS)


def test_integer_and_comparison_folding_keeps_types_and_layouts():
    text = """HloModule m
ENTRY e {
  a = s32[2,2]{0,1} constant({{1, 2}, {3, 4}})
  b = s32[2,2]{0,1} constant({{10, 20}, {30, 40}})
  m = s32[2,2]{0,1} multiply(a, b)
  c = pred[2,2]{0,1} compare(m, b), direction=GT
  ROOT t = (s32[2,2]{0,1}, pred[2,2]{0,1}) tuple(m, c)
}
"""
    module, _ = optimised(text)
    assert body(module) == """ENTRY %e () -> (s32[2,2], pred[2,2]) {
  %constant = s32[2,2]{0,1} constant({ { 10, 40 }, { 90, 160 } })
  %constant.1 = pred[2,2]{0,1} constant({ { 0, 1 }, { 1, 1 } })
  ROOT %t = (s32[2,2]{0,1}, pred[2,2]{0,1}) tuple(%constant, %constant.1)
}
"""


@pytest.mark.parametrize("instruction", [
    "f32[4] broadcast(c), dimensions={}",               # broadcasts stay broadcasts
    "f32[4] iota(), iota_dimension=0",                  # so do iotas
    "f32[4] add(bc, bc)",                               # no operand is a constant
    "f32[4] rng(c, c), distribution=rng_uniform",       # random: never folded
    "f32[4] add(p, bc)",                                # a parameter operand
])
def test_leaves_unfoldable_instructions(instruction):
    text = f"""HloModule m
ENTRY e {{
  p = f32[4] parameter(0)
  c = f32[] constant(1)
  bc = f32[4] broadcast(c), dimensions={{}}
  ROOT r = {instruction}
}}
"""
    assert_unchanged(text)


def test_side_effects_elided_constants_and_control_dependencies_are_left_alone():
    text = """HloModule m
ENTRY e {
  c = f32[2] constant({1, 2})
  big = f32[2] constant({...})
  t = token[] after-all()
  o = token[] outfeed(c, t), outfeed_shape=f32[2]{0}
  n1 = f32[2] negate(big)
  n2 = f32[2] negate(c), control-predecessors={o}
  ROOT r = (f32[2], f32[2]) tuple(n1, n2)
}
"""
    module, changed = optimised(text)
    assert not changed


def test_calls_fold_when_their_callee_is_foldable_but_not_with_side_effects_inside():
    text = """HloModule m
double {
  x = f32[] parameter(0)
  ROOT d = f32[] add(x, x)
}
noisy {
  x = f32[] parameter(0)
  r = f32[] rng(x, x), distribution=rng_uniform
  ROOT d = f32[] add(x, r)
}
ENTRY e {
  c = f32[] constant(21)
  a = f32[] call(c), to_apply=double
  b = f32[] call(c), to_apply=noisy
  ROOT t = (f32[], f32[]) tuple(a, b)
}
"""
    module, changed = optimised(text, "constant-folding,dce")
    assert changed
    assert body(module).split("ENTRY", 1)[1] == """ %e () -> (f32[], f32[]) {
  %c = f32[] constant(21)
  %constant = f32[] constant(42)
  %b = f32[] call(%c), to_apply=%noisy
  ROOT %t = (f32[], f32[]) tuple(%constant, %b)
}
"""


def test_size_limit(monkeypatch):
    text = """HloModule m
ENTRY e {
  c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
  ROOT n = f32[8] negate(c)
}
"""
    monkeypatch.setattr(constant_folding, "MAX_FOLD_ELEMENTS", 4)
    assert not optimised(text)[1]
    monkeypatch.setattr(constant_folding, "MAX_FOLD_ELEMENTS", 8)
    module, changed = optimised(text)
    assert changed and "constant({-1, -2, -3, -4, -5, -6, -7, -8})" in body(module)


def test_gte_of_constant_tuple_and_fusion_bodies():
    text = """HloModule m
fused {
  a = f32[] parameter(0)
  one = f32[] constant(1)
  two = f32[] constant(2)
  s = f32[] add(one, two)
  ROOT m = f32[] multiply(a, s)
}
ENTRY e {
  p = f32[] parameter(0)
  c = f32[] constant(5)
  d = f32[] constant(6)
  t = (f32[], f32[]) tuple(c, d)
  g = f32[] get-tuple-element(t), index=1
  f = f32[] fusion(p), kind=kLoop, calls=fused
  ROOT r = f32[] add(f, g)
}
"""
    module, _ = optimised(text, "constant-folding,dce")
    out = body(module)
    assert "%s = f32[] add(%one, %two)" in out  # fusion computations are not folded into
    assert "ROOT %r = f32[] add(%f, %constant)" in out and "constant(6)" in out
    assert_same_outputs(text, "constant-folding,dce")


def test_evaluate_cone_with_bound_inputs():
    module = parse_module("""HloModule m
ENTRY e {
  p = s32[] parameter(0)
  c = s32[] constant(3)
  ROOT m = s32[] multiply(p, c)
}
""")
    p = module.entry.parameters[0]
    assert analysis.evaluate_cone([module.entry.root], {id(p): np.int32(7)})[0] == 21
    with pytest.raises(analysis.EvaluationError):
        analysis.evaluate_cone([module.entry.root])


def test_random_programs_keep_their_meaning():
    text = """HloModule m
max_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}
ENTRY e {
  p = f32[2,3] parameter(0)
  k = f32[2,3] constant({{1, -2, 3}, {4, 5, -6}})
  e = f32[2,3] exponential(k)
  t = f32[3,2] transpose(k), dimensions={1,0}
  d = f32[2,2] dot(k, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(-inf)
  m = f32[2] reduce(d, z), dimensions={1}, to_apply=max_f32
  mb = f32[2,3] broadcast(m), dimensions={0}
  s = f32[2,3] slice(e), slice={[0:2], [0:3]}
  a = f32[2,3] add(p, s)
  ROOT r = f32[2,3] multiply(a, mb)
}
"""
    module, changed = optimised(text, "constant-folding,dce")
    assert changed
    assert {i.opcode for i in module.entry.instructions} == {"parameter", "constant", "broadcast", "add",
                                                             "multiply"}
    assert_same_outputs(text, "constant-folding,dce")


def test_collectives_and_dynamic_shapes_are_not_folded():
    text = """HloModule m, replica_count=2
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  c = f32[2] constant({1, 2})
  ar = f32[2] all-reduce(c), replica_groups={}, to_apply=sum
  n = s32[] constant(1)
  d = f32[<=2] set-dimension-size(c, n), dimensions={0}
  ROOT t = (f32[2], f32[<=2]) tuple(ar, d)
}
"""
    module, changed = optimised(text)
    assert not changed


# --------------------------------------------------------------------------- property

from hypothesis import given, settings, strategies as st  # noqa: E402

_UNARY = ["negate", "abs", "floor", "sine", "exponential", "tanh"]
_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def expression_programs(draw):
    """A random f32[3] expression DAG over constants, broadcasts of constants and one parameter."""
    lines = ["  p = f32[3] parameter(0)"]
    names = ["p"]
    for k in range(draw(st.integers(1, 3))):
        values = draw(st.lists(st.integers(-3, 3), min_size=3, max_size=3))
        lines.append(f"  c{k} = f32[3] constant({{{', '.join(map(str, values))}}})")
        names.append(f"c{k}")
    lines.append(f"  s = f32[] constant({draw(st.integers(-2, 2))})")
    lines.append("  bs = f32[3] broadcast(s), dimensions={}")
    names.append("bs")
    for k in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            op, a = draw(st.sampled_from(_UNARY)), draw(st.sampled_from(names))
            lines.append(f"  v{k} = f32[3] {op}({a})")
        else:
            op = draw(st.sampled_from(_BINARY))
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            lines.append(f"  v{k} = f32[3] {op}({a}, {b})")
        names.append(f"v{k}")
    result = ", ".join(n for n in names if n.startswith("v"))
    count = result.count(",") + 1
    lines.append(f"  ROOT r = ({', '.join(['f32[3]'] * count)}) tuple({result})")
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


@settings(max_examples=40, deadline=None)
@given(expression_programs())
def test_folding_random_expressions_keeps_their_values(text):
    module, _ = optimised(text, "constant-folding,dce")
    for inst in module.entry.instructions:  # nothing foldable is left behind
        if inst.opcode not in ("tuple", "broadcast", "parameter", "constant"):
            assert not constant_folding._operands_allow_folding(inst), inst.name
    assert_same_outputs(text, "constant-folding,dce", seeds=(0,))
