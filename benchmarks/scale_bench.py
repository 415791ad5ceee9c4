"""How cost grows with module size: parse, check, pipeline and compile per instruction.

Builds dump-style modules (parse_bench.build_module: `%` names, layouts, metadata on every
line, elementwise ops, dots, slices, fusion calls) of --sizes instructions and times each
phase on each: parse (text to IR), check (the verifier), the default pipeline, and a cold
compile of the pipelined module (an empty object cache; the code generator's own pipeline
off, since the module is already through it; one compile process, so that all its CPU time
is this process's). Prints microseconds per instruction, and the
growth from the smallest to the largest size (issue 12's target: at most 1.5x, i.e. close
to linear time). Times are CPU seconds of this process (`resource.getrusage`), medians of
--runs runs.

    python benchmarks/scale_bench.py [--sizes 10000,30000,100000] [--runs 3] [--phases parse,check,pipeline,compile]
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parse_bench import build_module  # noqa: E402

from hlo.analysis.checker import check_module  # noqa: E402
from hlo.passes.pass_manager import run_pipeline  # noqa: E402
from hlo.passes.pipelines import pipeline_text  # noqa: E402
from hlo.text.parser import clear_parse_cache, parse_module  # noqa: E402

TARGET_GROWTH = 1.5
PHASES = ("parse", "check", "pipeline", "compile")


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn) -> float:
    gc.collect()
    start = cpu_seconds()
    fn()
    return cpu_seconds() - start


def measure(text: str, phase: str) -> float:
    """CPU seconds of one run of `phase` on a fresh module parsed from text."""
    clear_parse_cache()
    if phase == "parse":
        return timed(lambda: parse_module(text, "scale.hlo"))
    module = parse_module(text, "scale.hlo")
    if phase == "check":
        return timed(lambda: check_module(module))
    if phase == "pipeline":
        return timed(lambda: run_pipeline(module, pipeline_text("default")))
    run_pipeline(module, pipeline_text("default"))
    from hlo.codegen import CodegenOptions, JitExecutable  # lazy: llvmlite, only for the compile phase
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        return timed(lambda: JitExecutable(module, CodegenOptions(run_pipeline=False, jobs=1), threads=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--phases", default=",".join(PHASES))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        ap.error(f"unknown phases {sorted(unknown)}; phases: {', '.join(PHASES)}")
    texts = {n: build_module(n) for n in sizes}
    print(f"# CPU microseconds per instruction, medians of {args.runs} runs (ranges in brackets)")
    print(f"{'phase':<10}" + "".join(f"{texts[n][1]:>22,}" for n in sizes) + f"{'growth':>10}")
    worst = 0.0
    for phase in phases:
        per = []
        cells = []
        for n in sizes:
            text, count = texts[n]
            runs = [measure(text, phase) * 1e6 / count for _ in range(args.runs)]
            per.append(statistics.median(runs))
            cells.append(f"{per[-1]:9.1f} [{min(runs):.1f}-{max(runs):.1f}]")
        growth = per[-1] / per[0]
        worst = max(worst, growth)
        print(f"{phase:<10}" + "".join(f"{c:>22}" for c in cells) + f"{growth:9.2f}x")
    print(f"# growth {sizes[0]:,} -> {sizes[-1]:,} instructions: worst {worst:.2f}x "
          f"(target at most {TARGET_GROWTH}x): {'met' if worst <= TARGET_GROWTH else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
