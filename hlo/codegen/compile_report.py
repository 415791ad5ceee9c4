"""What a compile reports: seconds per phase, kernel counts, and a progress bar.

CompileStats collects the phases of one compile (pipeline, lowering, LLVM optimisation,
machine code, loading) as wall-clock seconds of this process and CPU seconds of every process
that worked on them (the compile pool's workers included), and the kernel counts: distinct
kernels, calls, instructions inline in the driver, parts compiled and parts found in the cache.
`table()` is what `hlo-run --time-compile` and `hlo-aot --time-compile` print.

ProgressBar draws `compiling 412 kernels [=====>    ] 37%` on a terminal's standard error once
a compile has run for DELAY seconds, and erases it at the end; it draws nothing when the
stream is not a terminal.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional, TextIO

# "llvm" is the wall time of compiling the parts (in parallel: one figure for both steps);
# "optimisation" and "machine code" are their CPU seconds summed over the processes.
# "runtime library" is the one-time build of runtime_library.py on a machine (not per module).
PHASES = ("pipeline", "lowering", "llvm", "optimisation", "machine code", "runtime library", "loading")


@dataclass
class CompileStats:
    wall: dict = field(default_factory=dict)    # phase -> seconds of this process's clock
    cpu: dict = field(default_factory=dict)     # phase -> CPU seconds, workers included
    kernels: int = 0          # distinct kernels
    calls: int = 0            # kernel calls in the driver
    inline: int = 0           # instructions emitted inline in the driver
    compiled: int = 0         # parts compiled in this run (kernels and the driver)
    cache_hits: int = 0       # parts whose code came from the object cache
    processes: int = 1        # processes that compiled parts
    busiest_process: float = 0.0     # CPU seconds of the process that compiled parts longest
    other_processes: float = 0.0     # CPU seconds of the parts compiled by worker processes
    module_cache_hit: bool = False   # the whole module's lowering came from the cache

    @contextmanager
    def phase(self, name: str, cpu: bool = True):
        """Time a phase of this process (seconds add up over repeated phases). cpu=False records
        the wall time only (its CPU seconds are recorded part by part)."""
        wall, cpu_start = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - wall, time.process_time() - cpu_start if cpu else None)

    def add(self, name: str, wall: Optional[float], cpu: Optional[float]) -> None:
        if wall is not None:
            self.wall[name] = self.wall.get(name, 0.0) + wall
        if cpu is not None:
            self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def count_lowered(self, lowered) -> None:
        self.kernels = len(lowered.kernels)
        self.calls = lowered.calls
        self.inline = lowered.inline

    def add_parts(self, results: list) -> None:
        """The CPU seconds compiled parts (target.PartResult) took, in whichever process."""
        per_process: dict[int, float] = {}
        for result in results:
            self.add("optimisation", None, result.optimise_seconds)
            self.add("machine code", None, result.machine_code_seconds)
            seconds = result.optimise_seconds + result.machine_code_seconds
            per_process[result.process] = per_process.get(result.process, 0.0) + seconds
        self.compiled += len(results)
        self.busiest_process = max(per_process.values(), default=0.0)
        self.other_processes += sum(seconds for pid, seconds in per_process.items() if pid != os.getpid())

    @property
    def code_generation_cpu(self) -> float:
        """CPU seconds of lowering, LLVM optimisation and machine code: the code generator's part."""
        return sum(self.cpu.get(p, 0.0) for p in ("lowering", "optimisation", "machine code"))

    @property
    def code_generation_critical_cpu(self) -> float:
        """CPU seconds on the code generator's critical path: lowering, the busiest compile
        process, loading (what its wall time is on a machine with a free core per process)."""
        return sum(self.cpu.get(p, 0.0) for p in ("lowering", "loading")) + self.busiest_process

    @property
    def code_generation_wall(self) -> float:
        """Wall seconds of lowering and of compiling the parts."""
        return sum(self.wall.get(p, 0.0) for p in ("lowering", "llvm", "loading"))

    def table(self) -> str:
        lines = [f"{'compile phase':<16} {'wall s':>8} {'cpu s':>8}"]
        for name in PHASES:
            if name in self.wall or name in self.cpu:
                wall = self.wall.get(name)
                lines.append(f"{name:<16} {_seconds(wall):>8} {_seconds(self.cpu.get(name)):>8}")
        lines.append(f"{'total':<16} {_seconds(sum(self.wall.values())):>8} {_seconds(sum(self.cpu.values())):>8}")
        if self.module_cache_hit:
            lines.append("the module's code came from the cache")
        lines.append(f"kernels: {self.kernels} distinct, {self.calls} calls, {self.inline} instructions inline; "
                     f"parts: {self.compiled} compiled in {self.processes} process"
                     f"{'es' if self.processes != 1 else ''} (busiest {self.busiest_process:.3f} cpu s), "
                     f"{self.cache_hits} from the cache")
        return "\n".join(lines)


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


class ProgressBar:
    """`compiling N kernels [====>     ] 40%` on a terminal, after DELAY seconds; see the module doc."""

    DELAY = 1.0
    WIDTH = 30

    def __init__(self, stream: Optional[TextIO] = None, label: str = "compiling", delay: Optional[float] = None):
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.delay = self.DELAY if delay is None else delay
        self.start = time.perf_counter()
        self.drawn = False
        self.enabled = _is_terminal(self.stream)

    def update(self, done: int, total: int, what: str = "kernels") -> None:
        if not self.enabled or total <= 0 or time.perf_counter() - self.start < self.delay:
            return
        filled = self.WIDTH * done // total
        arrow = ">" if filled < self.WIDTH else ""
        bar = "=" * filled + arrow + " " * (self.WIDTH - filled - len(arrow))
        self.stream.write(f"\r{self.label} {total} {what} [{bar}] {100 * done // total:3d}%")
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        """Erase the bar (a finished compile leaves no trace on the terminal)."""
        if self.drawn:
            self.stream.write("\r" + " " * (len(self.label) + self.WIDTH + 40) + "\r")
            self.stream.flush()
            self.drawn = False


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
