"""The FFT code generator (hlo/codegen/fft.py): every plan JIT-compiled for the host (MCJIT,
O3) and compared with numpy.fft in float64 (complex128) on the same rounded input.

Error measure: max |ours - numpy| / max |numpy| per call; bounds 1e-5 (c64) and 1e-13 (c128).
Plans of one type and precision are compiled together into one module (as a backend module
with several fft instructions would be), which also checks that plans share kernels and tables.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llvmlite import ir

from hlo.codegen.fft import FftPlan, radices, uses_bluestein
from hlo.codegen.fft_jit import JitFft, JitModule, host_vector_bits

TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
BITS = (64, 128)
TOL = {64: 1e-5, 128: 1e-13}
LENGTHS = (1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 38, 64, 97, 100, 127, 128, 255, 256, 1000, 1024, 4096,
           # more plan shapes: two generic primes, generic then codelets, Bluestein of a half length
           6, 9, 21, 77, 147, 194, 289, 360, 1001, 2048)
SHAPES_2D = ((1, 1), (2, 3), (4, 4), (5, 7), (8, 16), (16, 17), (3, 38), (31, 8), (64, 64), (97, 4),
             (100, 6), (2, 127), (1, 128), (7, 255), (1024, 2), (2, 1), (3, 1000))
SHAPES_3D = ((1, 1, 1), (2, 3, 4), (4, 8, 16), (5, 7, 3), (3, 17, 38), (16, 16, 16), (2, 97, 5),
             (8, 1, 9), (1, 5, 1), (3, 4, 100))


def reference(fft_type: str, x: np.ndarray, lengths) -> np.ndarray:
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    x = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if fft_type == "FFT":
        return np.fft.fftn(x, axes=axes)
    if fft_type == "IFFT":
        return np.fft.ifftn(x, axes=axes)
    if fft_type == "RFFT":
        return np.fft.rfftn(x, s=lengths, axes=axes)
    return np.fft.irfftn(x, s=lengths, axes=axes)


def random_input(kernel, batch, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    shape = (batch,) + tuple(kernel.plan.in_dims)
    x = rng.standard_normal(shape)
    if kernel.plan.in_complex:
        x = x + 1j * rng.standard_normal(shape)
    return (x * scale).astype(kernel.in_dtype)


def relative_error(kernel, x) -> float:
    y = kernel(x)
    want = reference(kernel.plan.fft_type, x, kernel.plan.lengths)
    assert y.shape == want.shape and y.dtype == kernel.out_dtype
    if want.size == 0:
        return 0.0
    top = np.max(np.abs(want))
    return float(np.max(np.abs(y - want)) / top) if top else float(np.max(np.abs(y)))


def check(kernel, batches=(0, 1, 3)):
    bits = kernel.plan.complex_bits
    for batch in batches:
        err = relative_error(kernel, random_input(kernel, batch, seed=batch))
        assert err < TOL[bits], f"{kernel.plan.fft_type} {kernel.plan.lengths} c{bits} batch {batch}: {err:.3g}"


def _modules(shapes):
    cache = {}

    def get(fft_type, bits):
        if (fft_type, bits) not in cache:
            plans = [FftPlan(fft_type, s, bits, vector_bits=host_vector_bits()) for s in shapes]
            cache[fft_type, bits] = dict(zip(shapes, JitModule(plans).kernels))
        return cache[fft_type, bits]
    return get


@pytest.fixture(scope="module")
def one_d():
    return _modules(tuple((n,) for n in LENGTHS))


@pytest.fixture(scope="module")
def two_d():
    return _modules(SHAPES_2D)


@pytest.fixture(scope="module")
def three_d():
    return _modules(SHAPES_3D)


# --------------------------------------------------------------------------- accuracy

@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("fft_type", TYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_1d(one_d, fft_type, n, bits):
    kernel = one_d(fft_type, bits)[(n,)]
    # and a batch spanning several chunks, the last one partial
    check(kernel, (0, 1, 3, 2 * kernel.plan.chunk + 1))


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("fft_type", TYPES)
@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
def test_2d(two_d, fft_type, shape, bits):
    check(two_d(fft_type, bits)[shape], (0, 1, 2))


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("fft_type", TYPES)
@pytest.mark.parametrize("shape", SHAPES_3D, ids=str)
def test_3d(three_d, fft_type, shape, bits):
    check(three_d(fft_type, bits)[shape], (0, 1, 2))


@pytest.mark.parametrize("vector_bits", (128, 256, 512))
@pytest.mark.parametrize("bits", BITS)
def test_vector_widths(vector_bits, bits):
    """The explicit vector passes of every width (the target may be SSE, AVX2 or AVX-512)."""
    shapes = [(16,), (64,), (100,), (128,), (1000,), (4, 48), (24, 20)]
    plans = [FftPlan(t, s, bits, vector_bits=vector_bits) for t in TYPES for s in shapes]
    for kernel in JitModule(plans).kernels:
        check(kernel, (1, 5))


@pytest.mark.parametrize("features", ("-avx512f", "-avx512f,-avx2,-avx,-fma"))
def test_older_targets(features):
    """Code for AVX2 and SSE machines (compiled without the host's wider vector units)."""
    plans = [FftPlan(t, s, bits, vector_bits=256) for t in TYPES for s in ((128,), (100, 6), (97,))
             for bits in BITS]
    for kernel in JitModule(plans, extra_features=features).kernels:
        check(kernel, (3,))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fft_type=st.sampled_from(TYPES), bits=st.sampled_from(BITS),
       lengths=st.lists(st.integers(1, 300), min_size=1, max_size=3).filter(lambda L: np.prod(L) <= 20000),
       batch=st.integers(0, 5))
def test_random_lengths(fft_type, bits, lengths, batch):
    kernel = JitFft(FftPlan(fft_type, tuple(lengths), bits, vector_bits=host_vector_bits()))
    check(kernel, (batch,))


@pytest.mark.parametrize("bits", BITS)
def test_documented_examples(bits):
    rfft = JitFft(FftPlan("RFFT", (4,), bits))
    np.testing.assert_allclose(rfft(np.array([1, 0, 0, 0], dtype=rfft.in_dtype)), [1, 1, 1])
    fft = JitFft(FftPlan("FFT", (2,), bits))
    np.testing.assert_allclose(fft(np.array([1, 1], dtype=fft.in_dtype)), [2, 0])


@pytest.mark.parametrize("n", (2, 8, 9, 100))
def test_irfft_ignores_imaginary_dc_and_nyquist(n):
    kernel = JitFft(FftPlan("IRFFT", (n,), 128))
    x = random_input(kernel, 2)
    y = kernel(x)
    x[:, 0] = x[:, 0].real + 5j
    if n % 2 == 0:
        x[:, -1] = x[:, -1].real - 3j
    np.testing.assert_allclose(kernel(x), y, rtol=0, atol=1e-13)


# --------------------------------------------------------------------------- special values

@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("fft_type", TYPES)
def test_special_values(fft_type, bits):
    shapes = [(8,), (17,), (97,), (100,), (4, 6)]
    kernels = JitModule([FftPlan(fft_type, s, bits) for s in shapes]).kernels
    big = 1e15 if bits == 64 else 1e150
    for kernel in kernels:
        for scale in (big, 1e-30, 0.0):          # finite in, finite out
            y = kernel(random_input(kernel, 2, scale=scale))
            assert np.all(np.isfinite(y)), (kernel.plan.lengths, scale)
        for value in (np.inf, -np.inf, np.nan):  # non-finite values propagate without a crash
            x = random_input(kernel, 2)
            x.flat[3] = value
            y = kernel(x)
            assert not np.all(np.isfinite(y[0]))
            assert np.all(np.isfinite(y[1]))     # the other batch element is untouched


# --------------------------------------------------------------------------- plans and IR

def test_radices_and_algorithm_choice():
    assert radices(1024) == [4, 4, 8, 8]
    assert radices(128) == [4, 4, 8]
    assert radices(1000) == [8, 5, 5, 5]
    assert radices(38) == [2, 19]
    assert not uses_bluestein(31) and uses_bluestein(97) and uses_bluestein(2 * 53)
    assert not uses_bluestein(4096)


def test_zero_batch_and_zero_lengths():
    assert FftPlan("FFT", (64,), 64).scratch_bytes(0) == 0
    for fft_type in TYPES:
        kernel = JitFft(FftPlan(fft_type, (0,), 64))
        assert kernel(np.zeros((3,) + kernel.plan.in_dims, kernel.in_dtype)).shape == (3,) + kernel.plan.out_dims


def test_writes_stay_in_output_and_scratch():
    """The kernel writes nothing past the output or past scratch_bytes(batch) bytes of scratch."""
    for plan in (FftPlan("RFFT", (38, 38), 64), FftPlan("IFFT", (97,), 128), FftPlan("IRFFT", (3, 100), 64)):
        kernel = JitFft(plan)
        x = random_input(kernel, 3)
        size = plan.scratch_bytes(3)
        assert size % 64 == 0
        scratch = np.full(size + 256, 0xAB, np.uint8)
        base = scratch.ctypes.data + (-scratch.ctypes.data) % 64
        count = 3 * int(np.prod(plan.out_dims))
        out = np.full(count + 64, 7, kernel.out_dtype)
        kernel.function(x.ctypes.data, out.ctypes.data, 3, base)
        assert np.all(out[count:] == 7)
        assert np.all(scratch[base - scratch.ctypes.data + size:] == 0xAB)
        want = reference(plan.fft_type, x, plan.lengths).ravel()
        assert np.max(np.abs(out[:count] - want)) < 1e-5 * np.max(np.abs(want))


def test_plans_share_kernels_and_ir_stays_small():
    """Kernel code does not grow with n (loops with run-time sizes); only the tables do."""
    sizes = {}
    for n in (256, 1024, 4096, 65536):
        module = ir.Module()
        FftPlan("FFT", (n,), 64, vector_bits=256).emit(module, "f")
        code = sum(len(str(f)) for f in module.functions)
        sizes[n] = code
    assert max(sizes.values()) < 1.5 * min(sizes.values()), sizes
    module = ir.Module()
    FftPlan("FFT", (1024,), 64).emit(module, "a")
    one = sum(len(str(f)) for f in module.functions)
    FftPlan("IFFT", (1024,), 64).emit(module, "b")
    FftPlan("FFT", (1024,), 64).emit(module, "c")
    names = [g.name for g in module.global_values]
    assert len(names) == len(set(names))
    assert sum(len(str(f)) for f in module.functions) < 2 * one   # the IFFT reuses the FFT's passes
