"""Time the JIT-compiled FFT kernels (hlo/codegen/fft.py) against numpy.fft (pocketfft).

    python benchmarks/fft_bench.py [--repeats N] [--bits 64|128] [--vector-bits B] [--accuracy]

For each case: the median time of numpy's call and of ours (the bare ctypes call of the
compiled function, input and output preallocated), and their ratio numpy / ours (> 1: ours
is faster). Single-threaded (numpy.fft is); run it on an idle machine.
Also prints each plan's IR size (code / tables) and compile time. --accuracy instead prints,
per type and precision, the largest error (max |ours - numpy float64| / max |numpy|) over the
1-D lengths 1 .. 4096 of the tests and some 2-D and 3-D shapes.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from hlo.codegen.fft import FftPlan
from hlo.codegen.fft_jit import JitFft, host_vector_bits

# (label, fft_type, operand shape, fft_length)
CASES = [
    ("RFFT f32[4,256]", "RFFT", (4, 256), (256,)),
    ("FFT c64[64,64] 2-D", "FFT", (64, 64), (64, 64)),
    ("FFT c64[1000]", "FFT", (1000,), (1000,)),
    ("FFT c64[1024]", "FFT", (1024,), (1024,)),
    ("RFFT f32[2,3,38,38] 2-D", "RFFT", (2, 3, 38, 38), (38, 38)),
]


def numpy_call(fft_type, lengths):
    axes = tuple(range(-len(lengths), 0))
    if fft_type == "FFT":
        return lambda x: np.fft.fftn(x, axes=axes)
    if fft_type == "IFFT":
        return lambda x: np.fft.ifftn(x, axes=axes)
    if fft_type == "RFFT":
        return lambda x: np.fft.rfftn(x, s=lengths, axes=axes)
    return lambda x: np.fft.irfftn(x, s=lengths, axes=axes)


def _calls_for(fn, min_seconds: float) -> int:
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= min_seconds:
            return calls
        calls *= 2


def median_times(fns, repeats: int, min_seconds: float = 0.005) -> list[float]:
    """Per function, the median over `repeats` samples of the mean time of a run of calls lasting
    about min_seconds; the samples of the functions alternate (a fair ratio on a busy machine)."""
    counts = [_calls_for(fn, min_seconds) for fn in fns]
    samples = [[] for _ in fns]
    for _ in range(repeats):
        for fn, calls, out in zip(fns, counts, samples):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            out.append((time.perf_counter() - start) / calls)
    return [statistics.median(s) for s in samples]


def run(cases=CASES, bits: int = 64, repeats: int = 15, vector_bits: int | None = None, out=print):
    vector_bits = vector_bits or host_vector_bits()
    rows = []
    for label, fft_type, shape, lengths in cases:
        plan = FftPlan(fft_type, lengths, bits, vector_bits=vector_bits)
        jit = JitFft(plan)
        rng = np.random.default_rng(0)
        in_shape = shape[:len(shape) - len(lengths)] + plan.in_dims
        x = rng.standard_normal(in_shape)
        if plan.in_complex:
            x = x + 1j * rng.standard_normal(in_shape)
        x = np.ascontiguousarray(x, dtype=jit.in_dtype)
        batch = int(np.prod(in_shape[:len(in_shape) - len(lengths)], dtype=np.int64))
        y = np.empty(in_shape[:len(in_shape) - len(lengths)] + plan.out_dims, dtype=jit.out_dtype)
        call = jit.bound_call(x, y, batch)
        ref = numpy_call(fft_type, lengths)
        t_np, t_us = median_times([lambda: ref(x), call], repeats)
        want = ref(x.astype(np.complex128 if plan.in_complex else np.float64))
        err = float(np.max(np.abs(y - want)) / np.max(np.abs(want)))
        if bits == 128:
            label = label.replace("f32", "f64").replace("c64", "c128")
        rows.append((label, t_np, t_us, err, jit))
        out(f"{label:26s} numpy {t_np * 1e6:9.2f} us   ours {t_us * 1e6:9.2f} us   ratio {t_np / t_us:6.2f}"
            f"   err {err:.1e}   IR code {jit.code_bytes / 1024:5.1f} KiB + tables {jit.table_bytes / 1024:5.1f} KiB"
            f"   compile {jit.compile_seconds * 1e3:5.0f} ms")
    return rows


ACCURACY_LENGTHS = (1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 38, 64, 97, 100, 127, 128, 255, 256, 1000, 1024, 4096)
ACCURACY_SHAPES = tuple((n,) for n in ACCURACY_LENGTHS) + ((64, 64), (3, 1000), (16, 17), (97, 4), (16, 16, 16),
                                                        (3, 17, 38))


def accuracy(out=print):
    from hlo.codegen.fft_jit import JitModule
    for bits in (64, 128):
        for fft_type in ("FFT", "IFFT", "RFFT", "IRFFT"):
            plans = [FftPlan(fft_type, s, bits, vector_bits=host_vector_bits()) for s in ACCURACY_SHAPES]
            worst, where = 0.0, None
            for kernel in JitModule(plans).kernels:
                rng = np.random.default_rng(1)
                shape = (3,) + kernel.plan.in_dims
                x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if kernel.plan.in_complex else 0)
                x = x.astype(kernel.in_dtype)
                want = numpy_call(fft_type, kernel.plan.lengths)(x.astype(np.complex128 if kernel.plan.in_complex
                                                                          else np.float64))
                err = float(np.max(np.abs(kernel(x) - want)) / np.max(np.abs(want)))
                if err > worst:
                    worst, where = err, kernel.plan.lengths
            out(f"{fft_type:5s} c{bits}: max relative error {worst:.2e} (at lengths {where})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--bits", type=int, default=64, choices=(64, 128))
    parser.add_argument("--vector-bits", type=int, default=None)
    parser.add_argument("--accuracy", action="store_true")
    args = parser.parse_args()
    if args.accuracy:
        accuracy()
        return
    print(f"numpy {np.__version__}, complex{args.bits}, vector bits {args.vector_bits or host_vector_bits()}")
    run(bits=args.bits, repeats=args.repeats, vector_bits=args.vector_bits)


if __name__ == "__main__":
    main()
