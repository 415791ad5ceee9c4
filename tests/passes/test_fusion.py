"""fusion: idempotence, the reuse analysis and random graphs (what loop, reduction (kInput) and
output (kOutput) fusion make, and the duplication rules, are in tests/golden/passes/fusion.hlo)."""
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlo import format_module, parse_module
from hlo.passes.pass_manager import run_pipeline
from hlo.passes.fusion import reuses_operand_elements
from golden import split_cases
from pass_testing import PassTester

FUSION = PassTester("fusion", rtol=1e-5)


def assert_same_results(text: str, seed: int = 0, rtol: float = 1e-5) -> None:
    """Fusion keeps the module valid, canonical and computing the same values."""
    replace(FUSION, rtol=rtol).optimise(text, seeds=(seed,))


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "passes" / "fusion.hlo"


@pytest.mark.parametrize("case", split_cases(GOLDEN), ids=lambda case: case.name)
def test_fusion_is_idempotent(case):
    """A second run of fusion changes nothing, on every golden fusion case."""
    module = parse_module(case.text)
    run_pipeline(module, "fusion")
    printed = format_module(module)
    assert not run_pipeline(module, "fusion")
    assert format_module(module) == printed


def _reuse(text: str, index: int = 0) -> bool:
    module = parse_module(text)
    fusion = next(i for i in module.entry.instructions if i.opcode == "fusion")
    return reuses_operand_elements(fusion, index)


def _fusion_module(body: str, shape: str = "f32[4]") -> str:
    return f"""HloModule m
fc {{
  p = f32[4] parameter(0)
{body}
}}
ENTRY main {{
  x = f32[4] parameter(0)
  ROOT f = {shape} fusion(x), kind=kLoop, calls=fc
}}
"""


def test_reuse_analysis():
    # several elementwise uses of an element: computed once per output element
    assert not _reuse(_fusion_module("  a = f32[4] add(p, p)\n  ROOT m = f32[4] multiply(a, p)"))
    # the same element read at different output positions
    assert _reuse(_fusion_module("  r = f32[4] reverse(p), dimensions={0}\n  ROOT m = f32[4] multiply(r, p)"))
    assert _reuse(_fusion_module("  ROOT b = f32[3,4] broadcast(p), dimensions={1}", "f32[3,4]"))
    assert not _reuse(_fusion_module("  ROOT r = f32[4] reverse(p), dimensions={0}"))


# --------------------------------------------------------------------------- property: random DAGs

UNARY = ["negate", "tanh", "abs", "sine", "exponential", "cosine"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def random_modules(draw):
    """Random DAGs of f32[3,4] values: elementwise ops, broadcasts, row reductions, dots."""
    lines = ["  x = f32[3,4] parameter(0)", "  y = f32[3,4] parameter(1)", "  v = f32[4] parameter(2)",
             "  w = f32[4,4] parameter(3)", "  zero = f32[] constant(0)", "  half = f32[] constant(0.5)"]
    values = ["x", "y"]
    for n in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "bcast", "reduce", "dot", "scale"]))
        pick = st.sampled_from(values)
        name = f"v{n}"
        if kind == "unary":
            lines.append(f"  {name} = f32[3,4] {draw(st.sampled_from(UNARY))}({draw(pick)})")
        elif kind == "binary":
            lines.append(f"  {name} = f32[3,4] {draw(st.sampled_from(BINARY))}({draw(pick)}, {draw(pick)})")
        elif kind == "bcast":
            lines.append(f"  b{n} = f32[3,4] broadcast(v), dimensions={{1}}")
            lines.append(f"  {name} = f32[3,4] add({draw(pick)}, b{n})")
        elif kind == "scale":
            lines.append(f"  h{n} = f32[3,4] broadcast(half), dimensions={{}}")
            lines.append(f"  {name} = f32[3,4] multiply({draw(pick)}, h{n})")
        elif kind == "reduce":
            lines.append(f"  r{n} = f32[3] reduce({draw(pick)}, zero), dimensions={{1}}, to_apply=add_f32")
            lines.append(f"  {name} = f32[3,4] broadcast(r{n}), dimensions={{0}}")
        else:
            lines.append(f"  {name} = f32[3,4] dot({draw(pick)}, w), lhs_contracting_dims={{1}}, "
                         "rhs_contracting_dims={0}")
        values.append(name)
    outputs = draw(st.lists(st.sampled_from(values[2:]), min_size=1, max_size=3, unique=True))
    shapes = ", ".join("f32[3,4]" for _ in outputs)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(outputs)})")
    return ("HloModule random\nadd_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n" + "\n".join(lines) + "\n}\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_modules(), st.integers(0, 2**16))
def test_fusion_preserves_meaning_of_random_graphs(text, seed):
    assert_same_results(text, seed, rtol=1e-4)
