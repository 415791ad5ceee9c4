"""Compiling parts on the machine's cores: forked worker processes, or this process alone.

llvmlite holds a global lock, so threads would compile one part at a time; processes do
not. `compile_parts` sends each part's IR text to a pool of forked workers (largest
first, so the long ones do not finish last) and receives its object or bitcode bytes; a pool
for N processes forks N - 1, this process compiling the parts no worker has taken once it has
nothing else to do (with one process per core, none of them waits for a core: on two cores, a
small module's heaviest kernel took 20 ms beside this process's lowering and a second worker,
14 ms alone).
The pool is started on the first large compile and kept for the next ones (a fork costs
tens of milliseconds; a running pool is used for smaller compiles too); small compiles, a
single process allowed (`jobs=1`, or a process pinned to one core), or a platform other
than Linux compile in this process. Every part
is compiled the same way in either case, so the bytes are identical. A worker that dies
(out of memory, a crash in LLVM) fails the compile with an error; the next compile starts
new workers.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional

from .options import Part
from .target import PartResult, compile_part
from .worker_pool import WorkerPool, as_completed

POOL_MIN_BYTES = 150_000   # less IR than this compiles faster here than by starting workers
RUNNING_POOL_MIN_BYTES = 4_000   # once workers run, sending them parts costs about a millisecond


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Fork is how workers start: on Linux (elsewhere it is unavailable or unsafe, and a
    spawned interpreter would cost more than it saves)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _wanted(jobs: Optional[int]) -> int:
    return jobs if jobs is not None else available_cores()


def processes_for(parts: list[Part], jobs: Optional[int]) -> int:
    """How many processes compile these parts: 1 unless there is enough work to share."""
    wanted = _wanted(jobs)
    if wanted <= 1 or len(parts) < 2 or not can_fork():
        return 1
    wanted = min(wanted, len(parts))
    threshold = RUNNING_POOL_MIN_BYTES if (os.getpid(), wanted) in _POOLS else POOL_MIN_BYTES
    if sum(len(p.llvm_ir) for p in parts) < threshold:
        return 1
    return wanted


def running_pool(jobs: Optional[int]) -> Optional[WorkerPool]:
    """The workers of this process when they are already running (None otherwise): parts can be
    sent to them one by one, as lowering emits them, for about a millisecond each."""
    wanted = _wanted(jobs)
    if wanted <= 1 or not can_fork():
        return None
    with _POOLS_LOCK:
        return _POOLS.get((os.getpid(), wanted))


def compile_parts(parts: list[Part], options, kind: str, jit: bool, jobs: Optional[int] = None,
                  progress: Optional[Callable[[int, int], None]] = None,
                  started: Optional[dict] = None) -> tuple[list[PartResult], int]:
    """(results in the parts' order, processes used). started: {part name: future} of parts
    already sent to the running workers (build.PartStream), as they are now."""
    started = started or {}
    processes = _wanted(jobs) if started else processes_for(parts, jobs)
    done: dict[str, PartResult] = {}
    report = progress or (lambda finished, total: None)
    if processes == 1:
        for part in parts:
            done[part.name] = compile_part(part, options, kind, jit)
            report(len(done), len(parts))
    else:
        pool = _pool(processes)
        rest = [p for p in parts if p.name not in started]
        # With kernels already at the workers, the driver (O0: a millisecond or two) compiles here.
        here = [p for p in rest if p.opt_level == 0] if started else []
        largest_first = sorted((p for p in rest if p.opt_level != 0 or not started), key=lambda p: -len(p.llvm_ir))
        try:
            futures = [started[p.name] for p in parts if p.name in started]
            futures += [pool.submit(compile_part, p, options, kind, jit) for p in largest_first]
            for part in here:
                done[part.name] = compile_part(part, options, kind, jit)
                report(len(done), len(parts))
            while pool.run_one_here():   # the parts no worker has taken yet, largest first
                pass
            for future in as_completed(futures):
                result = future.result()
                done[result.name] = result
                report(len(done), len(parts))
        except BrokenProcessPool:
            _forget(processes)   # the next compile starts new workers
            raise RuntimeError("a compile worker process died (out of memory, or a crash in LLVM)") from None
    return [done[p.name] for p in parts], processes


_POOLS: dict[tuple[int, int], WorkerPool] = {}   # (pid, workers) -> pool of that process
_POOLS_LOCK = threading.Lock()


def start_workers(workers: Optional[int] = None) -> None:
    """Fork the pool now, e.g. before a library that starts threads of its own (jax) is loaded:
    forking a process with threads risks a lock held by a thread that does not exist in the child."""
    workers = workers if workers is not None else available_cores()
    if workers > 1 and can_fork():
        pool = _pool(workers)
        for future in [pool.submit(os.getpid) for _ in range(workers - 1)]:
            future.result()


def _pool(workers: int) -> WorkerPool:
    """The pool of `workers` processes: this one and workers - 1 forked ones."""
    key = (os.getpid(), workers)   # a forked child starts its own pool
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool.broken:   # a pool whose worker died is not used again
            pool = WorkerPool(workers - 1)   # this process is the last one (run_one_here)
            _POOLS[key] = pool
        return pool


def _forget(workers: int) -> None:
    with _POOLS_LOCK:
        pool = _POOLS.pop((os.getpid(), workers), None)
    if pool is not None:
        pool.shutdown()
