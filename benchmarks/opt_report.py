"""Optimisation report: our default pipeline against XLA:CPU's optimised dumps.

    python benchmarks/opt_report.py [CORPUS_DIR] [--pipeline NAME] [--json]

For every NAME.hlo of the corpus folder that has an XLA-optimised NAME.opt.hlo
next to it, runs the pipeline on NAME.hlo and prints the number of kernels after
it next to the number of kernels in NAME.opt.hlo, and the pipeline time.

Kernels (the same definition on both sides): the instructions that would run as
code of their own. Counted in every computation that runs as ordinary code: the
entry and, transitively, every computation called by call / while / conditional
(each computation once, however often it is called). Not counted: parameter,
constant, tuple, get-tuple-element and bitcast (no code of their own), call /
while / conditional themselves (their computations are counted instead), and
anything inside fused computations and scalar reducers / comparators (part of the
fusion, reduce, sort ... that uses them). A fusion is one kernel.

Summary: the fraction of modules where our count <= XLA's (target >= 80%) and
the largest pipeline time (target < 2 s per module). Default corpus: the
project's ../shared/corpus, when it exists.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).absolute().parents[1]
try:
    import hlo  # noqa: F401  (installed, or on PYTHONPATH)
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from hlo import HloError, parse_module  # noqa: E402
from hlo.ir import Module  # noqa: E402
from hlo.opcodes import Op, Trait  # noqa: E402
from hlo.passes.pass_manager import run_pipeline  # noqa: E402
from hlo.passes.pipelines import missing_passes, pipeline_text  # noqa: E402

TARGET_FRACTION = 0.8
TARGET_SECONDS = 2.0


def code_computations(module: Module):
    """The entry and every computation reached from it through call / while / conditional."""
    seen: set[int] = set()
    stack = [module.entry]
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        yield comp
        for inst in comp.instructions:
            if inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE):
                stack.extend(inst.called_computations())


def count_kernels(module: Module) -> int:
    return sum(1 for comp in code_computations(module) for inst in comp.instructions
               if not inst.info.has(Trait.NO_CODE | Trait.RUNS_COMPUTATIONS_AS_CODE) and inst.opcode != Op.BITCAST)


@dataclass
class Row:
    name: str
    ours: int | None
    xla: int
    seconds: float
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.ours is not None and self.ours <= self.xla


def measure(corpus: Path, pipeline: str) -> list[Row]:
    rows = []
    for opt_path in sorted(corpus.glob("*.opt.hlo")):
        name = opt_path.name[: -len(".opt.hlo")]
        src = corpus / f"{name}.hlo"
        if not src.exists():
            continue
        xla = count_kernels(parse_module(opt_path.read_text(), str(opt_path)))
        module = parse_module(src.read_text(), str(src))
        start = time.perf_counter()
        try:
            run_pipeline(module, pipeline)
        except HloError as err:
            rows.append(Row(name, None, xla, time.perf_counter() - start, err.render().splitlines()[0]))
            continue
        except Exception as exc:  # a bug in a pass: report it and go on with the other modules
            rows.append(Row(name, None, xla, time.perf_counter() - start,
                            f"internal error: {type(exc).__name__}: {exc}"))
            continue
        rows.append(Row(name, count_kernels(module), xla, time.perf_counter() - start))
    return rows


def report(rows: list[Row], pipeline_name: str, missing: list[str]) -> str:
    width = max([len("module")] + [len(r.name) for r in rows])
    lines = [f"pipeline '{pipeline_name}'" + (f" (passes not available: {', '.join(missing)})" if missing else ""),
             f"{'module':<{width}}  {'ours':>5}  {'xla':>5}  {'seconds':>8}  ",
             "-" * (width + 30)]
    for r in rows:
        ours = "error" if r.ours is None else str(r.ours)
        mark = "" if r.ok else "  > xla" if r.ours is not None else f"  {r.error}"
        lines.append(f"{r.name:<{width}}  {ours:>5}  {r.xla:>5}  {r.seconds:>8.3f}{mark}")
    if rows:
        good = sum(r.ok for r in rows)
        slowest = max(rows, key=lambda r: r.seconds)
        total_ours = sum(r.ours or 0 for r in rows)
        total_xla = sum(r.xla for r in rows)
        lines += ["-" * (width + 30),
                  f"{'total':<{width}}  {total_ours:>5}  {total_xla:>5}",
                  f"modules with ours <= xla: {good}/{len(rows)} = {good / len(rows):.0%} "
                  f"(target >= {TARGET_FRACTION:.0%})",
                  f"max pipeline time: {slowest.seconds:.3f} s ({slowest.name}) (target < {TARGET_SECONDS:.0f} s)"]
    return "\n".join(lines) + "\n"


def default_corpus() -> Path | None:
    candidate = ROOT.parent / "shared" / "corpus"
    return candidate if candidate.is_dir() else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=None, help="folder of NAME.hlo + NAME.opt.hlo")
    parser.add_argument("--pipeline", default="default", help="named pipeline to run (default: default)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    corpus = args.corpus or default_corpus()
    if corpus is None or not corpus.is_dir():
        parser.error("give a corpus folder (../shared/corpus does not exist)")
    try:
        text = pipeline_text(args.pipeline)
        rows = measure(corpus, text)
    except HloError as err:
        print(err.render(), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([asdict(r) | {"ok": r.ok} for r in rows], indent=1))
    else:
        sys.stdout.write(report(rows, args.pipeline, missing_passes(args.pipeline)))
    met = rows and sum(r.ok for r in rows) / len(rows) >= TARGET_FRACTION \
        and max(r.seconds for r in rows) < TARGET_SECONDS
    return 0 if met else 2


if __name__ == "__main__":
    sys.exit(main())
