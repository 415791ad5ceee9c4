"""Every collective form under mpiexec (2 ranks of two devices, 4 ranks of one) gives the bits of the
run in one process (devices as threads)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from mpi_cases import CASES, NOT_COMPILED, device_inputs
from mpi_helpers import ROOT, assert_same_bits, in_process, run_cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("collectives")
    for name, text in CASES.items():
        (folder / f"{name}.hlo").write_text(text)
        np.savez(folder / f"{name}.inputs.npz", **device_inputs(name))
        in_process([folder / f"{name}.hlo", "--inputs", folder / f"{name}.inputs.npz", "--no-print",
                    "-o", folder / f"{name}.threads.npz"])
    return folder


def _over_mpi(cases, ranks: int, names, tag: str, options: str = "", env=None) -> None:
    """Run every named case in one MPI job of `ranks` ranks; each must give the threaded run's bits."""
    run_cases(ranks, [f"{cases}/{n}.hlo|{cases}/{n}.inputs.npz|{cases}/{n}.{tag}.npz{options}" for n in names],
              env=env)
    for name in names:
        assert_same_bits(cases / f"{name}.threads.npz", cases / f"{name}.{tag}.npz")


# All-reduces go through a shared memory window when the ranks share a machine (as here), or as
# MPI messages (between machines; forced here with HLO_MPI_SHARED_MEMORY=0).
TRANSPORTS = {"shared-memory": None, "messages": {**os.environ, "HLO_MPI_SHARED_MEMORY": "0"}}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_form_matches_the_threaded_run(cases, ranks, transport):
    _over_mpi(cases, ranks, sorted(CASES), f"mpi{ranks}-{transport}", env=TRANSPORTS[transport])


COMPILED = sorted(set(CASES) - NOT_COMPILED)


def test_compiled_collectives_in_one_process_match_the_interpreter(cases):
    for name in COMPILED:
        in_process([cases / f"{name}.hlo", "--inputs", cases / f"{name}.inputs.npz", "--no-print", "--backend", "cpu",
                    "-o", cases / f"{name}.cpu.npz"])
        assert_same_bits(cases / f"{name}.threads.npz", cases / f"{name}.cpu.npz")


@pytest.mark.parametrize("ranks", [2, 4])
def test_compiled_collectives_over_mpi_match_the_interpreter(cases, ranks):
    _over_mpi(cases, ranks, COMPILED, f"cpu{ranks}", "|--backend|cpu")


def test_what_is_not_compiled_is_refused_with_its_location(cases):
    for name in sorted(NOT_COMPILED):
        result = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", cases / f"{name}.hlo", "--inputs",
                                 cases / f"{name}.inputs.npz", "--backend", "cpu"], capture_output=True, text=True,
                                cwd=ROOT, timeout=200)
        assert result.returncode == 1 and f"{name}.hlo:" in result.stderr and "Traceback" not in result.stderr
