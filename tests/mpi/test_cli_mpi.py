"""hlo-run's MPI options: --launch, --distributed, the start-up checks, the missing extra."""
import subprocess
import sys

from mpi_helpers import ROOT, hlo_run, in_process

MODULE = """HloModule m, replica_count=2, num_partitions=2

%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] add(%a, %b)
}

ENTRY %main {
  %p = s32[3] parameter(0)
  %id = u32[] partition-id()
  %r = s32[3] all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=false, to_apply=%add
  ROOT %t = (s32[3], u32[]) tuple(%r, %id)
}
"""


def _module(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    return path


def test_launch_prints_what_one_process_prints(tmp_path):
    path = _module(tmp_path)
    expected = in_process([path, "--random-inputs", "--seed", "3"]).stdout
    result = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", "--launch", "2", path, "--random-inputs",
                             "--seed", "3"], capture_output=True, text=True, timeout=200, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
    assert "device 3 (replica 1, partition 1):" in result.stdout


def test_distributed_on_one_rank_runs_every_device(tmp_path):
    path = _module(tmp_path)
    expected = in_process([path, "--random-inputs"]).stdout
    result = hlo_run(1, [path, "--random-inputs", "--distributed"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_devices_that_do_not_share_out_evenly(tmp_path):
    result = hlo_run(3, [_module(tmp_path), "--random-inputs"], launcher_options=["-disable-auto-cleanup"])
    assert result.returncode == 1
    assert "4 device(s) cannot be shared out evenly over 3 MPI ranks" in result.stderr
    assert "Traceback" not in result.stderr


def test_ranks_with_other_options_are_named(tmp_path):
    path = _module(tmp_path)
    from mpi_helpers import find_mpiexec
    rank = [sys.executable, "-m", "hlo_cli.hlo_run", str(path), "--random-inputs"]
    command = [find_mpiexec(), "-n", "1", *rank, ":", "-n", "1", *rank, "--seed", "5"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=200, cwd=ROOT)
    assert result.returncode == 1
    assert "rank 1 differs from rank 0 in its option --seed: 5 on rank 1, 0 on rank 0" in result.stderr


def test_missing_mpi4py_names_the_extra(tmp_path):
    blocker = tmp_path / "block" / "mpi4py"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no mpi4py here')\n")
    env = {"PYTHONPATH": str(blocker.parent), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", str(_module(tmp_path)), "--random-inputs",
                             "--distributed"], capture_output=True, text=True, timeout=100, cwd=ROOT, env=env)
    assert result.returncode == 1
    assert "install the 'mpi' extra" in result.stderr and "Traceback" not in result.stderr
