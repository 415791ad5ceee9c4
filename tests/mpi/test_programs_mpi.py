"""Real programs under MPI: jax's sharded programs (partitioned here, global arrays in and out)
and XLA's own partitioned dumps (per-device inputs), bit for bit as in one process."""
from pathlib import Path

import numpy as np
import pytest

from hlo.analysis.loading import load_module
from hlo.runtime import values_io
from hlo.spmd_run import shard_inputs
from mpi_helpers import ROOT, assert_same_bits, in_process, run_cases

SPMD = ROOT / "tests" / "data" / "spmd"
SHARDED = sorted(p.stem for p in SPMD.glob("*.hlo") if not p.name.endswith(".opt.hlo"))
DUMPS = sorted(p.name[:-len(".opt.hlo")] for p in SPMD.glob("*.opt.hlo"))


@pytest.mark.parametrize("ranks", [2, 4])
def test_sharded_jax_programs_give_the_same_global_outputs(tmp_path, ranks):
    runnable = [n for n in SHARDED if _devices(SPMD / f"{n}.hlo") % ranks == 0]
    assert len(runnable) >= 10
    for name in runnable:
        in_process([SPMD / f"{name}.hlo", "--inputs", SPMD / f"{name}.inputs.npz", "--no-print",
                    "-o", tmp_path / f"{name}.threads.npz"])
    run_cases(ranks, [f"{SPMD}/{n}.hlo|{SPMD}/{n}.inputs.npz|{tmp_path}/{n}.mpi.npz" for n in runnable])
    for name in runnable:
        assert_same_bits(tmp_path / f"{name}.threads.npz", tmp_path / f"{name}.mpi.npz")
        _close_to_jax(tmp_path / f"{name}.mpi.npz", SPMD / f"{name}.expected.npz")


@pytest.mark.parametrize("ranks", [2, 4])
def test_xla_partitioned_dumps_run_per_device(tmp_path, ranks):
    assert DUMPS
    specs = []
    for name in DUMPS:
        module = load_module((SPMD / f"{name}.opt.hlo").read_text(), name)
        n = module.config.num_partitions * module.config.replica_count
        inputs = np.load(SPMD / f"{name}.inputs.npz")
        blocks = shard_inputs(module, [inputs[f"arg{i}"] for i in range(len(inputs.files))], n)
        per_device = {f"dev{d}_arg{i}": values_io.from_storage(b) for d, args in enumerate(blocks)
                      for i, b in enumerate(args)}
        np.savez(tmp_path / f"{name}.inputs.npz", **per_device)
        in_process([SPMD / f"{name}.opt.hlo", "--inputs", tmp_path / f"{name}.inputs.npz", "--no-print",
                    "-o", tmp_path / f"{name}.threads.npz"])
        specs.append(f"{SPMD}/{name}.opt.hlo|{tmp_path}/{name}.inputs.npz|{tmp_path}/{name}.mpi.npz")
    run_cases(ranks, specs)
    for name in DUMPS:
        assert_same_bits(tmp_path / f"{name}.threads.npz", tmp_path / f"{name}.mpi.npz")


def _devices(path: Path) -> int:
    from hlo.passes.spmd_partitioner import device_count
    return device_count(load_module(path.read_text(), path.name))


def _close_to_jax(got: Path, expected: Path) -> None:
    a, b = np.load(got), np.load(expected)
    for key in b:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-4, atol=1e-5, err_msg=f"{got.name} {key}")
