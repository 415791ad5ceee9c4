"""benchmarks/backend_bench.py runs end to end (--quick --runs 1) and prints every workload's line."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "backend_bench.py"

CORPUS_MODULE = """HloModule tiny

ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
"""


def test_quick_run_prints_every_workload(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tiny.hlo").write_text(CORPUS_MODULE)
    (corpus / "tiny.opt.hlo").write_text(CORPUS_MODULE)  # optimised twins are not timed
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)  # the script must set them and re-execute itself
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--runs", "1", "--corpus", str(corpus)],
                            check=False, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "OPENBLAS_NUM_THREADS=1" in lines[0]
    for prefix in ("matmul32 ", "matmul64 ", "chain ", "rowsum ", "colsum ", "conv2d ", "mlp "):
        row = [line for line in lines if line.startswith(prefix)]
        assert len(row) == 1, (prefix, result.stdout)
        assert "ratio" in row[0] and "ours" in row[0]
        assert "xla" in row[0]  # a ratio, or 'jax not installed'
    assert "numpy out=" in next(line for line in lines if line.startswith("chain "))
    compile_lines = [line for line in lines if line.startswith("compile ")]
    assert len(compile_lines) == 2, result.stdout
    assert "tiny" in compile_lines[0] and "cold" in compile_lines[0] and "warm" in compile_lines[0]
    assert "1 modules" in compile_lines[1] and "0 over 3 s" in compile_lines[1]


def test_only_selects_one_workload(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--runs", "1", "--only", "colsum"],
                            check=False, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    assert len(rows) == 1 and rows[0].startswith("colsum ")
