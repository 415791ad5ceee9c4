"""Parse and check throughput on a large dump-style module, beside XLA's own parser.

Builds a module of (by default) 100,000+ instructions written the way XLA dumps
them: `%` names, result layouts, `metadata={op_name=... source_file=...
source_line=...}` on every line, a mix of elementwise ops, broadcasts,
reshapes, dots, small constants and fusion calls. Prints the median throughput
(instructions/s) of a few runs of parse, check, and parse + check (the issue's
target: 45,000/s or more), and, when jax is installed, of XLA's C++ parser
(`jaxlib._hlo.hlo_module_from_text`) on the same text in the same run.

Times are CPU seconds of this process (`time.process_time`): the machine may be
shared, and CPU time is what the parser costs. Medians and ranges of --runs runs.

    python benchmarks/parse_bench.py [--instructions N] [--runs R] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time

from hlo.analysis.checker import check_module
from hlo.text.parser import clear_parse_cache, parse_module

TARGET_PER_SECOND = 45_000  # parse + check, issue 12

_FUSION_BODY = """%fused_computation.{i} (param_0.{i}: f32[64,32], param_1.{i}: f32[64,32]) -> f32[64,32] {{
  %param_0.{i} = f32[64,32]{{1,0}} parameter(0)
  %param_1.{i} = f32[64,32]{{1,0}} parameter(1)
  %multiply.f{i} = f32[64,32]{{1,0}} multiply(%param_0.{i}, %param_1.{i}), metadata={{op_name="jit(f)/mul" source_file="/src/model.py" source_line={i}}}
  ROOT %tanh.f{i} = f32[64,32]{{1,0}} tanh(%multiply.f{i}), metadata={{op_name="jit(f)/tanh" source_file="/src/model.py" source_line={i}}}
}}
"""


def _md(op: str, line: int) -> str:
    return f'metadata={{op_name="jit(f)/layer/{op}" source_file="/src/model.py" source_line={line}}}'


def _block(i: int, x: str) -> tuple[list[str], str]:
    """Twelve instructions (one of them a fusion call) consuming and producing an f32[64,32] value."""
    n = f"{i}"
    lines = [
        f"%constant.{n} = f32[] constant(0.5), {_md('const', i)}",
        f"%broadcast.{n} = f32[64,32]{{1,0}} broadcast(%constant.{n}), dimensions={{}}, {_md('broadcast', i)}",
        f"%multiply.{n} = f32[64,32]{{1,0}} multiply(%{x}, %broadcast.{n}), {_md('mul', i)}",
        f"%add.{n} = f32[64,32]{{1,0}} add(%multiply.{n}, %{x}), {_md('add', i)}",
        f"%reshape.{n} = f32[32,64]{{1,0}} reshape(%add.{n}), {_md('reshape', i)}",
        f"%dot.{n} = f32[64,64]{{1,0}} dot(%add.{n}, %reshape.{n}), lhs_contracting_dims={{1}}, "
        f"rhs_contracting_dims={{0}}, {_md('dot', i)}",
        f"%slice.{n} = f32[64,32]{{1,0}} slice(%dot.{n}), slice={{[0:64], [0:32]}}, {_md('slice', i)}",
        f"%constant.v{n} = s32[4]{{0}} constant({{1, 2, 3, 4}}), {_md('iota', i)}",
        f"%exponential.{n} = f32[64,32]{{1,0}} exponential(%slice.{n}), {_md('exp', i)}",
        f"%maximum.{n} = f32[64,32]{{1,0}} maximum(%exponential.{n}, %add.{n}), {_md('max', i)}",
        f"%fusion.{n} = f32[64,32]{{1,0}} fusion(%maximum.{n}, %{x}), kind=kLoop, "
        f"calls=%fused_computation.{i % 16}, {_md('fusion', i)}",
        f"%negate.{n} = f32[64,32]{{1,0}} negate(%fusion.{n}), {_md('neg', i)}",
    ]
    return lines, f"negate.{n}"


def build_module(instructions: int) -> tuple[str, int]:
    """Module text with at least `instructions` instructions, and the exact count."""
    parts = ["HloModule bench, entry_computation_layout={(f32[64,32]{1,0})->f32[64,32]{1,0}}\n"]
    count = 0
    for i in range(16):
        parts.append(_FUSION_BODY.format(i=i))
        count += 4
    body = ["ENTRY %main (p0: f32[64,32]) -> f32[64,32] {", "  %p0 = f32[64,32]{1,0} parameter(0)"]
    count += 1
    x, i = "p0", 0
    while count < instructions:
        lines, x = _block(i, x)
        body.extend("  " + line for line in lines)
        count += len(lines)
        i += 1
    body.append(f"  ROOT %copy.root = f32[64,32]{{1,0}} copy(%{x})")
    body.append("}")
    count += 1
    parts.append("\n".join(body) + "\n")
    return "\n".join(parts), count


def _cpu_seconds(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        gc.collect()  # what earlier runs left is not this run's cost
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return times


def _line(label: str, times: list[float], count: int) -> str:
    median = statistics.median(times)
    return (f"{label:<24} {median:6.2f} s  ({min(times):.2f}-{max(times):.2f})  ->  "
            f"{count / median:>9,.0f} instructions/s")


def _xla_parser():
    """jaxlib's text parser, when jax is installed (the project does not need it)."""
    try:
        from jaxlib import _hlo  # lazy: optional, for comparison only
    except ImportError:
        return None
    return getattr(_hlo, "hlo_module_from_text", None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="profile one parse and print the top functions")
    args = ap.parse_args(argv)

    text, count = build_module(args.instructions)
    print(f"module: {count} instructions, {len(text) / 1e6:.1f} MB; CPU seconds, median (range) of {args.runs}")
    parse_module("HloModule warm\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")  # build the parser once

    def parse_fresh():
        clear_parse_cache()
        return parse_module(text, "bench.hlo")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        parse_fresh()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return 0

    parse, check = [], []
    for _ in range(args.runs):
        module = []
        parse += _cpu_seconds(lambda: module.append(parse_fresh()), 1)
        check += _cpu_seconds(lambda: check_module(module[0]), 1)
    both = [p + c for p, c in zip(parse, check)]
    print(_line("parse", parse, count))
    print(_line("check", check, count))
    print(_line("parse + check", both, count))
    cached = _cpu_seconds(lambda: parse_module(text, "bench.hlo"), args.runs)
    print(_line("parse (cache hit)", cached, count))
    xla = _xla_parser()
    ours = count / statistics.median(both)
    if xla is not None:
        theirs = _cpu_seconds(lambda: xla(text), args.runs)
        print(_line("XLA's parser (jaxlib)", theirs, count))
        print(f"parse + check takes {statistics.median(both) / statistics.median(theirs):.1f}x XLA's parse time")
    ok = ours >= TARGET_PER_SECOND
    print(f"target: parse + check >= {TARGET_PER_SECOND:,}/s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
