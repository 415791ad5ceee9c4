"""Helpers of the MPI tests: start mpiexec, run hlo-run in one process, compare bits."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def find_mpiexec():
    here = os.path.dirname(sys.executable)
    return shutil.which("mpiexec", path=here + os.pathsep + os.environ.get("PATH", ""))


def mpirun(ranks: int, argv: list, timeout: float = 240, launcher_options=(), **kwargs):
    """Run argv (a python -m ... or script command after the interpreter) on `ranks` ranks."""
    command = [find_mpiexec(), *launcher_options, "-n", str(ranks), sys.executable, *map(str, argv)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kwargs)


def hlo_run(ranks: int, args: list, **kwargs):
    return mpirun(ranks, ["-m", "hlo_cli.hlo_run", *args], **kwargs)


def run_cases(ranks: int, specs: list[str], **kwargs):
    """Run hlo-run on each 'MODULE|INPUTS|OUTPUT[|OPTION...]' spec in one MPI job; fail on an error."""
    result = mpirun(ranks, [HERE / "run_cases.py", *specs], **kwargs)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def in_process(args: list):
    """hlo-run in this process (devices as threads): the reference of every MPI run."""
    result = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", *map(str, args)], capture_output=True,
                            text=True, timeout=240, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def assert_same_bits(reference: Path, got: Path) -> None:
    a, b = np.load(reference), np.load(got)
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        assert a[key].tobytes() == b[key].tobytes(), f"{got.name}: {key} differs from the run in one process"
