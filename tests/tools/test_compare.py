"""hlo-run --compare and --check-finite: a planted miscompile pinned to its instruction and loop
iteration, a planted NaN found with its source line, on both backends; the observation hooks
under them (the evaluator's observer, the debug compile)."""
import numpy as np
import pytest
from click.testing import CliRunner
from llvmlite import ir

from hlo.analysis.loading import load_module
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.codegen.scalar_ops import FLOAT_OPS
from hlo.interpreter.evaluator import Evaluator
from hlo.opcodes import Op
from hlo.tools.compare import compare, format_comparison
from hlo.tools.finite import check_finite, format_finite_check
from hlo_cli.hlo_run import CHECK_FOUND, main

# x doubles each iteration (1, 2, 4, 8, 16 ...): y crosses 10 in iteration 3. The default
# pipeline fuses y, z and w into one loop fusion.
DOUBLING = """HloModule doubling

body {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  two = f32[] constant(2)
  b = f32[8] broadcast(two), dimensions={}
  y = f32[8] multiply(x, b), metadata={op_name="jit(f)/mul" source_file="model.py" source_line=12}
  z = f32[8] add(y, x)
  w = f32[8] subtract(z, x)
  ROOT t = (s32[], f32[8]) tuple(i1, w)
}

cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  a = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, a)
  wl = (s32[], f32[8]) while(init), condition=cond, body=body
  r = f32[8] get-tuple-element(wl), index=1
  ROOT e = f32[8] exponential(r)
}
"""

# x <- (x - 0.5) + log(x - 0.5) from x = 2 goes below 0.5 in iteration 4: log makes NaN in iteration 5.
SHRINKING = """HloModule shrinking

body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[4] broadcast(half), dimensions={}
  d = f32[4] subtract(x, h), metadata={op_name="jit(step)/sub" source_file="train.py" source_line=41}
  l = f32[4] log(d), metadata={op_name="jit(step)/log" source_file="train.py" source_line=42}
  y = f32[4] add(d, l)
  ROOT t = (s32[], f32[4]) tuple(i1, y)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  a = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, a)
  wl = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(wl), index=1
}
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Compiled code of planted kernels must never reach another test's cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def planted_miscompile(monkeypatch):
    """The test-only switch: the compiled f32 multiply adds 1 to products above 10."""
    def wrong_multiply(ctx, op, t, args):
        product = ctx.b.fmul(*args)
        big = ctx.b.fcmp_ordered(">", product, ir.Constant(product.type, 10.0))
        return ctx.b.select(big, ctx.b.fadd(product, ir.Constant(product.type, 1.0)), product)
    monkeypatch.setitem(FLOAT_OPS._handlers, Op.MULTIPLY, wrong_multiply)


def write(tmp_path, name, text, array):
    module = tmp_path / f"{name}.hlo"
    module.write_text(text)
    data = tmp_path / f"{name}.npy"
    np.save(data, array)
    return module, data


def run(args):
    return CliRunner().invoke(main, [str(a) for a in args])


# --------------------------------------------------------------------------- --compare

@pytest.mark.parametrize("backends", [("cpu", "interpreter"), ("interpreter", "cpu")])
def test_compare_pins_a_planted_miscompile_to_its_instruction_and_iteration(tmp_path, planted_miscompile, backends):
    module, data = write(tmp_path, "doubling", DOUBLING, np.ones(8, np.float32))
    result = run([module, "--input", f"arg0={data}", "--backend", backends[0], "--compare", backends[1]])
    assert result.exit_code == CHECK_FOUND, result.output
    out = result.output
    assert f"compare: {backends[0]} and {backends[1]} disagree: output 0: 8 of 8 elements differ" in out
    # the fusion the multiply was fused into, then, compiled unfused, the multiply itself
    assert "first instruction whose value differs" in out
    assert "%fusion = f32[8]{0} fusion(%x), kind=kLoop" in out
    inside = out.split("compiled unfused, the first instruction that differs:")[1]
    assert "%y = f32[8]{0} multiply(%x, %b)" in inside
    assert f"at {module}:11:3, in %body, iteration 3 of %wl" in inside
    assert "source: model.py:12  op_name='jit(f)/mul'" in inside
    first = f"{backends[0]}:" if backends[0] == "cpu" else f"{backends[1]}:"
    assert f"{first:<12} float32[8] [17., 17., 17., 17., 17., 17.] ... (8 elements)" in inside
    assert "first at [0]" in inside and "max abs error 1," in inside


def test_compare_agrees_without_the_planted_bug(tmp_path):
    module, data = write(tmp_path, "doubling", DOUBLING, np.ones(8, np.float32))
    result = run([module, "--input", f"arg0={data}", "--backend", "cpu", "--compare", "interpreter"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("compare: cpu and interpreter agree (")


def test_compare_api_and_tolerances(planted_miscompile):
    module = load_module(DOUBLING, "doubling.hlo")
    args = [np.ones(8, np.float32)]
    found = compare(module, args, ("cpu", "interpreter"))
    assert not found.agree and found.first.key.name == "fusion" and found.first.key.iterations == (3,)
    assert found.first.inside.key.name == "y" and found.first.inside.key.iterations == (3,)
    # a wide enough tolerance admits the planted error (1 in 16, grown to 6.8e30 against 6.2e27 by exp)
    loose = compare(module, args, ("cpu", "interpreter"), rtol=1e4, atol=0.0)
    assert loose.agree and loose.first is None
    assert format_comparison(loose).startswith("compare: cpu and interpreter agree")


def test_interpreter_against_itself_agrees():
    module = load_module(DOUBLING, "doubling.hlo")
    result = compare(module, [np.ones(8, np.float32)], ("interpreter", "interpreter"))
    assert result.agree and result.first is None and result.compared > 20


def test_compare_usage_errors(tmp_path):
    module, data = write(tmp_path, "doubling", DOUBLING, np.ones(8, np.float32))
    assert "--rtol and --atol need --compare" in run([module, "--random-inputs", "--rtol", "1"]).output
    result = run([module, "--random-inputs", "--compare", "gpu"])
    assert result.exit_code == 1 and "unknown backend 'gpu'" in result.output
    result = run([module, "--random-inputs", "--compare", "cpu", "--time", "3"])
    assert result.exit_code == 1 and "does not combine with --time" in result.output


# --------------------------------------------------------------------------- --check-finite

@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_check_finite_finds_a_planted_nan_with_its_source_line(tmp_path, backend):
    module, data = write(tmp_path, "shrinking", SHRINKING, np.full(4, 2.0, np.float32))
    result = run([module, "--input", f"arg0={data}", "--backend", backend, "--check-finite"])
    assert result.exit_code == CHECK_FOUND, result.output
    out = result.output
    assert out.startswith(f"check-finite ({backend}): the first NaN made from finite operands")
    if backend == "cpu":   # the log is fused: named inside the fusion, compiled unfused
        out = out.split("compiled unfused, the instruction that makes it:")[1]
    assert "%l = f32[4]{0} log(%d)" in out
    assert f"at {module}:12:3, in %body, iteration 5 of %wl" in out
    assert "source: train.py:42  op_name='jit(step)/log'" in out
    assert "operand %d: -0.91173" in out
    assert "(output(s) 0 hold NaN or Inf)" in out


def test_check_finite_passes_finite_runs_and_names_non_finite_inputs(tmp_path):
    module, data = write(tmp_path, "doubling", DOUBLING, np.ones(8, np.float32))
    result = run([module, "--input", f"arg0={data}", "--check-finite"])
    assert result.exit_code == 0, result.output
    assert "every value is finite" in result.output
    module, data = write(tmp_path, "nan_input", DOUBLING, np.full(8, np.nan, np.float32))
    check = check_finite(load_module(DOUBLING, "d.hlo"), [np.full(8, np.nan, np.float32)], "interpreter")
    assert check.origin is None and check.bad_arguments == [0] and check.bad_outputs == [0]
    assert "no instruction made one from finite operands" in format_finite_check(check)


# --------------------------------------------------------------------------- the hooks

def test_the_observer_sees_every_value_with_its_loop_iteration():
    module = load_module(DOUBLING, "doubling.hlo")
    seen = []

    def observer(inst, value, operands, sites):
        seen.append((inst.name, tuple((s[0].name, s[1]) for s in sites), np.asarray(value).copy()
                     if not isinstance(value, tuple) else None))
    observed = Evaluator(module, observer=observer).run([np.ones(8, np.float32)])
    plain = Evaluator(module).run([np.ones(8, np.float32)])
    np.testing.assert_array_equal(observed, plain)
    ys = [(sites, value[0]) for name, sites, value in seen if name == "y"]
    assert ys == [((("wl", k),), 2.0 ** (k + 1)) for k in range(6)]
    assert [sites for name, sites, _ in seen if name == "lt"][-1] == (("wl", 6),)   # the last condition


def test_debug_compiles_report_values_with_loop_counters_and_are_cached_apart():
    module = load_module(DOUBLING, "doubling.hlo")
    assert CodegenOptions(debug_values=True).key() != CodegenOptions().key()
    executable = JitExecutable(module, CodegenOptions(debug_values=True), threads=1)
    seen = []
    outputs = executable.run_observed(lambda e, counters, a: seen.append((e.name, counters, a.reshape(-1)[0])),
                                      np.ones(8, np.float32))
    assert [(c, v) for name, c, v in seen if name == "fusion"] == [((k,), 2.0 ** (k + 1)) for k in range(6)]
    np.testing.assert_allclose(outputs[0], np.exp(np.full(8, 64.0, np.float32)))
    np.testing.assert_array_equal(executable.run(np.ones(8, np.float32))[0], outputs[0])   # no hook: plain run
    with pytest.raises(ValueError, match="debug_values=True"):
        JitExecutable(module, threads=1).run_observed(lambda *a: None, np.ones(8, np.float32))
