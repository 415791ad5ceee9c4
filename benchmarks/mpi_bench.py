"""Collectives over MPI: hlo-run's all-reduce against plain mpi4py, and a data-parallel step.

    python benchmarks/mpi_bench.py [--ranks 2] [--runs 7] [--quick]

1. all-reduce of f32 arrays of 1 KB .. 64 MB over --ranks ranks (one device each): a
   module whose while loop all-reduces (add) its array K times, run the way hlo-run runs
   it under mpiexec (hlo_cli.distributed: the interpreter's MPI transport), against
   `comm.Allreduce` of mpi4py on the same arrays, K times, in the same MPI job. The two are
   alternated run by run, so they share the machine's noise; each row gives the median
   (and range) over --runs of the bus bandwidth (bytes / time per all-reduce) and the
   ratio ours / mpi4py (target: >= 0.9 at 1 MB and above). Ours is bit-identical to the
   run in one process, so it reduces in pieces in group order (hlo.interpreter.mpi_collectives);
   mpi4py uses MPI's own algorithm and order.
2. one data-parallel training step of a two-layer MLP (global batch 2048, gradients
   all-reduced) on 1 rank and on 2 ranks (one device each, half the batch each): the median
   wall time per step and the speedup.

Times are wall-clock medians (bandwidth is a wall-clock quantity); every rank's BLAS uses
one thread. The script starts mpiexec itself (the 'mpi' extra) and prints a table from
rank 0. On a machine shared with other work, compare the ratios rather than the absolutes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
try:
    import hlo  # noqa: F401
except ImportError:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SIZES = [1 << k for k in range(10, 27, 2)]      # 1 KB, 4 KB, ... 64 MB
QUICK_SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 22]

ALL_REDUCE = """HloModule bench, replica_count={ranks}

%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}}

%cond (s: (s32[], f32[{n}])) -> pred[] {{
  %s = (s32[], f32[{n}]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %k = s32[] constant({k})
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}}

%body (s: (s32[], f32[{n}])) -> (s32[], f32[{n}]) {{
  %s = (s32[], f32[{n}]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[{n}] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %r = f32[{n}] all-reduce(%x), replica_groups={{}}, to_apply=%add
  ROOT %t = (s32[], f32[{n}]) tuple(%j, %r)
}}

ENTRY %main {{
  %x = f32[{n}] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[{n}]) tuple(%zero, %x)
  %w = (s32[], f32[{n}]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[{n}] get-tuple-element(%w), index=1
}}
"""

TRAIN_STEP = """HloModule dp_step, replica_count={ranks}

%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}}

ENTRY %step {{
  %x = f32[{b},256] parameter(0)
  %y = f32[{b},16] parameter(1)
  %w1 = f32[256,512] parameter(2)
  %w2 = f32[512,16] parameter(3)
  %pre = f32[{b},512] dot(%x, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %h = f32[{b},512] tanh(%pre)
  %o = f32[{b},16] dot(%h, %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %d = f32[{b},16] subtract(%o, %y)
  %gw2 = f32[512,16] dot(%h, %d), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  %dh = f32[{b},512] dot(%d, %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  %hh = f32[{b},512] multiply(%h, %h)
  %one = f32[] constant(1)
  %ones = f32[{b},512] broadcast(%one), dimensions={{}}
  %slope = f32[{b},512] subtract(%ones, %hh)
  %dpre = f32[{b},512] multiply(%dh, %slope)
  %gw1 = f32[256,512] dot(%x, %dpre), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  %g = (f32[256,512], f32[512,16]) all-reduce(%gw1, %gw2), replica_groups={{}}, to_apply=%add
  %g1 = f32[256,512] get-tuple-element(%g), index=0
  %g2 = f32[512,16] get-tuple-element(%g), index=1
  %lr = f32[] constant(0.0001)
  %lr1 = f32[256,512] broadcast(%lr), dimensions={{}}
  %lr2 = f32[512,16] broadcast(%lr), dimensions={{}}
  %step1 = f32[256,512] multiply(%g1, %lr1)
  %step2 = f32[512,16] multiply(%g2, %lr2)
  %n1 = f32[256,512] subtract(%w1, %step1)
  %n2 = f32[512,16] subtract(%w2, %step2)
  ROOT %t = (f32[256,512], f32[512,16]) tuple(%n1, %n2)
}}
"""
GLOBAL_BATCH = 2048


# --------------------------------------------------------------------------- the ranks

def _world():
    from hlo.runtime.mpi import MpiWorld
    return MpiWorld(timeout=600)


def _job(text: str, ranks: int):
    """The module and the interpreter's MPI context, as hlo-run under mpiexec builds them."""
    from hlo.analysis.loading import load_module
    from hlo.interpreter.mpi_collectives import MpiCollectiveContext
    module = load_module(text, "bench.hlo")
    return module, MpiCollectiveContext(ranks, 1, _world(), timeout=600)


def _run(module, context, args):
    from hlo.interpreter import run_devices
    return run_devices(module, [args], replicas=context.num_replicas, context=context,
                       devices=context.local_devices)[0].result


def worker_all_reduce(runs: int, sizes: list[int]) -> None:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    ranks, rank = comm.Get_size(), comm.Get_rank()
    for size in sizes:
        n = size // 4
        # about 2 GB through each rank per timing (16 all-reduces at least): the loop's setup,
        # a fraction of a millisecond per run, is spread over enough all-reduces to leave their cost
        k = max(16, min(400, (2 << 30) // size))
        module, context = _job(ALL_REDUCE.format(ranks=ranks, n=n, k=k), ranks)
        x = np.full(n, 1.0 / ranks, np.float32)
        out = np.empty_like(x)
        _run(module, context, [x])                           # warm up both
        comm.Allreduce(x, out)
        ours, theirs = [], []
        for _ in range(runs):
            comm.Barrier()
            start = time.perf_counter()
            _run(module, context, [x])
            comm.Barrier()
            ours.append((time.perf_counter() - start) / k)
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(k):
                comm.Allreduce(x, out)
            comm.Barrier()
            theirs.append((time.perf_counter() - start) / k)
        if rank == 0:
            print(json.dumps({"kind": "all-reduce", "bytes": size, "k": k, "ours": ours, "mpi4py": theirs}),
                  flush=True)


def worker_train(runs: int) -> None:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    ranks, rank = comm.Get_size(), comm.Get_rank()
    b = GLOBAL_BATCH // ranks
    module, context = _job(TRAIN_STEP.format(ranks=ranks, b=b), ranks)
    rng = np.random.default_rng(rank)
    args = [rng.standard_normal((b, 256), np.float32), rng.standard_normal((b, 16), np.float32),
            np.random.default_rng(0).standard_normal((256, 512), np.float32) * 0.05,
            np.random.default_rng(1).standard_normal((512, 16), np.float32) * 0.05]
    _run(module, context, args)
    times = []
    for _ in range(runs):
        comm.Barrier()
        start = time.perf_counter()
        _run(module, context, args)
        comm.Barrier()
        times.append(time.perf_counter() - start)
    if rank == 0:
        print(json.dumps({"kind": "train", "ranks": ranks, "times": times}), flush=True)


# --------------------------------------------------------------------------- the driver

def _launch(ranks: int, worker: str, runs: int, quick: bool) -> list[dict]:
    here = os.path.dirname(sys.executable)
    mpiexec = shutil.which("mpiexec", path=here + os.pathsep + os.environ.get("PATH", ""))
    if mpiexec is None:
        sys.exit("mpi_bench: no mpiexec; install the 'mpi' extra (pip install -e '.[mpi]')")
    command = [mpiexec, "-n", str(ranks), sys.executable, __file__, "--worker", worker, "--runs", str(runs)]
    if quick:
        command.append("--quick")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"mpi_bench: {worker} on {ranks} ranks failed:\n{result.stderr}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _fmt_size(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def _bandwidth(size: int, seconds: list[float]) -> tuple[float, float, float]:
    rates = sorted(size / t / 1e9 for t in seconds)
    return statistics.median(rates), rates[0], rates[-1]


def report_all_reduce(rows: list[dict], ranks: int) -> None:
    print(f"all-reduce f32 (add) over {ranks} ranks, GB/s = bytes / time per all-reduce; "
          f"median [min..max] of {len(rows[0]['ours'])} runs")
    print(f"{'size':>7} {'K':>4} {'hlo-run':>24} {'mpi4py Allreduce':>24} {'ratio':>7} {'[range]':>14}")
    for row in rows:
        ours, theirs = _bandwidth(row["bytes"], row["ours"]), _bandwidth(row["bytes"], row["mpi4py"])
        ratios = sorted(t / o for o, t in zip(row["ours"], row["mpi4py"]))
        target = "  (target >= 0.9)" if row["bytes"] >= 1 << 20 else ""
        print(f"{_fmt_size(row['bytes']):>7} {row['k']:>4} "
              f"{ours[0]:8.3f} [{ours[1]:6.3f}..{ours[2]:6.3f}] {theirs[0]:8.3f} [{theirs[1]:6.3f}..{theirs[2]:6.3f}] "
              f"{statistics.median(ratios):7.2f} [{ratios[0]:.2f}..{ratios[-1]:.2f}]{target}")


def report_train(rows: list[dict]) -> None:
    print(f"data-parallel MLP step (global batch {GLOBAL_BATCH}, 256-512-16, gradients all-reduced), "
          f"wall ms per step, median [min..max]")
    one = None
    for row in rows:
        t = sorted(row["times"])
        med = statistics.median(t)
        one = med if row["ranks"] == 1 else one
        speedup = f"  speedup {one / med:.2f}x" if one and row["ranks"] > 1 else ""
        print(f"  {row['ranks']} rank(s): {med * 1e3:8.2f} ms [{t[0] * 1e3:.2f}..{t[-1] * 1e3:.2f}]{speedup}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and runs")
    parser.add_argument("--worker", choices=["all-reduce", "train"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "all-reduce":
        worker_all_reduce(args.runs, QUICK_SIZES if args.quick else SIZES)
        return
    if args.worker == "train":
        worker_train(args.runs)
        return
    runs = 3 if args.quick else args.runs
    report_all_reduce(_launch(args.ranks, "all-reduce", runs, args.quick), args.ranks)
    report_train(_launch(1, "train", runs, args.quick) + _launch(2, "train", runs, args.quick))


if __name__ == "__main__":
    main()
