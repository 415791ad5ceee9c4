"""constant-folding: the size limit, evaluate_cone, and random expressions that keep their values
(the expected output per rule is in tests/golden/passes/constant_folding.hlo)."""
import numpy as np
import pytest

from hlo.passes import analysis, constant_folding
from hlo import parse_module
from pass_testing import PassTester, body

CONSTANT_FOLDING = PassTester("constant-folding")
optimised, assert_same_outputs = CONSTANT_FOLDING.optimised, CONSTANT_FOLDING.assert_same_outputs


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
