"""A module compiles as parts: a driver calling one kernel per instruction, each kernel
deduplicated, optimised by its weight, compiled in parallel processes and cached by content."""
import io
import os

import numpy as np
import pytest

from hlo.codegen import CodegenOptions, CompileStats, JitExecutable, ProgressBar, lower_module
from hlo.codegen import compile_pool
from hlo.codegen.build import part_objects
from hlo.codegen.driver import (HEAVY_WORK, INLINE_WORK, LIGHT_OPT_LEVEL, LOOP_WEIGHT, SCALAR_WORK, VECTOR_WORK,
                                kernel_opt_level, kernel_vectorized)
from corpus_cases import DATA, MODULES, SHARED, SHARED_MODULES, load_module
from hlo.codegen.buffers import assign_buffers
from hlo.codegen.driver import DriverLowering
from hlo.codegen.kernel_function import PREFIX, KernelFunction
from hlo.codegen.kernel_signature import kernel_signature
from hlo.codegen.kernels import emit_instruction
from hlo.codegen.lowering import prepare
from hlo.codegen.target import compile_part, register_file
from hlo.opcodes import Op
from hlo.text.parser import parse_module

RAW = CodegenOptions(run_pipeline=False)

# Two layers of the same computation on different buffers, then something else.
LAYERS = """HloModule layers
ENTRY e {
  x = f32[512] parameter(0)
  y = f32[512] parameter(1)
  a = f32[512] exponential(x)
  b = f32[512] exponential(y)
  c = f32[512] multiply(a, b)
  d = f32[512] tanh(c)
  ROOT t = (f32[512], f32[512]) tuple(d, a)
}
"""


def kernel_names(lowered) -> list[str]:
    return [p.name for p in lowered.kernels if p.name.startswith(PREFIX)]


def test_identical_instructions_are_one_kernel_called_twice():
    lowered = lower_module(parse_module(LAYERS, "l.hlo"), RAW)
    assert len(kernel_names(lowered)) == 3          # exponential (twice), multiply, tanh
    assert lowered.calls == 4
    driver = lowered.parts[0].llvm_ir
    exp_kernel = [p for p in lowered.kernels if "hlo.exp." in p.llvm_ir][0]
    assert driver.count(f'call void @"{exp_kernel.name}"') == 2


def test_kernels_take_their_buffers_as_noalias_arguments_and_results_are_right():
    lowered = lower_module(parse_module(LAYERS, "l.hlo"), RAW)
    for kernel in lowered.kernels:
        assert f'define void @"{kernel.name}"(ptr noalias' in kernel.llvm_ir
    x, y = np.linspace(-1, 1, 512, dtype=np.float32), np.linspace(0, 0.5, 512, dtype=np.float32)
    d, a = JitExecutable(parse_module(LAYERS, "l.hlo"), RAW).run(x, y)
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(d, np.tanh(np.exp(x) * np.exp(y)), rtol=1e-5)


def test_aliased_parameter_and_result_are_not_noalias():
    text = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[256] parameter(0)
  ROOT r = f32[256] sine(p)
}
"""
    lowered = lower_module(parse_module(text, "a.hlo"), RAW)
    (kernel,) = lowered.kernels
    assert "noalias" not in kernel.llvm_ir.split("\n{")[0].split("define")[1]
    x = np.linspace(0, 3, 256, dtype=np.float32)
    executable = JitExecutable(parse_module(text, "a.hlo"), RAW)
    given = x.copy()
    (result,) = executable.run(given, donate=True)
    np.testing.assert_allclose(result, np.sin(x), rtol=1e-6, atol=1e-7)


def test_tiny_instructions_are_inline_in_the_driver():
    text = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] add(x, x)
  ROOT z = f32[4] multiply(y, x)
}
"""
    lowered = lower_module(parse_module(text, "t.hlo"), RAW)
    assert lowered.kernels == [] and lowered.inline == 2
    x = np.arange(4, dtype=np.float32)
    (z,) = JitExecutable(parse_module(text, "t.hlo"), RAW).run(x)
    np.testing.assert_array_equal(z, (x + x) * x)


def test_optimisation_level_follows_the_work():
    assert kernel_opt_level(INLINE_WORK + 1, False, 3) == LIGHT_OPT_LEVEL
    assert kernel_opt_level(VECTOR_WORK, False, 3) == 2
    assert kernel_opt_level(HEAVY_WORK, False, 3) == 2
    assert kernel_opt_level(HEAVY_WORK, False, 3, windowed=True) == 3
    assert kernel_opt_level(10, True, 3) == 2            # the loops around a blocked multiply are vectorised
    assert kernel_opt_level(HEAVY_WORK, False, 0, windowed=True) == 0   # never above what was asked
    assert kernel_opt_level(HEAVY_WORK, False, 1, windowed=True) == 1
    assert not kernel_vectorized(SCALAR_WORK - 1, False) and kernel_vectorized(SCALAR_WORK, False)
    assert kernel_vectorized(10, True)


def test_an_edited_module_compiles_only_the_kernels_that_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = JitExecutable(parse_module(LAYERS, "l.hlo"), RAW)
    assert first.stats.compiled == 4 and first.stats.cache_hits == 0      # 3 kernels + the driver
    edited = LAYERS.replace("d = f32[512] tanh(c)", "d = f32[512] sine(c)")
    second = JitExecutable(parse_module(edited, "l.hlo"), RAW)
    assert not second.from_cache
    assert second.stats.compiled == 2 and second.stats.cache_hits == 2    # sine's kernel + the driver
    again = JitExecutable(parse_module(edited, "l.hlo"), RAW)
    assert again.from_cache and again.stats.compiled == 0
    x = np.linspace(-1, 1, 512, dtype=np.float32)
    np.testing.assert_allclose(second.run(x, x)[0], np.sin(np.exp(x) ** 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(again.run(x, x)[0], second.run(x, x)[0])


def test_a_repeated_layer_is_compiled_once_across_modules(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    JitExecutable(parse_module(LAYERS, "l.hlo"), RAW)
    other = LAYERS.replace("HloModule layers", "HloModule other").replace("ROOT t = (f32[512], f32[512]) tuple(d, a)",
                                                                           "ROOT t = (f32[512], f32[512]) tuple(a, d)")
    second = JitExecutable(parse_module(other, "o.hlo"), RAW)
    assert second.stats.compiled == 1 and second.stats.cache_hits == 3    # a new driver only


def test_parallel_and_serial_compiles_give_identical_objects(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(compile_pool, "RUNNING_POOL_MIN_BYTES", 0)   # also when an earlier test left a pool
    lowered = lower_module(parse_module(LAYERS, "l.hlo"), RAW)
    objects = {}
    for jobs in (1, 2):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"jobs{jobs}"))
        stats = CompileStats()
        objects[jobs] = part_objects(lowered, CodegenOptions(run_pipeline=False, jobs=jobs), stats)
        assert stats.processes == jobs and stats.compiled == len(lowered.parts)
    assert objects[1] == objects[2]


def test_parallel_compile_runs_like_the_serial_one(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(compile_pool, "RUNNING_POOL_MIN_BYTES", 0)   # also when an earlier test left a pool
    x, y = np.linspace(-1, 1, 512, dtype=np.float32), np.linspace(0, 0.5, 512, dtype=np.float32)
    results = []
    for jobs in (1, 2):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"jobs{jobs}"))
        executable = JitExecutable(parse_module(LAYERS, "l.hlo"), CodegenOptions(jobs=jobs))
        results.append(executable.run(x, y))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_small_compiles_stay_in_this_process():
    lowered = lower_module(parse_module(LAYERS, "l.hlo"), RAW)
    assert compile_pool.processes_for(lowered.parts, jobs=4) == 1     # too little IR for workers
    assert compile_pool.processes_for(lowered.parts, jobs=1) == 1


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_only():
    terminal = FakeTerminal()
    bar = ProgressBar(terminal, delay=0)
    bar.update(3, 8)
    assert "compiling 8 kernels [" in terminal.getvalue() and " 37%" in terminal.getvalue()
    bar.update(8, 8)
    assert "100%" in terminal.getvalue()
    bar.finish()
    assert terminal.getvalue().endswith("\r")
    pipe = io.StringIO()
    quiet = ProgressBar(pipe, delay=0)
    quiet.update(1, 2)
    quiet.finish()
    assert pipe.getvalue() == ""


def test_progress_bar_waits_before_drawing():
    terminal = FakeTerminal()
    bar = ProgressBar(terminal, delay=60)
    bar.update(1, 2)
    assert terminal.getvalue() == ""


def test_compile_stats_table_names_every_phase(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    table = JitExecutable(parse_module(LAYERS, "l.hlo"), RAW).stats.table()
    for phase in ("pipeline", "lowering", "llvm", "optimisation", "machine code", "loading"):
        assert phase in table
    assert "3 distinct, 4 calls" in table and "4 compiled" in table


@pytest.mark.parametrize("work,level", [(INLINE_WORK + 1, LIGHT_OPT_LEVEL), (VECTOR_WORK, 2), (HEAVY_WORK, 2)])
def test_kernel_levels_in_a_lowered_module(work, level):
    n = work   # negate over n elements is n element operations
    text = f"HloModule m\nENTRY e {{\n  x = f32[{n}] parameter(0)\n  ROOT y = f32[{n}] negate(x)\n}}\n"
    (kernel,) = lower_module(parse_module(text, "k.hlo"), RAW).kernels
    assert kernel.opt_level == level


def test_work_in_a_while_loop_counts_more():
    text = f"""HloModule m
cond {{
  s = (s32[], f32[{SCALAR_WORK // 4}]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT c = pred[] compare(i, n), direction=LT
}}
body {{
  s = (s32[], f32[{SCALAR_WORK // 4}]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[{SCALAR_WORK // 4}] get-tuple-element(s), index=1
  y = f32[{SCALAR_WORK // 4}] negate(x)
  ROOT t = (s32[], f32[{SCALAR_WORK // 4}]) tuple(j, y)
}}
ENTRY e {{
  x = f32[{SCALAR_WORK // 4}] parameter(0)
  z = f32[{SCALAR_WORK // 4}] negate(x)
  zero = s32[] constant(0)
  s = (s32[], f32[{SCALAR_WORK // 4}]) tuple(zero, z)
  w = (s32[], f32[{SCALAR_WORK // 4}]) while(s), condition=cond, body=body
  ROOT r = f32[{SCALAR_WORK // 4}] get-tuple-element(w), index=1
}}
"""
    assert LOOP_WEIGHT * SCALAR_WORK // 4 >= SCALAR_WORK
    lowered = lower_module(parse_module(text, "loop.hlo"), RAW)
    (negate,) = lowered.kernels                 # the same code in and out of the loop: one kernel,
    assert negate.vectorize                     # optimised as the loop wants
    assert lowered.calls == 2


def test_a_heavy_windowed_kernel_gets_o3():
    text = """HloModule m
max {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT m = f32[] maximum(p, q)
}
ENTRY e {
  x = f32[64,64] parameter(0)
  z = f32[] constant(0)
  ROOT y = f32[64,64] reduce-window(x, z), window={size=5x5 pad=2_2x2_2}, to_apply=max
}
"""
    (kernel,) = lower_module(parse_module(text, "w.hlo"), RAW).kernels
    assert kernel.opt_level == 3


# --------------------------------------------------------------------------- signatures


class VerifyingDriver(DriverLowering):
    """Emits every kernel a signature found, and records whether the text is the known one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.checked = self.mismatches = 0

    def call_instruction_kernel(self, inst, work):
        signature = kernel_signature(inst, self.a, self._computation_signatures)
        known = self._by_signature.get(signature) if signature is not None else None
        super().call_instruction_kernel(inst, work)
        if known is not None:
            kernel = KernelFunction(self.module, self.a, self.gemm_calls)
            emit_instruction(kernel, inst)
            self.checked += 1
            self.mismatches += kernel.finish(known[0].opt_level, work).name != known[0].name


def verified_lowering(module) -> VerifyingDriver:
    options = CodegenOptions()
    prepared = prepare(module, options)
    driver = VerifyingDriver(prepared, assign_buffers(prepared), "hlo_entry", register_file(options), options.opt_level)
    driver.lower()
    return driver


def layer(n: int, source: str) -> str:
    """One dense layer with a bias, relu, a layer norm and a sort: its kernels repeat per layer."""
    return f"""
  wt{n} = f32[64,64]{{1,0}} parameter({2 * n + 1})
  bi{n} = f32[64]{{0}} parameter({2 * n + 2})
  dt{n} = f32[32,64]{{1,0}} dot({source}, wt{n}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bbr{n} = f32[32,64]{{1,0}} broadcast(bi{n}), dimensions={{1}}
  sm{n} = f32[32,64]{{1,0}} add(dt{n}, bbr{n})
  zr{n} = f32[] constant(0)
  zbr{n} = f32[32,64]{{1,0}} broadcast(zr{n}), dimensions={{}}
  rl{n} = f32[32,64]{{1,0}} maximum(sm{n}, zbr{n})
  total{n} = f32[32]{{0}} reduce(rl{n}, zr{n}), dimensions={{1}}, to_apply=add
  kc{n} = f32[] constant(0.015625)
  kcb{n} = f32[32]{{0}} broadcast(kc{n}), dimensions={{}}
  mn{n} = f32[32]{{0}} multiply(total{n}, kcb{n})
  mbr{n} = f32[32,64]{{1,0}} broadcast(mn{n}), dimensions={{0}}
  ce{n} = f32[32,64]{{1,0}} subtract(rl{n}, mbr{n})
  tr{n} = f32[64,32]{{1,0}} transpose(ce{n}), dimensions={{1,0}}
  so{n} = f32[64,32]{{1,0}} sort(tr{n}), dimensions={{1}}, to_apply=less
  hd{n} = f32[32,64]{{1,0}} transpose(so{n}), dimensions={{1,0}}"""


REPEATED_LAYERS = ("HloModule layers\nadd {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n"
                   "  ROOT a = f32[] add(p, q)\n}\nless {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n"
                   "  ROOT c = pred[] compare(p, q), direction=LT\n}\nENTRY e {\n  x = f32[32,64]{1,0} parameter(0)"
                   + layer(0, "x") + layer(1, "hd0") + layer(2, "hd1")
                   + "\n  ROOT out = f32[32,64]{1,0} copy(hd2)\n}\n")


def test_a_kernel_found_by_signature_is_the_one_emission_gives():
    driver = verified_lowering(parse_module(REPEATED_LAYERS, "layers.hlo"))
    assert driver.checked >= 4 and driver.mismatches == 0
    lowered = lower_module(parse_module(REPEATED_LAYERS, "layers.hlo"))
    assert 2 * len(kernel_names(lowered)) <= lowered.calls    # the layers share their kernels


def test_repeated_layers_run_right():
    module = parse_module(REPEATED_LAYERS, "layers.hlo")
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((32, 64)).astype(np.float32)]
    for _ in range(3):
        args += [rng.standard_normal((64, 64)).astype(np.float32) / 8, rng.standard_normal(64).astype(np.float32)]
    (got,) = JitExecutable(module).run(*args)
    h = args[0].astype(np.float64)
    for n in range(3):
        r = np.maximum(h @ args[2 * n + 1] + args[2 * n + 2], 0)
        h = np.sort((r - r.mean(axis=1, keepdims=True)).T, axis=1).T
    np.testing.assert_allclose(got, h, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("filename", MODULES + SHARED_MODULES)
def test_signatures_on_every_corpus_module(filename):
    data = DATA if filename in MODULES else SHARED
    assert verified_lowering(load_module(filename, data)).mismatches == 0


def test_different_constants_or_layouts_are_different_signatures():
    def signatures(text):
        module = prepare(parse_module(text, "s.hlo"), CodegenOptions())
        assignment = assign_buffers(module)
        return [kernel_signature(i, assignment, {}) for i in module.entry.instructions if i.opcode == Op.FUSION
                or i.opcode == Op.ADD]
    base = """HloModule m
ENTRY e {
  x = f32[64,64]{1,0} parameter(0)
  c = f32[] constant(2)
  b = f32[64,64]{1,0} broadcast(c), dimensions={}
  ROOT y = f32[64,64]{1,0} add(x, b)
}
"""
    (first,) = signatures(base)
    assert signatures(base.replace("constant(2)", "constant(3)")) != [first]
    assert signatures(base.replace("ROOT y = f32[64,64]{1,0}", "ROOT y = f32[64,64]{0,1}")) != [first]
    assert signatures(base.replace("HloModule m", "HloModule other")) == [first]


_TEST_PROCESS = os.getpid()


def _die(*args):
    """A worker's crash: a forked worker dies; the test's own process (which compiles the parts no
    worker took) compiles as usual."""
    if os.getpid() != _TEST_PROCESS:
        os._exit(3)
    return compile_part(*args)


def test_a_dead_worker_fails_the_compile_and_the_next_one_starts_new_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(compile_pool, "RUNNING_POOL_MIN_BYTES", 0)   # also when an earlier test left a pool
    lowered = lower_module(parse_module(LAYERS, "l.hlo"), RAW)
    options = CodegenOptions(run_pipeline=False, jobs=3)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "first"))
    monkeypatch.setattr(compile_pool, "compile_part", _die)
    with pytest.raises(RuntimeError, match="worker process died"):
        part_objects(lowered, options)
    monkeypatch.undo()
    monkeypatch.setattr(compile_pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(compile_pool, "RUNNING_POOL_MIN_BYTES", 0)   # also when an earlier test left a pool
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "second"))
    stats = CompileStats()
    part_objects(lowered, options, stats)
    assert stats.processes == 3 and stats.compiled == len(lowered.parts)
