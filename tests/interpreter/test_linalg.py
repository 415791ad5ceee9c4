"""Tests for hlo.interpreter.linalg (cholesky, triangular-solve, fft, batch norm); the LAPACK
targets themselves are tested in tests/lapack."""
import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from hlo.interpreter.linalg import (
    batch_norm_grad, batch_norm_inference, batch_norm_training, cholesky, fft, triangular_solve)
from hlo.runtime.ffi_attributes import parse_mlir_attr_dict
from lapack_cases import run_target

RNG = np.random.default_rng(1234)
SQRT2 = math.sqrt(2.0)


def random_matrix(shape, dtype, rng=RNG):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def random_spd(batch, n, dtype, rng=RNG):
    m = random_matrix(batch + (n, n), dtype, rng)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


# ------------------------------------------------------------------------------------------
# The corpus case cholesky_lapack_customcall (JAX: cholesky + cho_solve on CPU), inline.
# ------------------------------------------------------------------------------------------

_CORPUS_A = np.array([
    [
        [6.959791, 0.5069356, -0.47874716, 2.3812442, 3.3102915],
        [0.5069356, 7.2927036, 1.5351522, -0.7393318, 2.049854],
        [-0.47874716, 1.5351522, 12.232702, 0.43320155, -1.3779205],
        [2.3812442, -0.7393318, 0.43320155, 11.065269, 2.8975441],
        [3.3102915, 2.049854, -1.3779205, 2.8975441, 11.665741],
    ],
    [
        [7.7630405, 1.151484, 3.054062, -1.0890931, 0.79023826],
        [1.151484, 10.455629, 0.9732245, -1.8083807, -1.4761693],
        [3.054062, 0.9732245, 8.57299, -1.5209806, 1.067432],
        [-1.0890931, -1.8083807, -1.5209806, 8.091173, 1.8548206],
        [0.79023826, -1.4761693, 1.067432, 1.8548206, 8.692974],
    ],
], dtype=np.float32)
_CORPUS_B = np.array([
    [
        [0.3896749, -0.49881268],
        [-1.3061645, 0.2959533],
        [0.36131543, 0.48263752],
        [0.0215742, 0.1582851],
        [0.37391067, 0.6809311],
    ],
    [
        [0.43755284, -0.9010175],
        [-0.056768432, 2.310984],
        [-0.27397516, 0.23842065],
        [1.1170855, -1.2765585],
        [0.28358224, -0.40459138],
    ],
], dtype=np.float32)
_CORPUS_FACTOR = np.array([
    [
        [2.6381416, 0.0, 0.0, 0.0, 0.0],
        [0.19215631, 2.6936555, 0.0, 0.0, 0.0],
        [-0.18147136, 0.58285964, 3.4438417, 0.0, 0.0],
        [0.9026218, -0.33886155, 0.23070464, 3.175294, 0.0],
        [1.2547816, 0.6714815, -0.4476376, 0.6600215, 3.0007281],
    ],
    [
        [2.7862234, 0.0, 0.0, 0.0, 0.0],
        [0.41327772, 3.2069972, 0.0, 0.0, 0.0],
        [1.0961297, 0.16221361, 2.7101986, 0.0, 0.0],
        [-0.39088506, -0.5135136, -0.372379, 2.745181, 0.0],
        [0.28362346, -0.4968463, 0.30888483, 0.6650088, 2.7978616],
    ],
], dtype=np.float32)
_CORPUS_SOLUTION = np.array([
    [
        [0.057736363, -0.118147194],
        [-0.223843, 0.016074806],
        [0.07004891, 0.04242761],
        [-0.04785551, 0.01551569],
        [0.075161725, 0.09022884],
    ],
    [
        [0.090440586, -0.18692824],
        [0.013594521, 0.2190298],
        [-0.03994809, 0.0420683],
        [0.14564118, -0.1331526],
        [0.0005388345, 0.03088939],
    ],
], dtype=np.float32)

def test_corpus_cholesky_then_cho_solve_matches_xla():
    # cholesky.1: symmetrise, potrf(uplo=L), NaN out failures, zero the upper triangle.
    sym = (_CORPUS_A + np.swapaxes(_CORPUS_A, 1, 2)) / np.float32(2)
    factor, info = run_target("lapack_spotrf_ffi", [sym], [((2, 5, 5), np.float32), ((2,), np.int32)],
                              "{uplo = 76 : ui8}")
    assert info.dtype == np.int32 and info.tolist() == [0, 0]
    chol = np.where((info == 0)[:, None, None], factor, np.nan)
    chol = np.where(np.tri(5, dtype=bool), chol, np.float32(0))
    np.testing.assert_allclose(chol, _CORPUS_FACTOR, rtol=1e-4, atol=1e-5)
    # _cho_solve.2: L·y = b, then Lᵀ·x = y.
    (y,) = run_target("lapack_strsm_ffi", [chol, _CORPUS_B], [((2, 5, 2), np.float32)],
                      "{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}")
    (x,) = run_target("lapack_strsm_ffi", [chol, y], [((2, 5, 2), np.float32)],
                      "{diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}")
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, _CORPUS_SOLUTION, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------
# cholesky
# ------------------------------------------------------------------------------------------

def test_cholesky_spec_example_lower_and_upper():
    a = np.array([[4, 2], [2, 3]], np.float32)
    np.testing.assert_allclose(cholesky(a, True), [[2, 0], [1, SQRT2]], rtol=1e-6)
    np.testing.assert_allclose(cholesky(a, False), [[2, 1], [0, SQRT2]], rtol=1e-6)
    assert cholesky(a, True).dtype == np.float32


def test_cholesky_reads_only_selected_triangle():
    a = np.array([[4, np.nan], [2, 3]], np.float64)
    np.testing.assert_allclose(cholesky(a, True), [[2, 0], [1, SQRT2]])
    b = np.array([[4, 2], [-7, 3]], np.float64)
    np.testing.assert_allclose(cholesky(b, False), [[2, 1], [0, SQRT2]])


def test_cholesky_complex_hand_computed():
    # H = [[4, 2-2j], [2+2j, 6]] = L·Lᴴ with L = [[2, 0], [1+1j, 2]]; diagonal imag ignored.
    lower_input = np.array([[4 + 5j, 99], [2 + 2j, 6]], np.complex64)
    np.testing.assert_allclose(cholesky(lower_input, True), [[2, 0], [1 + 1j, 2]], rtol=1e-6)
    upper_input = np.array([[4, 2 - 2j], [99j, 6 - 1j]], np.complex128)
    np.testing.assert_allclose(cholesky(upper_input, False), [[2, 1 - 1j], [0, 2]], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_batched_reconstructs(dtype, lower):
    a = random_spd((2, 3), 4, dtype)
    f = cholesky(a, lower)
    assert f.shape == a.shape and f.dtype == dtype
    other = np.triu(f, 1) if lower else np.tril(f, -1)
    assert np.all(other == 0)
    rebuilt = f @ ct(f) if lower else ct(f) @ f
    np.testing.assert_allclose(rebuilt, a, rtol=tol(dtype), atol=tol(dtype) * 10)


def test_cholesky_failure_is_nan_for_that_batch_element_only():
    a = np.stack([np.array([[4, 2], [2, 3.]]), np.array([[1, 2], [2, 1.]])]).astype(np.float32)
    f = cholesky(a, True)
    np.testing.assert_allclose(f[0], [[2, 0], [1, SQRT2]], rtol=1e-6)
    assert np.isnan(f[1]).all()


def test_cholesky_low_precision_and_empty():
    a = np.array([[4, 2], [2, 3]], ml_dtypes.bfloat16)
    f = cholesky(a, True)
    assert f.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(f.astype(np.float32), [[2, 0], [1, SQRT2]], rtol=1e-2)
    assert cholesky(np.zeros((3, 0, 0), np.float32), True).shape == (3, 0, 0)
    assert cholesky(np.zeros((0, 2, 2), np.float32), False).shape == (0, 2, 2)


def test_cholesky_rejects_bad_operands():
    with pytest.raises(ValueError):
        cholesky(np.ones((2, 3), np.float32), True)
    with pytest.raises(ValueError):
        cholesky(np.ones((2, 2), np.int32), True)
    with pytest.raises(ValueError):
        cholesky(np.ones((2,), np.float32), True)


# ------------------------------------------------------------------------------------------
# triangular_solve
# ------------------------------------------------------------------------------------------

def test_triangular_solve_spec_example():
    a = np.array([[2, 0], [1, 1]], np.float32)
    b = np.array([[2], [3]], np.float32)
    x = triangular_solve(a, b, True, True, False, "NO_TRANSPOSE")
    np.testing.assert_allclose(x, [[1], [2]])
    assert x.dtype == np.float32


def test_triangular_solve_hand_computed_transpose_and_right_side():
    a = np.array([[2, 0], [1, 1]], np.float64)
    # aᵀ·x = [4, 3]ᵀ: aᵀ = [[2, 1], [0, 1]] -> x2 = 3, x1 = 0.5
    np.testing.assert_allclose(triangular_solve(a, np.array([[4.], [3.]]), True, True, False,
                                                "TRANSPOSE"), [[0.5], [3]])
    # x·a = [4, 3]: [2·x1 + x2, x2] -> x2 = 3, x1 = 0.5
    np.testing.assert_allclose(triangular_solve(a, np.array([[4., 3.]]), False, True, False,
                                                "NO_TRANSPOSE"), [[0.5, 3]])
    # unit diagonal ignores the stored 2: [[1, 0], [1, 1]]·x = [2, 3] -> x = [2, 1]
    np.testing.assert_allclose(triangular_solve(a, np.array([[2.], [3.]]), True, True, True,
                                                "NO_TRANSPOSE"), [[2], [1]])


def _op(t, transpose_a):
    if transpose_a == "TRANSPOSE":
        return np.swapaxes(t, -1, -2)
    if transpose_a == "ADJOINT":
        return ct(t)
    return t


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("left_side,lower,unit_diagonal,transpose_a", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve_all_option_combinations(dtype, left_side, lower, unit_diagonal,
                                                  transpose_a):
    m, k = 4, 3
    rng = np.random.default_rng(7)
    clean = random_matrix((2, m, m), dtype, rng)
    clean = np.tril(clean) if lower else np.triu(clean)
    idx = np.arange(m)
    clean[..., idx, idx] = 1 if unit_diagonal else clean[..., idx, idx] + 4
    # Garbage in the unused triangle (and on the diagonal when unit) must never be read.
    garbage_mask = ~(np.tri(m, dtype=bool) if lower else np.tri(m, dtype=bool).T)
    if unit_diagonal:
        garbage_mask |= np.eye(m, dtype=bool)
    a = np.where(garbage_mask, np.array(np.nan, dtype), clean).astype(dtype)
    b = random_matrix((2, m, k) if left_side else (2, k, m), dtype, rng)
    x = triangular_solve(a, b, left_side, lower, unit_diagonal, transpose_a)
    assert x.shape == b.shape and x.dtype == dtype
    op = _op(clean, transpose_a)
    rebuilt = op @ x if left_side else x @ op
    np.testing.assert_allclose(rebuilt, b, rtol=tol(dtype), atol=tol(dtype))
    expected = np.linalg.solve(op, b) if left_side else \
        np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(x, expected, rtol=tol(dtype) * 10, atol=tol(dtype))


def test_triangular_solve_singular_gives_inf_or_nan_without_error():
    a = np.array([[0, 0], [1, 1]], np.float32)
    x = triangular_solve(a, np.array([[1], [1]], np.float32), True, True, False, "NO_TRANSPOSE")
    assert not np.isfinite(x).all()


def test_triangular_solve_low_precision_and_errors():
    a = np.array([[2, 0], [1, 1]], np.float16)
    b = np.array([[2], [3]], np.float16)
    x = triangular_solve(a, b, True, True, False, "NO_TRANSPOSE")
    assert x.dtype == np.float16
    np.testing.assert_allclose(x.astype(np.float32), [[1], [2]])
    with pytest.raises(ValueError):
        triangular_solve(a, b, True, True, False, "CONJUGATE")
    with pytest.raises(ValueError):
        triangular_solve(a, b, False, True, False, "NO_TRANSPOSE")  # b is [2,1]: K=2 != 1


# ------------------------------------------------------------------------------------------
# fft
# ------------------------------------------------------------------------------------------

def test_fft_hand_computed():
    out = fft(np.array([1, 0, 0, 0], np.float32), "RFFT", (4,))
    assert out.dtype == np.complex64 and out.shape == (3,)
    np.testing.assert_allclose(out, [1, 1, 1])
    np.testing.assert_allclose(fft(np.array([1, 1], np.complex64), "FFT", (2,)), [2, 0])
    np.testing.assert_allclose(fft(np.array([2, 0], np.complex64), "IFFT", (2,)), [1, 1])
    back = fft(np.array([1, 1, 1], np.complex64), "IRFFT", (4,))
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, [1, 0, 0, 0], atol=1e-7)
    # IRFFT ignores the imaginary part of the DC (and Nyquist) bins.
    np.testing.assert_allclose(fft(np.array([1 + 5j, 0, 0], np.complex128), "IRFFT", (4,)),
                               [0.25] * 4)
    # Odd length: RFFT of 5 points keeps 3 bins; IRFFT(…, 5) gives 5 points back.
    x = np.arange(5, dtype=np.float64)
    spectrum = fft(x, "RFFT", (5,))
    assert spectrum.shape == (3,) and spectrum.dtype == np.complex128
    np.testing.assert_allclose(spectrum[0], 10)
    np.testing.assert_allclose(fft(spectrum, "IRFFT", (5,)), x, atol=1e-12)


@pytest.mark.parametrize("lengths", [(8,), (4, 6), (2, 3, 5)])
def test_fft_multidimensional_matches_numpy(lengths):
    lead = (2,)
    z = random_matrix(lead + lengths, np.complex128)
    r = RNG.standard_normal(lead + lengths)
    axes = tuple(range(1, 1 + len(lengths)))
    np.testing.assert_allclose(fft(z, "FFT", lengths), np.fft.fftn(z, axes=axes), atol=1e-12)
    np.testing.assert_allclose(fft(z, "IFFT", lengths), np.fft.ifftn(z, axes=axes), atol=1e-12)
    spec = np.fft.rfftn(r, axes=axes)
    got = fft(r, "RFFT", lengths)
    assert got.shape == lead + lengths[:-1] + (lengths[-1] // 2 + 1,)
    np.testing.assert_allclose(got, spec, atol=1e-12)
    np.testing.assert_allclose(fft(spec, "IRFFT", lengths), r, atol=1e-12)


def test_fft_zero_sizes_and_errors():
    assert fft(np.zeros((3, 0), np.float32), "RFFT", (0,)).shape == (3, 0)
    assert fft(np.zeros((0, 4), np.complex64), "FFT", (4,)).shape == (0, 4)
    assert fft(np.zeros((0, 3), np.complex64), "IRFFT", (4,)).shape == (0, 4)
    with pytest.raises(ValueError):
        fft(np.zeros(4, np.float32), "FFT", (4,))  # FFT needs complex input
    with pytest.raises(ValueError):
        fft(np.zeros(4, np.complex64), "RFFT", (4,))  # RFFT needs real input
    with pytest.raises(ValueError):
        fft(np.zeros(4, np.complex64), "IRFFT", (4,))  # needs 3 bins
    with pytest.raises(ValueError):
        fft(np.zeros(4, np.complex64), "DFT", (4,))
    with pytest.raises(ValueError):
        fft(np.zeros((2, 2, 2, 2), np.complex64), "FFT", (2, 2, 2, 2))


_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
_floats = st.floats(-100, 100, allow_nan=False, width=32)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_ifft_of_fft_is_identity(data):
    shape = data.draw(_shapes)
    rank_l = data.draw(st.integers(1, len(shape)))
    x = data.draw(hnp.arrays(np.complex64, shape, elements=st.complex_numbers(
        max_magnitude=100, allow_nan=False, allow_infinity=False, width=64)))
    lengths = shape[len(shape) - rank_l:]
    np.testing.assert_allclose(fft(fft(x, "FFT", lengths), "IFFT", lengths), x, atol=1e-3)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_irfft_of_rfft_is_identity(data):
    shape = data.draw(_shapes)
    rank_l = data.draw(st.integers(1, len(shape)))
    x = data.draw(hnp.arrays(np.float32, shape, elements=_floats))
    lengths = shape[len(shape) - rank_l:]
    np.testing.assert_allclose(fft(fft(x, "RFFT", lengths), "IRFFT", lengths), x, atol=1e-3)


# ------------------------------------------------------------------------------------------
# batch norm
# ------------------------------------------------------------------------------------------

SPEC_X = np.array([[[[1, 2]], [[3, 4]]], [[[5, 6]], [[7, 8]]]], np.float32)  # f32[2,2,1,2]


def test_batch_norm_training_spec_example():
    scale, offset = np.array([2, 3], np.float32), np.array([1, 2], np.float32)
    y, mean, var = batch_norm_training(SPEC_X, scale, offset, 0.001, 3)
    np.testing.assert_allclose(mean, [4, 5])
    np.testing.assert_allclose(var, [5, 5])
    assert y.shape == SPEC_X.shape and y.dtype == mean.dtype == var.dtype == np.float32
    # feature 0, value 1: 2·(1-4)/sqrt(5.001) + 1
    np.testing.assert_allclose(y[0, 0, 0, 0], 2 * (1 - 4) / math.sqrt(5.001) + 1, rtol=1e-6)
    np.testing.assert_allclose(y[1, 1, 0, 1], 3 * (8 - 5) / math.sqrt(5.001) + 2, rtol=1e-6)


def test_batch_norm_inference_against_formula():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    s, o, m, v = (RNG.standard_normal(4).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    y = batch_norm_inference(x, s, o, m, v, 0.01, 1)
    ref = s[:, None] * (x - m[:, None]) / np.sqrt(v[:, None] + 0.01) + o[:, None]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def _bn_loss(x, scale, offset, dy, eps, fi):
    return np.sum(dy * batch_norm_training(x, scale, offset, eps, fi)[0])


def test_batch_norm_grad_matches_finite_differences_of_training():
    fi, eps = 0, 0.01
    x = RNG.standard_normal((3, 2, 4))
    scale, offset = np.array([1.5, -0.5, 2.0]), np.array([0.1, 0.2, 0.3])
    dy = RNG.standard_normal(x.shape)
    _, mean, var = batch_norm_training(x, scale, offset, eps, fi)
    gx, gs, go = batch_norm_grad(x, scale, mean, var, dy, eps, fi)
    h = 1e-6
    numeric = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        numeric[idx] = (_bn_loss(x + e, scale, offset, dy, eps, fi)
                        - _bn_loss(x - e, scale, offset, dy, eps, fi)) / (2 * h)
    np.testing.assert_allclose(gx, numeric, rtol=1e-5, atol=1e-6)
    xhat = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + eps)
    np.testing.assert_allclose(gs, np.sum(dy * xhat, axis=(1, 2)), rtol=1e-10)
    np.testing.assert_allclose(go, np.sum(dy, axis=(1, 2)), rtol=1e-10)


def test_batch_norm_low_precision_and_errors():
    x = SPEC_X.astype(ml_dtypes.bfloat16)
    y, mean, var = batch_norm_training(x, np.ones(2, x.dtype), np.zeros(2, x.dtype), 0.001, 3)
    assert y.dtype == mean.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(mean.astype(np.float32), [4, 5])
    with pytest.raises(ValueError):
        batch_norm_training(SPEC_X, np.ones(2, np.float32), np.zeros(2, np.float32), 0.001, 4)
    with pytest.raises(ValueError):
        batch_norm_training(SPEC_X, np.ones(3, np.float32), np.zeros(3, np.float32), 0.001, 3)
    with pytest.raises(ValueError):
        batch_norm_inference(SPEC_X.astype(np.int32), *(np.ones(2, np.int32),) * 4, 0.1, 3)


# ------------------------------------------------------------------------------------------
# parse_mlir_attr_dict
# ------------------------------------------------------------------------------------------

def test_parse_mlir_attr_dict_values():
    assert parse_mlir_attr_dict("{uplo = 76 : ui8, mode = 1 : i32}") == {"uplo": 76, "mode": 1}
    assert parse_mlir_attr_dict("") == {} and parse_mlir_attr_dict("{}") == {}
    assert parse_mlir_attr_dict("uplo = 85 : ui8") == {"uplo": 85}
    assert parse_mlir_attr_dict('{s = "caf\\C3\\A9 \\\\"}') == {"s": "caf\u00e9 \\"}
    parsed = parse_mlir_attr_dict(
        '{a = "x\\22y\\n", b = true, c = false, d = -2.5 : f32, e, f = {g = 1 : i1}, '
        'h = array<i64: 1, 2>, i = [1, "s"], "quoted key" = 0x10 : i32, '
        'j = dense<[1, 2]> : tensor<2xi64>, k = array<i32>}')
    assert parsed == {"a": 'x"y\n', "b": True, "c": False, "d": -2.5, "e": True,
                      "f": {"g": True}, "h": [1, 2], "i": [1, "s"], "quoted key": 16,
                      "j": [1, 2], "k": []}


@pytest.mark.parametrize("text", ["{a = }", "{a = 1", "{a = 1} x", "{a = @foo}", "{a 1}", "{= 1}"])
def test_parse_mlir_attr_dict_rejects_malformed(text):
    with pytest.raises(ValueError):
        parse_mlir_attr_dict(text)
