"""Accuracy and throughput of the in-IR math approximations (hlo/codegen/mathlib.py).

For every function and type, JIT-compiles a loop applying it to an array (host
CPU, O3, loop vectorisation), runs it on a stratified sweep (every binade of
the tested range plus a uniform sweep of the main range, sample_inputs below)
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
import ctypes
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # numpy's baselines on one thread, like ours

import llvmlite.binding as llvm  # noqa: E402
import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
try:
    import hlo  # noqa: F401
except ImportError:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(ROOT))

from hlo.codegen import mathlib  # noqa: E402

DTYPES = ("float32", "float64")
SPEED_ELEMENTS = 1 << 16  # 256 KiB of f32: in L2, so the loop's arithmetic is what is timed


# --------------------------------------------------------------------------- measurement
# Also used by tests/codegen/test_mathlib.py: JIT kernels that apply a function to arrays,
# high-precision references, stratified input sweeps and the error in ulps.

def _target_machine(extra_features: str = ""):
    """Host target machine (host CPU and features, 512-bit vectors where available);
    extra_features (e.g. "-fma") are appended to the host feature string."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"  # let LLVM use 512-bit vectors
    if extra_features:
        features += "," + extra_features
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, jit=True)


def kernel_name(name: str, dtype) -> str:
    return f"{name}_{np.dtype(dtype).name}"


def kernel_module(functions) -> ir.Module:
    """One `void NAME_DTYPE(T* x, [T* y,] T* out, i64 n)` loop per (name, dtype) in functions,
    calling mathlib.math_function (so each loop is what the backend's fused loops look like)."""
    module = ir.Module(name="mathlib_kernels")
    i64 = ir.IntType(64)
    for name, dtype in functions:
        ty = ir.DoubleType() if np.dtype(dtype).itemsize == 8 else ir.FloatType()
        arity = 2 if name in mathlib.BINARY else 1
        ptr = ty.as_pointer()
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [i64]),
                         name=kernel_name(name, dtype))
        for arg in fn.args[:-1]:
            arg.add_attribute("noalias")
        entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
        b = ir.IRBuilder(entry)
        count = fn.args[-1]
        b.cbranch(b.icmp_signed(">", count, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        index = b.phi(i64)
        index.add_incoming(ir.Constant(i64, 0), entry)
        args = [b.load(b.gep(p, [index], inbounds=True)) for p in fn.args[:arity]]
        value = b.call(mathlib.math_function(module, name, ty), args)
        b.store(value, b.gep(fn.args[arity], [index], inbounds=True))
        following = b.add(index, ir.Constant(i64, 1))
        index.add_incoming(following, loop)
        b.cbranch(b.icmp_signed("<", following, count), loop, done)
        b.position_at_end(done)
        b.ret_void()
    return module


class MathKernels:
    """JIT-compiled (MCJIT, host CPU, O3 with loop and SLP vectorisation) kernels of
    kernel_module(functions); `optimized_ir` is the IR after optimisation.
    extra_features: appended to the host's (e.g. "-fma,-avx512f" to measure other targets)."""

    def __init__(self, functions, extra_features: str = ""):
        self.functions = [(name, np.dtype(dtype)) for name, dtype in functions]
        tm = _target_machine(extra_features)
        ref = llvm.parse_assembly(str(kernel_module(self.functions)))
        ref.triple = llvm.get_process_triple()
        ref.data_layout = str(tm.target_data)
        ref.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(ref, pb)
        self.optimized_ir = str(ref)
        self._engine = llvm.create_mcjit_compiler(ref, tm)
        self._engine.finalize_object()
        self._entry = {}
        for name, dtype in self.functions:
            c_ptr = ctypes.POINTER(ctypes.c_double if dtype.itemsize == 8 else ctypes.c_float)
            arity = 2 if name in mathlib.BINARY else 1
            prototype = ctypes.CFUNCTYPE(None, *([c_ptr] * (arity + 1)), ctypes.c_int64)
            address = self._engine.get_function_address(kernel_name(name, dtype))
            self._entry[(name, dtype)] = (prototype(address), c_ptr)

    def __call__(self, name: str, dtype, *args, out=None):
        """name(*args) elementwise on 1-D arrays of dtype (into `out` when given)."""
        dtype = np.dtype(dtype)
        arrays = [np.ascontiguousarray(a, dtype=dtype) for a in args]
        if out is None:
            out = np.empty_like(arrays[0])
        fn, c_ptr = self._entry[(name, dtype)]
        fn(*[a.ctypes.data_as(c_ptr) for a in arrays + [out]], out.size)
        return out


def _erf_reference(x, hp):
    """erf in hp (float64 or long double): 2/sqrt(pi) e^(-x^2) sum_n (2x^2)^n x / (1*3*...*(2n+1)),
    a series of positive terms (no cancellation); |x| >= 7 gives +-1."""
    a = np.minimum(np.abs(x.astype(hp)), hp(7))
    order = np.argsort(a)  # larger |x| need more terms: iterate on a shrinking suffix
    a_sorted = a[order]
    two_x2 = 2 * a_sorted * a_sorted
    term = a_sorted.copy()
    total = a_sorted.copy()
    start = 0
    for n in range(1, 400):
        term[start:] *= two_x2[start:] / (2 * n + 1)
        total[start:] += term[start:]
        converged = term[start:] <= total[start:] * hp(2.0) ** -70
        if converged.all():
            break
        start += int(np.argmin(converged))
    series = np.empty_like(total)
    series[order] = total
    two_over_sqrt_pi = hp(2) / np.sqrt(np.arccos(hp(-1)))
    erf = np.minimum(two_over_sqrt_pi * np.exp(-a * a) * series, hp(1))
    erf = np.where(np.abs(x) >= 7, hp(1), erf)
    return np.where(np.isnan(x), hp("nan"), np.copysign(erf, x.astype(hp)))


def reference(name: str, *args):
    """The function in higher precision: float64 for f32 inputs, long double for f64."""
    hp = np.float64 if args[0].dtype == np.float32 else np.longdouble
    xs = [np.asarray(a).astype(hp) for a in args]
    x = xs[0]
    with np.errstate(all="ignore"):
        if name == "logistic":
            e = np.exp(-np.abs(x))
            return np.where(x >= 0, 1 / (1 + e), e / (1 + e))
        if name == "erf":
            return _erf_reference(x, hp)
        if name == "pow":
            return np.power(x, xs[1])
        return {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh,
                "sin": np.sin, "cos": np.cos, "tan": np.tan}[name](x)


def ulp_errors(got, ref, dtype):
    """|got - ref| in ulps of dtype at ref (ulp of the exact value's binade; subnormal ulp
    below). Infinities count as 2^(emax+1); NaN matching NaN is 0, NaN vs number is inf."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    hp = ref.dtype
    got = got.astype(hp)
    if not (np.isfinite(got).all() and np.isfinite(ref).all()):
        big = np.ldexp(hp.type(1), info.maxexp)
        ref, got = np.clip(ref, -big, big), np.clip(got, -big, big)
    _, e = np.frexp(ref)
    # ref = m 2^e with m in [1/2, 1): ulp = 2^(e - nmant - 1), but never below the subnormal
    # spacing 2^(minexp - nmant) (e = minexp + 1); frexp(0) has e = 0
    e = np.maximum(np.where(ref == 0, info.minexp + 1, e), info.minexp + 1)
    scale = info.nmant + 1 - e  # 2^scale = 1 / ulp
    with np.errstate(invalid="ignore"):
        err = np.ldexp(np.abs(got - ref), scale).astype(np.float64)
    got_nan, ref_nan = np.isnan(got), np.isnan(ref)
    err[got_nan & ref_nan] = 0
    err[got_nan ^ ref_nan] = np.inf
    return err


# Sweep domains: (lo, hi) per function and width; 'main' intervals also get linear samples.
_DOMAINS = {
    ("exp", 32): (-104.0, 89.0), ("exp", 64): (-746.0, 710.0),
    ("expm1", 32): (-30.0, 89.0), ("expm1", 64): (-40.0, 710.0),
    ("log", 32): (0.0, float("inf")), ("log", 64): (0.0, float("inf")),
    ("log1p", 32): (-1.0, float("inf")), ("log1p", 64): (-1.0, float("inf")),
    ("tanh", 32): (-12.0, 12.0), ("tanh", 64): (-25.0, 25.0),
    ("logistic", 32): (-110.0, 30.0), ("logistic", 64): (-750.0, 50.0),
    ("erf", 32): (-5.0, 5.0), ("erf", 64): (-7.0, 7.0),
    ("sin", 32): (-2.0 ** 48, 2.0 ** 48), ("sin", 64): (-2.0 ** 48, 2.0 ** 48),
    ("cos", 32): (-2.0 ** 48, 2.0 ** 48), ("cos", 64): (-2.0 ** 48, 2.0 ** 48),
    ("tan", 32): (-2.0 ** 48, 2.0 ** 48), ("tan", 64): (-2.0 ** 48, 2.0 ** 48),
}
# Linear sweeps where most uses are (log-stratified samples cover the rest of each binade).
_MAIN = {"exp": (-20.0, 20.0), "expm1": (-2.0, 2.0), "log": (0.0, 10.0), "log1p": (-1.0, 4.0),
         "tanh": (-5.0, 5.0), "logistic": (-20.0, 20.0), "erf": (-4.0, 4.0), "sin": (-10.0, 10.0),
         "cos": (-10.0, 10.0), "tan": (-10.0, 10.0)}


def _stratified(dtype, n, lo, hi, rng):
    """n values in [lo, hi] with |x| spread evenly over the binades (subnormals included)
    and uniform bits within each binade; signs as the interval allows."""
    info = np.finfo(dtype)
    ity = np.uint32 if dtype.itemsize == 4 else np.uint64
    mant = info.nmant
    top = min(max(abs(lo), abs(hi)), float(info.max))
    top_field = int(np.frexp(top)[1]) - info.minexp + 1
    fields = rng.integers(0, max(top_field, 1) + 1, size=n).astype(ity)
    bits = (fields << ity(mant)) | (rng.integers(0, 1 << mant, size=n, dtype=np.uint64).astype(ity))
    x = bits.view(dtype).copy()
    if lo < 0 < hi:
        x = np.where(rng.integers(0, 2, size=n) == 1, -x, x)
    elif hi <= 0:
        x = -x
    x = x[(x >= lo) & (x <= hi) & np.isfinite(x)]
    return x


def sample_inputs(name: str, dtype, n: int, seed: int = 0):
    """Inputs for the accuracy sweep of `name`: tuple of arrays of about n values each."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    bits = dtype.itemsize * 8
    if name == "pow":
        return _pow_inputs(dtype, n, rng)
    lo, hi = _DOMAINS[(name, bits)]
    parts = [_stratified(dtype, n // 2 + n // 8, lo, hi, rng)]
    mlo, mhi = _MAIN[name]
    parts.append(rng.uniform(max(lo, mlo), min(hi, mhi), size=n - n // 2).astype(dtype))
    x = np.concatenate(parts)[:n]
    return (x[x > -1] if name == "log1p" else x,)


def _pow_inputs(dtype, n, rng):
    """x log-stratified over all positive finite values, y such that y*log2(x) covers the
    whole result range (underflow to overflow); a quarter with negative x and integer y,
    a quarter with y uniform in [-8, 8]."""
    info = np.finfo(dtype)
    span = (info.minexp - info.nmant - 8, info.maxexp + 4)
    x = np.abs(_stratified(dtype, 2 * n, 0.0, float(info.max), rng))[:n]
    x = x[x > 0]
    m = x.size
    log2x = np.log2(x.astype(np.float64))
    target = rng.uniform(*span, size=m)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(log2x != 0, target / log2x, rng.uniform(-8, 8, size=m)).astype(dtype)
    quarter = m // 4
    y[:quarter] = rng.uniform(-8, 8, size=quarter).astype(dtype)
    small = rng.uniform(0.25, 4, size=quarter).astype(dtype)
    x[quarter:2 * quarter] = -small
    y[quarter:2 * quarter] = rng.integers(-40, 40, size=quarter).astype(dtype)
    return x.astype(dtype), y.astype(dtype)


def measure(kernels: MathKernels, name: str, dtype, n: int, seed: int = 0):
    """(max ulp error, arguments of the worst case) of kernels' `name` over sample_inputs."""
    args = sample_inputs(name, dtype, n, seed)
    err = ulp_errors(kernels(name, dtype, *args), reference(name, *args), dtype)
    worst = int(np.argmax(err))
    return float(err[worst]), tuple(a[worst] for a in args)


# --------------------------------------------------------------------------- accuracy and speed report

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
    kernels = MathKernels([(n, d) for n in names for d in DTYPES])
    print(f"compiled {len(names) * len(DTYPES)} kernels in {time.perf_counter() - start:.2f} s")
    baselines = {} if args.no_speed else numpy_baselines()

    rows, failures = [], []
    header = (f"{'function':9} {'type':4} {'max ulp':>8} {'bound':>6} {'points':>9}  "
              f"{'ours ns':>7} {'numpy ns':>8} {'ratio':>6}  worst input")
    print(header)
    for name in names:
        for dtype in DTYPES:
            points = args.points if dtype == "float32" else args.f64_points
            err, worst = measure(kernels, name, dtype, points, args.seed)
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
