"""Long fuzzing campaigns (the CI test runs a short one: tests/fuzz).

    python tools/hlo_fuzz.py programs --seed 1 --count 10000 [--passes 3] [--xla] [--aot-every 50] [--out DIR]
    python tools/hlo_fuzz.py mutate --seed 1 --count 100000 [--out DIR]

`programs` generates `count` random valid modules from seeds seed, seed+1, ... and checks
each (hlo/fuzz/oracles.py): round trip, `--passes` random passes plus the default pipeline,
the JIT (and AOT every N programs), XLA:CPU with --xla (jax needed). `mutate` feeds damaged
module texts (generated ones and the test data's) through the tools (hlo/fuzz/mutation.py).
Both print a summary and write every finding (with the module) under --out, so that each
becomes a regression test; the exit status is 1 when something was found.
"""
from __future__ import annotations

import argparse
import collections
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hlo.fuzz.mutation import exercise, mutate  # noqa: E402
from hlo.fuzz.oracles import check, choose_passes  # noqa: E402
from hlo.fuzz.program import generate  # noqa: E402
from hlo.fuzz.xla_runner import XlaRunner, jax_available  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def programs(args) -> int:
    xla = XlaRunner() if args.xla and jax_available() else None
    found, refusals, checks = [], collections.Counter(), 0
    start, cpu = time.time(), cpu_seconds()
    for k, seed in enumerate(range(args.seed, args.seed + args.count)):
        program = generate(seed)
        passes = choose_passes(np.random.default_rng(seed), args.passes)
        outcome = check(program, passes, jit=True, aot=bool(args.aot_every) and k % args.aot_every == 0, xla=xla)
        checks += outcome.checks
        for f in outcome.findings:
            found.append(f)
            _save(args.out, f"seed{seed}_{f.check.replace(':', '_')}", program.text, str(f))
            print(f, flush=True)
        for r in outcome.xla_refusals:
            refusals[r.split(": ", 2)[-1][:100]] += 1
        if (k + 1) % 500 == 0:
            print(f"... {k + 1} programs, {len(found)} findings, {time.time() - start:.0f} s", flush=True)
    if xla is not None:
        xla.close()
    summary = {"programs": args.count, "seed": args.seed, "checks": checks, "findings": len(found),
               "wall_seconds": round(time.time() - start, 1), "cpu_seconds": round(cpu_seconds() - cpu, 1),
               "xla": xla is not None, "xla_refusals": dict(refusals.most_common())}
    print(json.dumps(summary, indent=1))
    _save(args.out, "summary", json.dumps(summary, indent=1), "")
    return 1 if found else 0


def mutations(args) -> int:
    rng = np.random.default_rng(args.seed)
    sources = _sources(args.seed)
    bad, loaded = [], 0
    start, cpu = time.time(), cpu_seconds()
    for k in range(args.count):
        text = mutate(sources[int(rng.integers(0, len(sources)))], rng, sources[int(rng.integers(0, len(sources)))])
        verdict = exercise(text, rng, args.timeout)
        loaded += verdict.loaded
        if not verdict.ok:
            bad.append(verdict)
            _save(args.out, f"mutation{args.seed}_{k}_{verdict.stage}", text, verdict.detail)
            print(f"input {k}: {verdict.stage}: {verdict.detail.splitlines()[-1] if verdict.detail else ''}", flush=True)
        if (k + 1) % 5000 == 0:
            print(f"... {k + 1} inputs, {len(bad)} failures, {time.time() - start:.0f} s", flush=True)
    summary = {"inputs": args.count, "seed": args.seed, "valid_modules": loaded, "tracebacks": sum(
        "Traceback" in v.detail for v in bad), "hangs": sum("no answer" in v.detail for v in bad),
               "other_failures": sum("Traceback" not in v.detail and "no answer" not in v.detail for v in bad),
               "wall_seconds": round(time.time() - start, 1), "cpu_seconds": round(cpu_seconds() - cpu, 1)}
    print(json.dumps(summary, indent=1))
    _save(args.out, "summary", json.dumps(summary, indent=1), "")
    return 1 if bad else 0


def _sources(seed: int) -> list[str]:
    """Texts to damage: generated modules and the project's test modules."""
    texts = [generate(seed * 1000 + i).text for i in range(200)]
    for folder in ("tests/data/corpus", "tests/data/xla_modules", "tests/data/parser", "samples"):
        texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted((ROOT / folder).glob("*.hlo"))]
    return texts


def _save(out: str, name: str, text: str, why: str) -> None:
    if not out:
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.hlo").write_text(text)
    if why:
        (folder / f"{name}.txt").write_text(why)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("programs", help="random valid modules, checked differentially")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--passes", type=int, default=3, help="random passes tried on each program")
    p.add_argument("--xla", action="store_true", help="compare with XLA:CPU (needs jax)")
    p.add_argument("--aot-every", type=int, default=50, help="AOT check every N programs (0: never)")
    p.add_argument("--out", default="", help="folder for findings and the summary")
    m = sub.add_parser("mutate", help="damaged module texts through the tools")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--count", type=int, default=10000)
    m.add_argument("--timeout", type=float, default=20.0, help="seconds a tool may take on one input")
    m.add_argument("--out", default="")
    args = parser.parse_args(argv)
    return programs(args) if args.command == "programs" else mutations(args)


if __name__ == "__main__":
    sys.exit(main())
