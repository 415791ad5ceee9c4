"""hlo-run --backend cpu and hlo-opt --emit=llvm/asm."""
import platform

import numpy as np
import pytest
from click.testing import CliRunner

from hlo_cli.hlo_opt import main as hlo_opt
from hlo_cli.hlo_run import main as hlo_run

MODULE = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] add(x, y)
  ROOT r = (f32[4], f32[4]) tuple(s, x)
}
"""

MATMUL_TANH = """HloModule mm
ENTRY e {
  a = f32[48,40] parameter(0)
  b = f32[40,72] parameter(1)
  d = f32[48,72] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[48,72] tanh(d)
}
"""


def test_hlo_run_cpu_backend_matches_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    np.savez(tmp_path / "in.npz", arg0=np.arange(4, dtype=np.float32), arg1=np.ones(4, np.float32))
    outputs = {}
    for backend in ("interpreter", "cpu"):
        out = tmp_path / f"{backend}.npz"
        result = CliRunner().invoke(hlo_run, [str(path), "--inputs", str(tmp_path / "in.npz"), "-o", str(out),
                                              "--backend", backend])
        assert result.exit_code == 0, result.output
        outputs[backend] = (result.stdout, dict(np.load(out)))
    assert outputs["cpu"][0] == outputs["interpreter"][0]
    for key, value in outputs["interpreter"][1].items():
        np.testing.assert_array_equal(outputs["cpu"][1][key], value)


def test_hlo_run_cpu_time_reports_compile_and_run(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--backend", "cpu", "--time", "3",
                                          "--no-print"])
    assert result.exit_code == 0, result.output
    assert "compile:" in result.stderr and "time: median" in result.stderr


def test_hlo_run_time_compile_prints_the_phases_and_the_cache_hits(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    args = [str(path), "--random-inputs", "--backend", "cpu", "--time-compile", "--no-print", "--quiet"]
    first = CliRunner().invoke(hlo_run, args)
    assert first.exit_code == 0, first.output
    for phase in ("pipeline", "lowering", "llvm", "optimisation", "machine code", "loading", "kernels:"):
        assert phase in first.stderr
    assert "0 from the cache" in first.stderr and "\r" not in first.stderr   # no progress bar off a terminal
    second = CliRunner().invoke(hlo_run, args)
    assert "the module's code came from the cache" in second.stderr


def test_time_compile_needs_the_cpu_backend(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--time-compile"])
    assert result.exit_code != 0 and "--backend cpu" in result.output


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 target features")
def test_hlo_run_features_runs_other_code_paths_with_the_same_result(tmp_path, monkeypatch):
    """--features: the AVX2 micro-tiles and math on any x86 host (AVX-512 left out), same values."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "mm.hlo"
    path.write_text(MATMUL_TANH)
    np.savez(tmp_path / "in.npz", arg0=np.linspace(-2, 2, 48 * 40, dtype=np.float32).reshape(48, 40),
             arg1=np.linspace(1, -1, 40 * 72, dtype=np.float32).reshape(40, 72))
    outputs = []
    for extra in ([], ["--features=-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd"], ["--backend", "interpreter"]):
        out = tmp_path / f"out{len(outputs)}.npz"
        backend = [] if extra[:1] == ["--backend"] else ["--backend", "cpu"]
        result = CliRunner().invoke(hlo_run, [str(path), "--inputs", str(tmp_path / "in.npz"), "-o", str(out),
                                              "--no-print", *backend, *extra])
        assert result.exit_code == 0, result.output
        outputs.append(next(iter(np.load(out).values())))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(outputs[1], outputs[2], rtol=1e-5, atol=1e-5)   # tanh within 3 ulp, sums in another order


def test_features_needs_the_cpu_backend(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--features=-avx512f"])
    assert result.exit_code != 0 and "--backend cpu" in result.output


def test_hlo_run_cpu_reports_unsupported_op(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "bad.hlo"
    path.write_text("HloModule m\nENTRY e {\n  t = token[] after-all()\n"
                    "  ROOT y = (f32[4], token[]) infeed(t)\n}\n")
    result = CliRunner().invoke(hlo_run, [str(path), "--random-inputs", "--backend", "cpu"])
    assert result.exit_code == 1
    assert "bad.hlo:4:" in result.stderr and "infeed" in result.stderr


def test_hlo_opt_emits_llvm_and_asm(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    llvm = CliRunner().invoke(hlo_opt, [str(path), "--emit=llvm"])
    assert llvm.exit_code == 0, llvm.output
    assert 'define void @hlo_entry(' in llvm.stdout
    asm = CliRunner().invoke(hlo_opt, [str(path), "--emit=asm"])
    assert asm.exit_code == 0, asm.output
    assert "hlo_entry:" in asm.stdout
