"""hlo-run over MPI: one process per rank, the module's devices spread over the ranks.

    mpiexec -n N hlo-run MODULE.hlo --inputs IN.npz -o OUT.npz     (or hlo-run --launch N ...)

Every rank reads and checks the module itself; the ranks then compare fingerprints
(module text, options) and stop, naming the rank that differs, unless they agree.
Rank 0 reads the inputs and sends every rank the arguments of its devices (for a
sharded global program: the blocks of the global arrays); each rank runs its devices
(hlo.interpreter.mpi_collectives, or the compiled backend with MPI collective hooks);
rank 0 gathers the results and writes and prints them exactly as a run in one process
would. A rank that fails tells the others, which stop too; every rank that stops says
why, prefixed with its rank, and exits non-zero without waiting for the failed ones.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import click

from hlo.diagnostics import HloError
from hlo.interpreter import run_devices
from hlo.interpreter.mpi_collectives import MpiCollectiveContext, devices_per_rank
from hlo.ir import Module
from hlo.runtime.mpi import MpiUnavailable, MpiWorld, PeerFailed, exit_now, launched_by_mpi
from hlo_cli.common import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR, UsageError

__all__ = ["launched_by_mpi", "launch", "Job", "run_job", "DeviceResult"]


@dataclass
class DeviceResult:
    """What one device gave (looks like an Evaluator to hlo-run's output code)."""
    number: int
    result: Any
    outfeed: list
    device: Any = None


@dataclass
class _DeviceIds:
    replica_id: int
    partition_id: int


@dataclass
class Job:
    """One distributed hlo-run: what every rank knows from its command line."""
    module: Module
    module_text: str
    module_name: str
    replicas: int
    partitions: int
    options: dict                       # every option that must agree across ranks
    timeout: float
    # rank 0 only: every device's arguments and infeeds (devices in order)
    prepare: Callable[[], tuple[list, Optional[list]]]
    # rank 0 only: write and print what every device gave (DeviceResults in device order)
    finish: Callable[[list[DeviceResult], list[float]], None]
    # how a rank runs its devices: (module, args, infeeds, context, devices) -> results
    run_local: Optional[Callable] = None
    seed: int = 0
    repeat: Optional[int] = None
    timings: list = field(default_factory=list)


def run_job(job: Job) -> None:
    """Run the job on this rank; never returns on failure (the rank exits non-zero)."""
    world = _start_world(job.timeout)
    try:
        _run(world, job)
    except BaseException as exc:  # every way out must tell the other ranks
        _fail(world, exc)


def _start_world(timeout: float) -> MpiWorld:
    try:
        return MpiWorld(timeout)
    except MpiUnavailable as exc:
        raise UsageError(str(exc)) from None


def _run(world: MpiWorld, job: Job) -> None:
    world.check_consistent(_fingerprint(job))
    context = MpiCollectiveContext(job.replicas, job.partitions, world, job.timeout)
    local = context.local_devices
    args, infeeds = _distribute_inputs(world, job, context)
    run_local = job.run_local or _run_interpreter
    results = run_local(job, args, infeeds, context, local)
    for _ in range(job.repeat or 0):
        start = time.perf_counter()
        run_local(job, args, infeeds, context, local)
        job.timings.append(time.perf_counter() - start)
    mine = [DeviceResult(d, r, o) for d, (r, o) in zip(local, results)]
    if world.rank != 0:
        world.send_object(mine, 0, "sending the results to rank 0")
        return
    every = list(mine)
    for rank in range(1, world.size):
        every.extend(world.recv_object(rank, f"receiving the results of rank {rank}"))
    for r in every:
        r.device = _DeviceIds(r.number // job.partitions, r.number % job.partitions)
    job.finish(every, job.timings)


def _run_interpreter(job: Job, args: list, infeeds, context, local: list[int]) -> list:
    evaluators = run_devices(job.module, args, replicas=job.replicas, partitions=job.partitions, seed=job.seed,
                             per_device_infeed=infeeds, context=context, devices=local)
    return [(ev.result, ev.outfeed) for ev in evaluators]


def compiled_runner(threads: Optional[int]) -> Callable:
    """How a rank runs its devices with --backend cpu: compiled once per device (the disk cache
    makes the copies cheap), collectives through the hooks over MPI."""
    executables: list = []

    def run_compiled(job: Job, args: list, infeeds, context, local: list[int]) -> list:
        if infeeds:
            raise UsageError("--infeed needs --backend interpreter")
        from hlo.codegen.collective_runtime import run_compiled_devices  # lazy: llvmlite, only for --backend cpu
        shape = job.module.entry.root.shape
        leaves = run_compiled_devices(job.module, args, replicas=job.replicas, partitions=job.partitions,
                                      context=context, devices=local, threads=threads, executables=executables)
        return [(_rebuild(shape, iter(device)), []) for device in leaves]

    return run_compiled


def _rebuild(shape, leaves):
    if shape.is_tuple:
        return tuple(_rebuild(s, leaves) for s in shape.tuple_shapes)
    return next(leaves)


def _distribute_inputs(world: MpiWorld, job: Job, context: MpiCollectiveContext) -> tuple[list, Optional[list]]:
    """Rank 0 prepares every device's arguments and sends each rank those of its devices."""
    per_rank = context.per_rank
    if world.rank == 0:
        args, infeeds = job.prepare()
        for rank in range(1, world.size):
            own = slice(rank * per_rank, (rank + 1) * per_rank)
            world.send_object((args[own], infeeds[own] if infeeds is not None else None), rank,
                              f"sending the inputs of rank {rank}")
        return args[:per_rank], infeeds[:per_rank] if infeeds is not None else None
    return world.recv_object(0, "receiving the inputs from rank 0")


def _fingerprint(job: Job) -> dict[str, str]:
    digest = hashlib.sha256(job.module_text.encode()).hexdigest()[:16]
    fingerprint = {"module": f"{job.module_name} (sha256 {digest}...)"}
    fingerprint.update({f"option --{name}": str(value) for name, value in job.options.items()})
    return fingerprint


def _fail(world: MpiWorld, exc: BaseException) -> None:
    """Say why this rank stops, tell the others, exit without waiting for anyone."""
    prefix = f"rank {world.rank}: "
    if isinstance(exc, HloError):
        message, code = exc.render(), EXIT_USER_ERROR
    elif isinstance(exc, (UsageError, PeerFailed, ValueError)):
        message, code = f"error: {exc}", EXIT_USER_ERROR
    elif isinstance(exc, KeyboardInterrupt):
        message, code = "interrupted", 130
    elif isinstance(exc, SystemExit):
        message, code = f"exited with status {exc.code}", int(exc.code or 0) or EXIT_USER_ERROR
    else:
        message, code = f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL_ERROR
    click.echo(prefix + message, err=True)
    if world.peer_failure is None:     # else the failed rank has told everyone already
        world.abort_others(message.splitlines()[0])
    exit_now(code)


# --------------------------------------------------------------------------- --launch

def launch(ranks: int, argv: list[str]) -> int:
    """Start `mpiexec -n RANKS` on this same hlo-run command (without --launch); its exit status."""
    mpiexec = _find_mpiexec()
    command = [mpiexec, "-n", str(ranks)]
    rank = [sys.executable, "-m", "hlo_cli.hlo_run", *_without_launch(argv), "--distributed"]
    if _is_hydra(mpiexec):
        # MPICH's launcher kills every rank at once when one exits non-zero or dies by a signal,
        # before the others can say what happened. The ranks stop by themselves, each saying why:
        # turn that off, and start each rank under a shell so that a rank killed by a signal
        # is an exit status to the launcher, which then leaves the others to report it.
        command.append("-disable-auto-cleanup")
        rank = ["sh", "-c", 'trap "" USR1; "$0" "$@"; exit $?', *rank]
    return subprocess.call(command + rank)


def _find_mpiexec() -> str:
    here = os.path.dirname(sys.executable)
    found = shutil.which("mpiexec", path=here + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise UsageError("--launch needs mpiexec: install the 'mpi' extra (pip install 'hlo-toolchain[mpi]' "
                         "brings mpi4py and MPICH's mpiexec) or an MPI library")
    return found


def _is_hydra(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in out


def _without_launch(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--launch":
            skip = True
        elif not arg.startswith("--launch="):
            out.append(arg)
    return out


def check_devices(devices: int, ranks: int) -> None:
    try:
        devices_per_rank(devices, ranks)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
