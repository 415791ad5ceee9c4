"""JAX's sharded programs (tests/data/spmd, made by generate.py with jax) partitioned and run
on their devices give jax's global results; the collectives each case needs are there."""
from pathlib import Path

import numpy as np
import pytest

from hlo import format_module
from hlo.passes.spmd_stats import collective_stats, format_stats
from hlo.spmd_run import partition_module, run_spmd

DATA = Path(__file__).resolve().parents[1] / "data" / "spmd"

# case -> (devices, collectives that must appear, collectives that must not)
CASES = {
    "dp_mlp_train": (8, {"all-reduce"}, {"all-gather"}),
    "tp_mlp": (4, {"all-reduce"}, {"all-gather"}),
    "tp_attention": (4, {"all-reduce"}, {"all-gather"}),
    "fsdp_mlp": (8, {"all-gather"}, set()),
    "mesh2d_mlp": (8, {"all-reduce"}, set()),
    "conv_batch": (2, set(), {"all-gather", "all-reduce"}),
    "conv_spatial": (4, {"collective-permute"}, {"all-gather"}),
    "reduce_window_spatial": (2, {"collective-permute"}, {"all-gather"}),
    "reduce_sharded": (4, {"all-reduce"}, set()),
    "uneven": (4, {"all-reduce"}, set()),
    "wsc_reshard": (8, {"all-to-all"}, set()),
    "shmap_psum": (8, {"all-reduce"}, set()),
    "shmap_all_gather": (4, {"all-gather"}, set()),
    "shmap_ppermute": (4, {"collective-permute"}, set()),
    "shmap_all_to_all": (4, {"all-to-all"}, set()),
    "shmap_psum_scatter": (2, {"reduce-scatter"}, set()),
}


def load(name):
    text = (DATA / f"{name}.hlo").read_text()
    inputs = np.load(DATA / f"{name}.inputs.npz")
    expected = np.load(DATA / f"{name}.expected.npz")
    args = [inputs[f"arg{i}"] for i in range(len(inputs.files))]
    want = [expected[f"out{i}"] for i in range(len(expected.files))]
    return text, args, want


@pytest.mark.parametrize("name", sorted(CASES))
def test_partitioned_program_gives_jax_results(name):
    devices, present, absent = CASES[name]
    text, args, want = load(name)
    spmd, n, ctx = partition_module(text)
    assert n == devices
    assert spmd.config.num_partitions == devices
    got = run_spmd(spmd, args, n, result_shape=ctx.module.entry.root.shape)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)
    counts = collective_stats(format_module(spmd), n)["counts"]
    assert present <= set(counts), counts
    assert not (absent & set(counts)), counts
    assert ctx.fallbacks == []


def test_meshes_of_two_four_and_eight_devices_are_covered():
    assert {2, 4, 8} <= {d for d, _, _ in CASES.values()}


@pytest.mark.parametrize("name", ["tp_mlp", "tp_attention"])
def test_tensor_parallel_moves_no_more_bytes_than_xla(name):
    text, _, _ = load(name)
    spmd, n, _ = partition_module(text)
    ours = collective_stats(format_module(spmd), n)
    xla = collective_stats((DATA / f"{name}.opt.hlo").read_text(), n)
    assert xla["bytes_per_device"] > 0
    assert ours["bytes_per_device"] <= xla["bytes_per_device"], (ours, xla)
    assert format_stats(ours).splitlines()[-1] == f"bytes moved per device: {ours['bytes_per_device']:.0f}"


def test_run_global_partitions_sharded_programs_and_runs_others_as_they_are():
    from hlo.spmd_run import run_global
    text, args, want = load("tp_mlp")
    np.testing.assert_allclose(run_global(text, args), want[0], rtol=2e-4, atol=2e-4)
    # one device: the annotations are identities
    got = run_global(text, args, partitions=1)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(got, want[0], rtol=2e-4, atol=2e-4)
    plain = "HloModule m\n\nENTRY %e {\n  %p = f32[3] parameter(0)\n  ROOT %n = f32[3] negate(%p)\n}\n"
    got = run_global(plain, [np.ones(3, np.float32)])
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(got, -np.ones(3))
