"""Faults under MPI: a killed rank, a failing rank, ranks that run different modules. Never a hang:
every rank that is left stops with a message naming the rank and the instruction."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mpi_helpers import ROOT, mpirun

LOOP = """HloModule loop, replica_count=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

%cond (s: (s32[], f32[64])) -> pred[] {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(ITERATIONS)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[64])) -> (s32[], f32[64]) {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[64] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %ar = f32[64] all-reduce(%x), replica_groups={}, to_apply=%add
  %q = f32[] constant(0.25)
  %qb = f32[64] broadcast(%q), dimensions={}
  %y = f32[64] multiply(%ar, %qb)
  ROOT %t = (s32[], f32[64]) tuple(%j, %y)
}

ENTRY %main {
  %x = f32[64] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %x)
  %w = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[64] get-tuple-element(%w), index=1
}
"""


def _rank_processes(marker: str) -> dict[int, int]:
    """{rank: pid} of the Python ranks started with this marker in their environment."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if f"HLO_TEST_MARK={marker}".encode() not in environ or not comm.startswith("python"):
            continue
        for item in environ:
            if item.startswith(b"PMI_RANK="):
                found[int(item[9:])] = int(entry.name)
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the ranks through /proc")
def test_a_killed_rank_is_named_by_every_other_rank_within_the_timeout(tmp_path):
    module = tmp_path / "loop.hlo"
    module.write_text(LOOP.replace("ITERATIONS", "1000000"))
    marker, timeout = uuid.uuid4().hex, 5
    env = dict(os.environ, HLO_TEST_MARK=marker)
    process = subprocess.Popen([sys.executable, "-m", "hlo_cli.hlo_run", "--launch", "4", str(module),
                                "--random-inputs", "--no-print", "--collective-timeout", str(timeout)],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        ranks = {}
        while len(ranks) < 4 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
            ranks = _rank_processes(marker)
        assert len(ranks) == 4, f"the ranks did not start: {ranks}"
        time.sleep(4)      # well into the loop of all-reduces
        assert process.poll() is None
        os.kill(ranks[1], signal.SIGKILL)
        killed = time.monotonic()
        _, stderr = process.communicate(timeout=timeout + 60)
        elapsed = time.monotonic() - killed
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert elapsed < timeout + 20, elapsed
    for rank in (0, 2, 3):
        lines = [line for line in stderr.splitlines() if line.startswith(f"rank {rank}:")]
        assert lines, stderr
        assert "%ar" in lines[0] and "rank 1 does not answer" in lines[0], lines[0]
        assert "loop.hlo:" in lines[0]    # the instruction's location


def test_a_failing_rank_stops_the_others_at_once(tmp_path):
    """Device 2's infeed is empty: rank 2 fails in the middle; the others stop well before the timeout."""
    import numpy as np
    module = tmp_path / "infeed.hlo"
    module.write_text(LOOP.replace("ITERATIONS", "50").replace(
        "  ROOT %out = f32[64] get-tuple-element(%w), index=1",
        """  %out = f32[64] get-tuple-element(%w), index=1
  %tok = token[] after-all()
  %in = (f32[64], token[]) infeed(%tok)
  %v = f32[64] get-tuple-element(%in), index=0
  %s = f32[64] add(%out, %v)
  ROOT %ar2 = f32[64] all-reduce(%s), replica_groups={}, to_apply=%add"""))
    infeed = tmp_path / "infeed.npz"
    np.savez(infeed, **{f"dev{d}_infeed0": np.ones(64, np.float32) for d in (0, 1, 3)})
    start = time.monotonic()
    result = mpirun(4, ["-m", "hlo_cli.hlo_run", module, "--random-inputs", "--no-print", "--infeed", infeed],
                    launcher_options=["-disable-auto-cleanup"], timeout=200)
    assert time.monotonic() - start < 100      # the collective timeout is 300 s
    assert result.returncode != 0
    assert "rank 2:" in result.stderr and "infeed queue is empty" in result.stderr, result.stderr
    for rank in (0, 1, 3):
        line = next(line for line in result.stderr.splitlines() if line.startswith(f"rank {rank}:"))
        assert "rank 2 failed" in line and "%ar2" in result.stderr, line


def test_ranks_running_different_modules_are_named(tmp_path):
    first, second = tmp_path / "a.hlo", tmp_path / "b.hlo"
    first.write_text(LOOP.replace("ITERATIONS", "3"))
    second.write_text(LOOP.replace("ITERATIONS", "4"))
    from mpi_helpers import find_mpiexec
    rank = [sys.executable, "-m", "hlo_cli.hlo_run"]
    command = [find_mpiexec(), "-n", "1", *rank, first, "--random-inputs", ":",
               "-n", "1", *rank, second, "--random-inputs"]
    result = subprocess.run(list(map(str, command)), capture_output=True, text=True, timeout=200, cwd=ROOT)
    assert result.returncode != 0
    assert "rank 1 differs from rank 0 in its module" in result.stderr, result.stderr


DIVERGING = """HloModule diverge, replica_count=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

%first (x: f32[N]) -> f32[N] {
  %x = f32[N] parameter(0)
  ROOT %ar_first = f32[N] all-reduce(%x), replica_groups={}, to_apply=%add
}

%second (x: f32[N]) -> f32[N] {
  %x = f32[N] parameter(0)
  ROOT %ar_second = f32[N] all-reduce(%x), replica_groups={}, to_apply=%add
}

ENTRY %main {
  %x = f32[N] parameter(0)
  %id = u32[] replica-id()
  %zero = u32[] constant(0)
  %is0 = pred[] compare(%id, %zero), direction=EQ
  ROOT %r = f32[N] conditional(%is0, %x, %x), true_computation=%first, false_computation=%second
}
"""


@pytest.mark.parametrize("shared_memory", ["1", "0"])
@pytest.mark.parametrize("elements", [64, 40000])      # messages: gathered whole; reduced in pieces
def test_ranks_at_different_collectives_are_named(tmp_path, elements, shared_memory):
    """Same sizes, different instructions (control flow that diverges by replica): in the threaded
    run a time-out; over MPI every rank names the other at once instead of mixing their data."""
    module = tmp_path / "diverge.hlo"
    module.write_text(DIVERGING.replace("[N]", f"[{elements}]"))
    result = mpirun(2, ["-m", "hlo_cli.hlo_run", module, "--random-inputs", "--no-print"], timeout=200,
                    launcher_options=["-disable-auto-cleanup"],    # let both ranks say it
                    env={**os.environ, "HLO_MPI_SHARED_MEMORY": shared_memory})
    assert result.returncode != 0
    for rank in (0, 1):
        line = next(line for line in result.stderr.splitlines() if line.startswith(f"rank {rank}:"))
        assert "is at another call or has other operands" in line and "diverge.hlo:" in line, result.stderr
    assert "%ar_first" in result.stderr and "%ar_second" in result.stderr


def test_devices_at_different_collectives_time_out_in_one_process(tmp_path):
    """The threads of one process: the two all-reduces never meet (as in XLA), a located time-out."""
    module = tmp_path / "diverge.hlo"
    module.write_text(DIVERGING.replace("[N]", "[64]"))
    result = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", module, "--random-inputs", "--no-print",
                             "--collective-timeout", "2"], capture_output=True, text=True, timeout=200, cwd=ROOT)
    assert result.returncode == 1 and "timed out" in result.stderr and "diverge.hlo:" in result.stderr, result.stderr
