"""Everything the interpreter runs also compiles, or docs/ARCHITECTURE.md says why not.

* every opcode of the table has a code generator, or a reason "not compiled, because ..."
  that the docs' "Not compiled by the cpu backend" section lists;
* every custom-call target the interpreter knows (hlo.interpreter.CUSTOM_CALL_TARGETS,
  the sharding annotations hlo.spmd_run registers included) is compiled
  (special_kernels.CUSTOM_CALLS) or listed there too;
* every elementwise op lowers for every element type the interpreter runs it on, the 8-
  and 4-bit floats and sub-byte integers included (a sweep: registrations alone could hide
  a type the code generator forgets).
"""
import re
from pathlib import Path

import numpy as np
import pytest

import hlo.spmd_run  # noqa: F401  (registers the sharding custom-call targets with the interpreter)
from hlo import HloError, parse_module
from hlo.analysis.checker import check_module
from hlo.codegen import EMITTERS, CodegenOptions, lower_module
from hlo.codegen.special_kernels import CUSTOM_CALLS
from hlo.interpreter import CUSTOM_CALL_TARGETS, run
from hlo.opcodes import BINARY_ELEMENTWISE, OPCODES, UNARY_ELEMENTWISE, Op, ResultType
from hlo.runtime import values_io
from hlo.shapes import PRIMITIVE_TYPES

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text()
RAW = CodegenOptions(run_pipeline=False)


def _not_compiled_section() -> str:
    start = DOCS.index("### Not compiled by the cpu backend")
    return DOCS[start:DOCS.index("\n## ", start)]


def _documented() -> set[str]:
    """Every `name` in a bullet of the section that gives a reason."""
    names = set()
    for bullet in re.split(r"\n- ", _not_compiled_section())[1:]:
        if "not compiled, because" in bullet:
            names.update(re.findall(r"`([^`]+)`", bullet.split("not compiled, because")[0]))
    return names


def test_every_opcode_compiles_or_is_documented():
    documented = _documented()
    for op in Op:
        if EMITTERS.get(op) is not None:
            assert op.value not in documented, f"{op} compiles but the docs list it as not compiled"
            continue
        reason = EMITTERS.reason(op)
        assert reason and reason.startswith("not compiled, because "), f"{op} neither compiles nor says why"
        assert op.value in documented, f"{op} is not compiled but docs/ARCHITECTURE.md does not list it"


def test_every_interpreter_custom_call_target_compiles_or_is_documented():
    documented = _documented()
    for target in sorted(CUSTOM_CALL_TARGETS):
        if target in CUSTOM_CALLS:
            assert target not in documented, f"custom-call target {target} compiles but the docs list it"
        else:
            assert target in documented, (f"custom-call target {target} runs on the interpreter but neither "
                                          f"compiles nor is listed in docs/ARCHITECTURE.md")


TYPES = [t.name for t in PRIMITIVE_TYPES.values() if t.is_array_type]
SKIPPED = {"bitcast", "opt-barrier", "convert", "bitcast-convert", "copy"}   # tested with their own shapes


def _result_type(op: str, t: str) -> str:
    rt = OPCODES[op].result_type
    if rt is ResultType.PRED:
        return "pred"
    if rt is ResultType.REAL_PART and t.startswith("c"):
        return "f32" if t == "c64" else "f64"
    if op == "complex":
        return "c64" if t == "f32" else "c128"
    if op == "stochastic-convert":
        return {"f16": "s16", "bf16": "s16", "f32": "s32", "f64": "s64"}.get(t, t)
    return t


def _elementwise_module(op: str, t: str) -> str:
    arity = OPCODES[op].arity
    params = [f"  p{k} = {t}[4] parameter({k})" for k in range(arity)]
    if op == "stochastic-convert":
        params[1] = f"  p1 = u{16 if t in ('f16', 'bf16') else t[1:]}[4] parameter(1)"
    extra = {"compare": ", direction=LT", "reduce-precision": ", exponent_bits=5, mantissa_bits=4"}.get(op, "")
    args = ", ".join(f"p{k}" for k in range(arity))
    body = "\n".join(params)
    return f"HloModule m\nENTRY e {{\n{body}\n  ROOT r = {_result_type(op, t)}[4] {op}({args}){extra}\n}}\n"


@pytest.mark.parametrize("op", sorted(o for o in UNARY_ELEMENTWISE | BINARY_ELEMENTWISE if o not in SKIPPED))
def test_elementwise_ops_lower_for_every_type_the_interpreter_runs(op):
    rng = np.random.default_rng(0)
    for t in TYPES:
        try:
            module = parse_module(_elementwise_module(op, t))
            check_module(module)
        except HloError:
            continue   # a type the op does not take
        params = sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"])
        try:
            run(module, *[values_io.random_value(p.shape, rng) for p in params])
        except Exception:   # noqa: BLE001  (the interpreter does not run it either)
            continue
        lower_module(module, RAW)
