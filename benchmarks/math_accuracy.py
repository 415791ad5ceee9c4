"""Accuracy and throughput of the in-IR math approximations (hlo/codegen/mathlib.py).

For every function and type, JIT-compiles a loop applying it to an array (host
CPU, O3, loop vectorisation), runs it on a stratified sweep (every binade of
the tested range plus a uniform sweep of the main range, mathlib.sample_inputs)
and prints the maximum error in ulps against a float64 (for f32) or long double
(for f64) reference, the documented bound (mathlib.ACCURACY) and the worst
input. Then, in the same run, the time per element of the compiled loop and of
numpy's ufunc on the same data (single thread, arrays in L2), with the ratio
numpy/ours (> 1: ours is faster). Exits 1 when a measured error exceeds its
documented bound.

    python benchmarks/math_accuracy.py [--points N] [--f64-points N] [--only exp,log]
                                       [--no-speed] [--markdown]

--markdown prints the accuracy table in the form docs/MATH.md shows.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
try:
    import hlo  # noqa: F401
except ImportError:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(ROOT))

from hlo.codegen import mathlib  # noqa: E402

DTYPES = ("float32", "float64")
SPEED_ELEMENTS = 1 << 16  # 256 KiB of f32: in L2, so the loop's arithmetic is what is timed


def _numpy_logistic(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _numpy_erf():
    """scipy.special.erf when scipy is installed (numpy has no erf ufunc), else math.erf."""
    try:
        from scipy.special import erf
        return erf, "scipy.special.erf"
    except ImportError:
        import math
        vectorized = np.frompyfunc(math.erf, 1, 1)
        return (lambda x, out: np.copyto(out, vectorized(x).astype(x.dtype))), "math.erf (no scipy)"


def numpy_baselines():
    """name -> (callable(*args, out=...), label) for the numpy equivalent of each function."""
    erf, erf_label = _numpy_erf()
    return {
        "exp": (np.exp, "np.exp"), "log": (np.log, "np.log"), "log1p": (np.log1p, "np.log1p"),
        "expm1": (np.expm1, "np.expm1"), "tanh": (np.tanh, "np.tanh"),
        "logistic": (lambda x, out: _numpy_logistic(x, out), "1/(1+np.exp(-x))"),
        "erf": (lambda x, out: erf(x, out=out) if "scipy" in erf_label else erf(x, out), erf_label),
        "sin": (np.sin, "np.sin"), "cos": (np.cos, "np.cos"), "tan": (np.tan, "np.tan"),
        "pow": (np.power, "np.power"),
    }


def _best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def throughput(kernels, name: str, dtype: str, baseline, repeats: int = 60) -> tuple[float, float]:
    """(ours, numpy) seconds per element on typical arguments, measured alternately."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.05, 5.0, SPEED_ELEMENTS).astype(dtype)
    args = (x, rng.uniform(-3, 3, SPEED_ELEMENTS).astype(dtype)) if name == "pow" else (x,)
    out = np.empty_like(x)
    ours, theirs = float("inf"), float("inf")
    for _ in range(3):
        ours = min(ours, _best_time(lambda: kernels(name, dtype, *args, out=out), repeats))
        theirs = min(theirs, _best_time(lambda: baseline(*args, out=out), repeats))
    return ours / SPEED_ELEMENTS, theirs / SPEED_ELEMENTS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=4_000_000, help="sweep points per f32 function")
    parser.add_argument("--f64-points", type=int, default=1_000_000, help="sweep points per f64 function")
    parser.add_argument("--only", default="", help="comma-separated function names")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--no-speed", action="store_true", help="skip the throughput comparison")
    parser.add_argument("--markdown", action="store_true", help="print the accuracy table as markdown")
    args = parser.parse_args(argv)

    names = [n for n in mathlib.FUNCTIONS if not args.only or n in args.only.split(",")]
    start = time.perf_counter()
    kernels = mathlib.MathKernels([(n, d) for n in names for d in DTYPES])
    print(f"compiled {len(names) * len(DTYPES)} kernels in {time.perf_counter() - start:.2f} s")
    baselines = {} if args.no_speed else numpy_baselines()

    rows, failures = [], []
    header = (f"{'function':9} {'type':4} {'max ulp':>8} {'bound':>6} {'points':>9}  "
              f"{'ours ns':>7} {'numpy ns':>8} {'ratio':>6}  worst input")
    print(header)
    for name in names:
        for dtype in DTYPES:
            points = args.points if dtype == "float32" else args.f64_points
            err, worst = mathlib.measure(kernels, name, dtype, points, args.seed)
            bound = mathlib.ACCURACY[(name, dtype)]
            type_name = "f32" if dtype == "float32" else "f64"
            if err > bound.max_ulp:
                failures.append(f"{name} {type_name}: {err:.3f} ulp > {bound.max_ulp} at {worst}")
            speed = ""
            if baselines:
                ours, theirs = throughput(kernels, name, dtype, baselines[name][0])
                speed = f"{ours * 1e9:7.3f} {theirs * 1e9:8.3f} {theirs / ours:6.2f}"
            worst_text = ", ".join(repr(float(v)) for v in worst)
            print(f"{name:9} {type_name:4} {err:8.3f} {bound.max_ulp:6.1f} {points:9d}  {speed:24}  ({worst_text})",
                  flush=True)
            rows.append((name, type_name, err, bound, points))
    if baselines:
        print("ratio = numpy time / compiled time per element (> 1: compiled is faster); numpy baselines: "
              + ", ".join(f"{n}={baselines[n][1]}" for n in names))
    if args.markdown:
        print()
        print("| function | type | max error (ulp) | documented bound | range tested | points |")
        print("|---|---|---:|---:|---|---:|")
        for name, type_name, err, bound, points in rows:
            print(f"| {name} | {type_name} | {err:.2f} | {bound.max_ulp:g} | {bound.domain} | {points:,} |")
    for failure in failures:
        print("BOUND EXCEEDED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
