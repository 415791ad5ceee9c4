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


# One instruction over constants is computed by its handler alone (no plan): the same bytes as
# the plan gives, for every kind of op and element type folding meets.
_HANDLER_ALONE_CASES = [
    ("f32[3]", "add", "f32[3] constant({1.5, -0, 3e38})", "f32[3] constant({2, -0, 3e38})"),
    ("bf16[3]", "multiply", "bf16[3] constant({1.5, -2, 3})", "bf16[3] constant({0.1, 7, -0})"),
    ("f16[2]", "divide", "f16[2] constant({1, 0})", "f16[2] constant({3, 0})"),
    ("s8[3]", "subtract", "s8[3] constant({-128, 5, 127})", "s8[3] constant({1, -5, -1})"),
    ("u32[2]", "divide", "u32[2] constant({7, 9})", "u32[2] constant({0, 2})"),
    ("s32[2]", "remainder", "s32[2] constant({-7, 9})", "s32[2] constant({0, -2})"),
    ("pred[3]", "compare", "f32[3] constant({1, nan, 3})", "f32[3] constant({1, nan, 2})"),
    ("f64[2]", "log", "f64[2] constant({0.5, -1})", None),
    ("c64[2]", "sqrt", "c64[2] constant({(1, 2), (-4, 0)})", None),
    ("f32[2]", "erf", "f32[2] constant({0.5, -3})", None),
    ("s32[2]", "convert", "f32[2] constant({2.7, -1e10})", None),
    ("bf16[2]", "convert", "f32[2] constant({1.00390625, 3})", None),
    ("f32[2,2]", "reshape", "f32[4] constant({1, 2, 3, 4})", None),
    ("f32[2]", "slice", "f32[4] constant({1, 2, 3, 4})", None),
    ("f32[3,2]", "transpose", "f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})", None),
]


@pytest.mark.parametrize("result,opcode,lhs,rhs", _HANDLER_ALONE_CASES, ids=lambda v: str(v))
def test_one_instruction_over_constants_gives_the_plans_bytes(result, opcode, lhs, rhs, monkeypatch):
    attrs = {"compare": ", direction=LT", "slice": ", slice={[1:3]}", "transpose": ", dimensions={1,0}"}
    operands = "a" if rhs is None else "a, b"
    module = parse_module(f"""HloModule m
ENTRY e {{
  a = {lhs}
  {"" if rhs is None else "b = " + rhs}
  ROOT r = {result} {opcode}({operands}){attrs.get(opcode, "")}
}}
""")
    root = module.entry.root
    assert analysis._handler_alone_computes(root)
    alone = analysis.evaluate_cone([root])[0]
    monkeypatch.setattr(analysis, "_handler_alone_computes", lambda inst: False)
    planned = analysis.evaluate_cone([root])[0]
    assert np.asarray(alone).dtype == np.asarray(planned).dtype
    assert np.asarray(alone).shape == np.asarray(planned).shape
    assert np.asarray(alone).tobytes() == np.asarray(planned).tobytes()


def test_a_value_passed_through_or_an_elided_constant_goes_through_the_plan():
    module = parse_module("""HloModule m
ENTRY e {
  a = f32[2] constant({1, 2})
  e = f32[2] constant({...})
  c = f32[2] copy(a)
  r = f32[2] reshape(a)
  ROOT n = f32[2] negate(e)
}
""")
    inst = module.entry.by_name()
    assert not analysis._handler_alone_computes(inst["c"])
    assert not analysis._handler_alone_computes(inst["r"])
    assert not analysis._handler_alone_computes(inst["n"])
    with pytest.raises(analysis.EvaluationError):
        analysis.evaluate_cone([inst["n"]])
