"""hlo-run --backend cpu --profile: a profiling compile times every kernel; normal compiles do not."""
import re

import numpy as np
import pytest
from click.testing import CliRunner

from compiled_cases import private_cache  # noqa: F401
from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen.profiling import format_profile
from hlo_cli.hlo_run import main as hlo_run

LOOP = """HloModule m
cond {
  s = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ROOT lt = pred[] compare(i, s32[] constant(3)), direction=LT
}
body {
  s = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[64,64] get-tuple-element(s), index=1
  d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0},
      metadata={op_name="jit(f)/dot" source_file="model.py" source_line=12}
  t = f32[64,64] tanh(d), metadata={op_name="jit(f)/tanh" source_file="model.py" source_line=13}
  ROOT n = (s32[], f32[64,64]) tuple(add(i, s32[] constant(1)), t)
}
ENTRY e {
  x = f32[64,64] parameter(0)
  w = (s32[], f32[64,64]) while((s32[], f32[64,64]) tuple(s32[] constant(0), x)), condition=cond, body=body
  ROOT r = f32[64,64] get-tuple-element(w), index=1
}
"""

STACK_FRAMES = """HloModule m

FileNames
1 "train.py"
2 "site-packages/lib/layers.py"

FunctionNames
1 "main"
2 "Dense.__call__"

FileLocations
1 {file_name_id=1 function_name_id=1 line=40 end_line=40 column=1 end_column=9}
2 {file_name_id=2 function_name_id=2 line=287 end_line=287 column=5 end_column=30}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}

ENTRY e {
  x = f32[8,8] parameter(0)
  ROOT e = f32[8,8] exponential(x), metadata={op_name="jit(main)/exp" stack_frame_id=2}
}
"""


def _rows(executable):
    return {row.entry.name: row for row in executable.profile_rows()}


def test_every_kernel_is_counted_and_loops_report_their_own_time():
    executable = JitExecutable(parse_module(LOOP, "loop.hlo"), CodegenOptions(run_pipeline=False, profile=True))
    x = np.random.default_rng(0).uniform(-0.1, 0.1, (64, 64)).astype(np.float32)
    executable.run(x)
    executable.run(x)
    rows = _rows(executable)
    assert rows["w"].count == 2 and rows["d"].count == 6 and rows["t"].count == 6 and rows["lt"].count == 8
    assert rows["d"].entry.source == "model.py:12" and rows["t"].entry.kernel == "tanh"
    inside = sum(r.seconds for r in rows.values() if r.entry.parent is not None)
    assert rows["w"].seconds > 0 and 0 <= rows["w"].own <= rows["w"].seconds - inside + 1e-9
    assert all(r.entry.name not in ("x", "r", "s", "i") for r in executable.profile_rows())  # no code, no timing
    executable.reset_profile()
    assert all(r.count == 0 for r in executable.profile_rows())


def test_fused_kernels_are_named_by_what_they_compute():
    executable = JitExecutable(parse_module(LOOP, "loop.hlo"), CodegenOptions(profile=True))
    executable.run(np.ones((64, 64), np.float32))
    kernels = {row.entry.kernel for row in executable.profile_rows() if row.count}
    assert any(k.startswith("fusion(") for k in kernels) or "dot" in kernels
    table = format_profile(executable.profile_rows(), top=5, wall=1e-3)
    assert table.splitlines()[0].startswith("profile: ") and "model.py:1" in table


def test_source_lines_from_the_stack_frame_tables():
    executable = JitExecutable(parse_module(STACK_FRAMES, "frames.hlo"), CodegenOptions(profile=True))
    executable.run(np.zeros((8, 8), np.float32))
    sources = {row.entry.source for row in executable.profile_rows() if row.count}
    assert "site-packages/lib/layers.py:287 (Dense.__call__)" in sources


def test_normal_compiles_carry_no_instrumentation():
    module = parse_module(LOOP, "loop.hlo")
    text = lower_module(module).llvm_ir
    assert "clock_gettime" not in text and "_profile_" not in text
    assert "clock_gettime" in lower_module(module, CodegenOptions(profile=True)).llvm_ir
    with pytest.raises(ValueError, match="profile=True"):
        JitExecutable(module).profile_rows()


def test_a_cached_profiling_compile_keeps_its_table():
    module = parse_module(STACK_FRAMES, "frames.hlo")
    JitExecutable(module, CodegenOptions(profile=True))
    again = JitExecutable(module, CodegenOptions(profile=True))
    assert again.from_cache
    again.run(np.zeros((8, 8), np.float32))
    assert [r.count for r in again.profile_rows()] == [1]


def test_hlo_run_cpu_profile_prints_the_slowest_kernels_with_their_source(tmp_path):
    path = tmp_path / "loop.hlo"
    path.write_text(LOOP)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--backend", "cpu", "--profile",
                                          "--no-print", "--time", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("profile: "))
    assert "compiled kernels ran" in lines[start] and lines[start + 1].split()[:3] == ["ms", "%", "count"]
    rows = lines[start + 2:]
    assert any("model.py:1" in row for row in rows) and any("%w in %e" in row for row in rows)
    times = [float(row.split()[0]) for row in rows]
    assert times == sorted(times, reverse=True)
    assert all(re.match(r"\s*[0-9.]+\s+[0-9.]+\s+\d+\s+\S+\s+%", row) for row in rows)
