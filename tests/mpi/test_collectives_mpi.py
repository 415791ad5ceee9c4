"""Every collective form under mpiexec (2 ranks of two devices, 4 ranks of one) gives the bits of the
run in one process (devices as threads)."""
import numpy as np
import pytest

from mpi_cases import CASES, device_inputs
from mpi_helpers import assert_same_bits, in_process, run_cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("collectives")
    for name, text in CASES.items():
        (folder / f"{name}.hlo").write_text(text)
        np.savez(folder / f"{name}.inputs.npz", **device_inputs(name))
        in_process([folder / f"{name}.hlo", "--inputs", folder / f"{name}.inputs.npz", "--no-print",
                    "-o", folder / f"{name}.threads.npz"])
    return folder


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_form_matches_the_threaded_run(cases, ranks):
    specs = [f"{cases}/{n}.hlo|{cases}/{n}.inputs.npz|{cases}/{n}.mpi{ranks}.npz" for n in CASES]
    run_cases(ranks, specs)
    for name in CASES:
        assert_same_bits(cases / f"{name}.threads.npz", cases / f"{name}.mpi{ranks}.npz")
