"""Real models: our compiled backend against XLA:CPU, one thread, on a corpus of HLO programs.

    python benchmarks/models_bench.py --corpus DIR [--corpus DIR2] [--runs 21] [--compile]
        [--only NAME] [--features=-avx512f,...] [--no-xla] [--clock cpu]

A corpus is a folder of NAME.hlo, NAME.inputs.npz, NAME.expected.npz and a MANIFEST.json with
per-case tolerances (and, optionally, XLA:CPU's reference timings `xla_run_median_us` /
`xla_compile_ms`). For every case the program is compiled (`hlo.codegen.JitExecutable`,
threads=1), its outputs checked against the expected ones, and its run time measured as the
median of --runs runs. When jax is importable the same text is compiled and run by XLA:CPU in the
same process, interleaved with ours (XLA_FLAGS=--xla_cpu_multi_thread_eigen=false, the process
pinned to one core), its inputs placed on the device once and each run `execute()` +
`block_until_ready()` as in the MANIFEST; otherwise (or when XLA:CPU crashes on the case, which a
child process tries first) the MANIFEST's figures are printed, labelled "(manifest)". Ours is
`run(*inputs, reuse_results=True)`.

The ratio is XLA's time over ours: above 1.0 we are faster. With --compile, cold compile times
(empty cache folder and no parse remembered, every run) are printed instead: ours (parse + check + pipeline + LLVM) against
XLA's (HLO text to a loaded executable), medians of --compile-runs, and ours split into the default
pipeline and the code generator's part (lowering, LLVM, loading: wall seconds, and CPU seconds
summed over the compile processes, and on the critical path: lowering, the busiest compile process
and loading, the wall time on a machine with a free core per process); "codegen ratio" is XLA's
whole compile over that part. Our
compile may use every core the process started with (its parts compile in parallel processes;
--jobs 1 keeps it in one process); XLA's is pinned to one core, as its MANIFEST figures are.
The runtime library (the blocked multiply every dot and convolution calls, hlo/codegen/
runtime_library.py) does not depend on the module: it is built once per machine and target, as
XLA:CPU's runtime comes compiled in jaxlib. It is built (and its time printed) before the
first compile, in a folder of its own that the empty caches leave alone.

--clock cpu measures the CPU time of the process (both ours and XLA's run on its threads) instead of
wall time: on a machine shared with other jobs it leaves out the time other processes hold the core.

--features takes LLVM target features (e.g. `-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd`
to force the AVX2 code paths on an AVX-512 host); XLA:CPU is then held to the same instruction set
(`--xla_cpu_max_isa=AVX2`), so both compilers target an AVX2 machine.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# A private object cache for this run: never a stale object of an older pipeline or compiler.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="models_bench_")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)
os.environ["HLO_RUNTIME_CACHE"] = tempfile.mkdtemp(prefix="models_bench_runtime_")
atexit.register(shutil.rmtree, os.environ["HLO_RUNTIME_CACHE"], True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from xla_reference import reference_isa, xla_compiler  # noqa: E402

from hlo.analysis.loading import load_module  # noqa: E402
from hlo.codegen import CodegenOptions  # noqa: E402
from hlo.codegen.compile_pool import start_workers  # noqa: E402
from hlo.codegen.jit import JitExecutable  # noqa: E402
from hlo.codegen.runtime_library import load_for_jit  # noqa: E402
from hlo.text.parser import clear_parse_cache  # noqa: E402
from hlo.runtime import values_io  # noqa: E402


@dataclass
class Case:
    name: str
    path: Path
    manifest: dict

    @property
    def text(self) -> str:
        return self.path.read_text()

    def inputs(self) -> list[np.ndarray]:
        with np.load(self.path.with_suffix(".inputs.npz")) as z:
            return [z[f"arg{i}"] for i in range(len(z.files))]

    def expected(self) -> list[np.ndarray]:
        with np.load(self.path.with_suffix(".expected.npz")) as z:
            return [z[f"out{i}"] for i in range(len(z.files))]


def load_corpus(folder: Path) -> list[Case]:
    manifest = {m["name"]: m for m in json.loads((folder / "MANIFEST.json").read_text())}
    return [Case(name, folder / f"{name}.hlo", entry) for name, entry in manifest.items()
            if (folder / f"{name}.hlo").exists()]


def pin_to_one_core() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def median_interleaved(functions: list[Callable], runs: int, clock: Callable[[], float] = time.perf_counter
                       ) -> list[tuple[float, float, float]]:
    """(median, min, max) seconds of each function; each round calls every function once."""
    samples: list[list[float]] = [[] for _ in functions]
    for f in functions:
        f()
    for _ in range(runs):
        for index, f in enumerate(functions):
            start = clock()
            f()
            samples[index].append(clock() - start)
    return [(statistics.median(s), min(s), max(s)) for s in samples]


def decoded(array: np.ndarray, hlo_type: str) -> np.ndarray:
    if hlo_type.startswith("bf16") and array.dtype in (np.uint16, np.int16):
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array


def check_outputs(case: Case, outputs: list[np.ndarray]) -> Optional[str]:
    """None when every output is within the case's tolerances, else what differs."""
    m = case.manifest
    expected = case.expected()
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    types = m.get("outputs", [""] * len(expected))
    for index, (got, want) in enumerate(zip(outputs, expected)):
        got, want = decoded(np.asarray(got), types[index]), decoded(want, types[index])
        if got.shape != want.shape:
            return f"out{index}: shape {got.shape} != {want.shape}"
        if want.dtype.kind in "biu" or index in m.get("exact_outputs", []):
            if not np.array_equal(got, want):
                return f"out{index}: {int(np.sum(got != want))} elements differ"
            continue
        wide = np.complex128 if want.dtype.kind == "c" else np.float64
        g, w = got.astype(wide), want.astype(wide)
        with np.errstate(invalid="ignore"):
            bad = ~((g == w) | (np.abs(g - w) <= m["atol"] + m["rtol"] * np.abs(w)) | (np.isnan(g) & np.isnan(w)))
        if bad.any():
            worst = np.nanmax(np.abs(g - w)[bad]) if np.isfinite(g[bad] - w[bad]).any() else float("nan")
            return f"out{index}: {int(bad.sum())} elements off (max abs err {worst:.3g})"
    return None


def compile_ours(text: str, name: str, options: CodegenOptions) -> JitExecutable:
    return JitExecutable(load_module(text, name), options, threads=1)


def run_case(case: Case, runs: int, options: CodegenOptions, xla, clock: Callable[[], float] = time.perf_counter
             ) -> str:
    text, inputs = case.text, case.inputs()
    ours = compile_ours(text, case.name, options)
    problem = check_outputs(case, [values_io.from_storage(o) for o in ours.run(*inputs)])
    if problem is not None:
        return f"{case.name:44s} WRONG: {problem}"
    functions = [lambda: ours.run(*inputs, reuse_results=True)]
    label = "(manifest)"
    if xla is not None and not xla_crashes(case):
        functions.append(xla(text).bound(*inputs))
        label = "(same run)"
    elif xla is not None:
        xla, label = None, "(manifest: XLA:CPU crashes on it here)"
    times = median_interleaved(functions, runs, clock)
    ours_t = times[0]
    xla_t = times[1][0] if xla is not None else case.manifest.get("xla_run_median_us", float("nan")) * 1e-6
    return (f"{case.name:44s} ours {ours_t[0] * 1e6:10.1f} us [{ours_t[1] * 1e6:.0f}-{ours_t[2] * 1e6:.0f}]"
            f"   xla {xla_t * 1e6:10.1f} us {label}   ratio {xla_t / ours_t[0]:6.2f}x")


def xla_crashes(case: Case) -> bool:
    """Whether XLA:CPU dies running the case (jaxlib 0.10 segfaults on some programs): tried once
    in a child process, so that the benchmark goes on with the MANIFEST's figure."""
    probe = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from xla_reference import xla_compiler; "
             "z = np.load(sys.argv[3]); xla_compiler()(open(sys.argv[2]).read())(*[z[f'arg{i}'] for i in range(len(z.files))])")
    result = subprocess.run([sys.executable, "-c", probe, str(Path(__file__).resolve().parent), str(case.path),
                             str(case.path.with_suffix(".inputs.npz"))], capture_output=True)
    return result.returncode < 0


def compile_case(case: Case, runs: int, options: CodegenOptions, xla) -> str:
    """Cold compiles (empty cache folder each time): wall and CPU seconds, medians. Ours may use
    every core the process had at start (the parts compile in parallel processes); XLA runs
    pinned to one core."""
    text = case.text
    ours = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache, all_cores():
            os.environ["XDG_CACHE_HOME"] = cache
            clear_parse_cache()   # the text is parsed anew every time, as XLA parses it
            start, cpu = time.perf_counter(), time.process_time()
            stats = compile_ours(text, case.name, options).stats
            ours.append((time.perf_counter() - start, time.process_time() - cpu + stats.other_processes, stats))
    os.environ.pop("XDG_CACHE_HOME", None)
    wall, cpu = statistics.median(o[0] for o in ours), statistics.median(o[1] for o in ours)
    stats = sorted(ours, key=lambda o: o[0])[len(ours) // 2][2]
    codegen = statistics.median(o[2].code_generation_wall for o in ours)
    codegen_cpu = statistics.median(o[2].code_generation_cpu for o in ours)
    critical = statistics.median(o[2].code_generation_critical_cpu for o in ours)
    pipeline = statistics.median(o[2].wall.get("pipeline", 0.0) for o in ours)
    if xla is not None:
        theirs = []
        for _ in range(runs):
            start, cpu_start = time.perf_counter(), time.process_time()
            xla(text)
            theirs.append((time.perf_counter() - start, time.process_time() - cpu_start))
        xla_wall, xla_cpu = statistics.median(t[0] for t in theirs), statistics.median(t[1] for t in theirs)
        label = "(same run)"
    else:
        xla_wall = xla_cpu = case.manifest.get("xla_compile_ms", float("nan")) * 1e-3
        label = "(manifest)"
    return (f"{case.name:40s} ours {wall:7.3f} s [{min(o[0] for o in ours):.3f}-{max(o[0] for o in ours):.3f}] "
            f"cpu {cpu:6.2f} = pipeline {pipeline:5.2f} + codegen {codegen:5.2f} (cpu {codegen_cpu:5.2f}, "
            f"critical path cpu {critical:5.2f}, {stats.processes} proc, {stats.kernels} kernels)   "
            f"xla {xla_wall:7.3f} s cpu {xla_cpu:6.3f} {label}   "
            f"ratio {xla_wall / wall:5.2f}x (cpu {xla_cpu / cpu:5.2f}x)"
            f"   codegen ratio {xla_wall / codegen:5.2f}x (cpu {xla_cpu / codegen_cpu:5.2f}x, "
            f"critical path {xla_cpu / critical:5.2f}x)")


ALL_CORES = os.sched_getaffinity(0)   # before pin_to_one_core


@contextmanager
def all_cores():
    """Run with every core the process started with (worker processes forked inside inherit it)."""
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL_CORES)
    try:
        yield
    finally:
        os.sched_setaffinity(0, pinned)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", required=True, type=Path, help="a corpus folder")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--compile", action="store_true", help="cold compile times instead of run times")
    parser.add_argument("--compile-runs", type=int, default=3)
    parser.add_argument("--only", action="append", help="run only these cases")
    parser.add_argument("--features", help="LLVM target features, e.g. -avx512f (forces AVX2 paths)")
    parser.add_argument("--no-xla", action="store_true", help="compare with the MANIFEST's figures only")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or CPU time of this process (steadier on a loaded machine)")
    parser.add_argument("--jobs", type=int, help="--compile: processes compiling our parts (default: every core)")
    args = parser.parse_args()
    if args.compile:
        start_workers(args.jobs)   # our compile processes, forked before jax starts its threads
    pin_to_one_core()
    options = CodegenOptions(features=args.features, jobs=args.jobs)
    isa = reference_isa(args.features)
    if isa:   # XLA:CPU on the same instruction set (read when jax starts)
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_max_isa={isa}".strip()
    xla = None if args.no_xla else xla_compiler()
    print(f"# {'compile' if args.compile else 'run'} times, one thread; XLA:CPU "
          f"{'measured in this run' if xla is not None else 'from the MANIFEST (jax not installed)'}; "
          f"features: {args.features or 'host'}; XLA_FLAGS: {os.environ.get('XLA_FLAGS', '')}; clock: {args.clock}")
    if args.compile:
        start = time.perf_counter()
        load_for_jit(options)
        print(f"# the runtime library, built once for this target: {time.perf_counter() - start:.2f} s "
              f"(not part of a module's compile)")
    for folder in args.corpus:
        for case in load_corpus(folder):
            if args.only and case.name not in args.only:
                continue
            try:
                line = (compile_case(case, args.compile_runs, options, xla) if args.compile
                        else run_case(case, args.runs, options, xla, CLOCKS[args.clock]))
            except Exception as exc:  # a benchmark reports every case, failures included
                line = f"{case.name:44s} FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
