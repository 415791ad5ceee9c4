"""How much slower the HLO interpreter is than the same computation written in numpy.

For the corpus's MLP (mlp_forward), CNN (cnn_forward) and attention
(causal_attention) modules, kept in tests/data/corpus/, this measures in one run
the median time of N evaluations by the interpreter (module parsed once and one
Evaluator reused, so plans and constant-derived values are built once, as a
compiled program would) and of N evaluations of a hand-written numpy version of
the same program, timed alternately, and prints their ratio. Both results are
checked against the corpus's expected output first.

    python benchmarks/interpreter_bench.py [-n RUNS] [--profile]

--profile also prints the interpreter's most expensive instructions per case.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "corpus"
try:
    import hlo  # noqa: F401
except ImportError:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(ROOT))

from hlo import parse_module  # noqa: E402
from hlo.interpreter import Evaluator  # noqa: E402

TARGET_RATIO = 1.3


# --------------------------------------------------------------------------- numpy references

def mlp_forward(b1, b2, w1, w2, x):
    hidden = np.maximum(x @ w1 + b1, np.float32(0))
    return hidden @ w2 + b2


def _conv2d_nhwc(x, kernel, stride, pad):
    """Cross-correlation of NHWC x with an HWIO kernel (zero padding `pad` each side)."""
    kh, kw = kernel.shape[:2]
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]  # [n, oh, ow, c, kh, kw]
    return np.einsum("nhwcij,ijco->nhwo", windows, kernel, optimize=True)


def cnn_forward(x, k1, k2, w):
    h = np.maximum(_conv2d_nhwc(x, k1, 1, 1), np.float32(0))
    n, hh, ww, c = h.shape
    h = h.reshape(n, hh // 2, 2, ww // 2, 2, c).max(axis=(2, 4))
    h = np.maximum(_conv2d_nhwc(h, k2, 2, 1), np.float32(0))
    n, hh, ww, c = h.shape
    h = h.reshape(n, hh // 2, 2, ww // 2, 2, c).sum(axis=(2, 4)) / np.float32(4)
    return h.reshape(n, -1) @ w


def causal_attention(x, wq, wk, wv, wo, heads=4):
    b, t, d = x.shape
    split = lambda y: y.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d // heads))
    mask = np.tril(np.ones((t, t), dtype=bool))
    scores = np.where(mask, scores, np.float32(-3.40282347e38))
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ wo


CASES = {"mlp_forward": mlp_forward, "cnn_forward": cnn_forward, "causal_attention": causal_attention}


# --------------------------------------------------------------------------- measuring

def median_times(first, second, runs: int) -> tuple[float, float]:
    """Median times of two functions, timed alternately so that load on the machine
    affects both alike."""
    first(), second()  # warm up (plans, static values, BLAS threads, caches)
    times_first, times_second = [], []
    for _ in range(runs):
        for fn, times in ((first, times_first), (second, times_second)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times_first), statistics.median(times_second)


def load_case(name: str):
    module = parse_module((DATA / f"{name}.hlo").read_text(), f"{name}.hlo")
    with np.load(DATA / f"{name}.inputs.npz") as f:
        args = [f[f"arg{i}"] for i in range(len(f.files))]
    with np.load(DATA / f"{name}.expected.npz") as f:
        expected = f["out0"]
    return module, args, expected


def bench_case(name: str, runs: int, profile: bool) -> tuple[float, float]:
    module, args, expected = load_case(name)
    reference = CASES[name]
    evaluator = Evaluator(module)
    np.testing.assert_allclose(evaluator.run(args), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(reference(*args), expected, rtol=1e-4, atol=1e-5)
    interp, direct = median_times(lambda: evaluator.run(args), lambda: reference(*args), runs)
    if profile:
        print_profile(name, module, args)
    return interp, direct


def print_profile(name: str, module, args, top: int = 10) -> None:
    ev = Evaluator(module, profile=True)
    for _ in range(20):
        ev.run(args)
    rows = sorted(ev.profile.items(), key=lambda kv: -kv[1][1])[:top]
    print(f"\n{name}: own time per instruction over 20 runs")
    for inst, (count, seconds) in rows:
        print(f"  {seconds / 20 * 1e6:9.1f} us  {inst.opcode:<16} %{inst.name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=200, help="timed runs per measurement")
    parser.add_argument("--profile", action="store_true", help="profile the interpreter per instruction")
    args = parser.parse_args()
    print(f"{'case':<18} {'interpreter':>12} {'numpy':>12} {'ratio':>7}   (median of {args.runs} runs)")
    worst = 0.0
    for name in CASES:
        interp, direct = bench_case(name, args.runs, args.profile)
        ratio = interp / direct
        worst = max(worst, ratio)
        print(f"{name:<18} {interp * 1e6:10.1f}us {direct * 1e6:10.1f}us {ratio:7.2f}")
    print(f"worst ratio {worst:.2f} (target <= {TARGET_RATIO})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
