"""hlo-run partitions a global sharded program and gives jax's global results; hlo-opt --stats
counts collectives and the bytes each device moves."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "spmd"


def tool(name: str, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", f"from hlo_cli.{name} import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("case", ["tp_attention", "shmap_psum", "conv_spatial"])
def test_hlo_run_gives_global_results(case, tmp_path):
    out = tmp_path / "out.npz"
    run = tool("hlo_run", str(DATA / f"{case}.hlo"), "--inputs", str(DATA / f"{case}.inputs.npz"),
               "-o", str(out), "--no-print")
    assert run.returncode == 0, run.stderr
    got, want = np.load(out), np.load(DATA / f"{case}.expected.npz")
    assert sorted(got.files) == sorted(want.files)
    for key in want.files:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-4, err_msg=key)


def test_hlo_run_device_count_option(tmp_path):
    """--partitions gives the device count (it must agree with the module's mesh)."""
    case = "dp_mlp_train"
    out = tmp_path / "out.npz"
    wrong = tool("hlo_run", str(DATA / f"{case}.hlo"), "--inputs", str(DATA / f"{case}.inputs.npz"),
                 "--partitions", "2", "--no-print")
    assert wrong.returncode == 1 and "place it on 8 devices; --partitions 2 does not match" in wrong.stderr
    run = tool("hlo_run", str(DATA / f"{case}.hlo"), "--inputs", str(DATA / f"{case}.inputs.npz"),
               "--partitions", "8", "-o", str(out), "--no-print")
    assert run.returncode == 0, run.stderr
    want = np.load(DATA / f"{case}.expected.npz")
    for key in want.files:
        np.testing.assert_allclose(np.load(out)[key], want[key], rtol=1e-4, atol=1e-4, err_msg=key)


def test_sharded_program_needs_the_interpreter():
    run = tool("hlo_run", str(DATA / "tp_attention.hlo"), "--random-inputs", "--backend", "cpu")
    assert run.returncode == 1 and "use --backend interpreter" in run.stderr


def test_hlo_opt_stats_counts_collectives_and_bytes(tmp_path):
    run = tool("hlo_opt", str(DATA / "tp_attention.hlo"), "--passes=sharding-propagation,spmd-partitioner",
               "--stats", "-o", str(tmp_path / "per_device.hlo"))
    assert run.returncode == 0, run.stderr
    assert "all-reduce: 1 (3072 bytes per device)" in run.stderr
    assert "bytes moved per device: 3072" in run.stderr
