"""Linear-algebra, FFT and batch-norm kernels, and the LAPACK custom-call targets.

HLO ops implemented here (numpy arrays of the storage dtype in and out; batch
dimensions lead, matrix dimensions are the last two):

* `cholesky`: only the selected triangle of the input is read; the unused
  triangle of the result is zero and a failed (non positive definite)
  factorisation gives NaN for that batch element, as XLA's CholeskyExpander does.
* `triangular_solve`: every combination of left_side / lower / unit_diagonal /
  transpose_a; only the selected triangle of `a` is read; a singular `a` gives
  inf/NaN, never an error.
* `fft`: FFT / IFFT / RFFT / IRFFT over the trailing `len(fft_length)` axes.
* `batch_norm_training` / `batch_norm_inference` / `batch_norm_grad`.

The LAPACK custom calls that JAX emits on CPU (potrf, trsm, getrf, geqrf,
orgqr/ungqr, syevd/heevd, gesdd; typed-FFI `lapack_spotrf_ffi` names and the
legacy `lapack_spotrf` ones) are gathered in `LAPACK_TARGETS`, built on the
batched routines `potrf`, `lu_decomposition`, `qr_householder`,
`householder_product`, `symmetric_eigh` and `svd_gesdd`. The evaluator hands them *logical* arrays: LAPACK's
column-major `operand_layout_constraints` only say where data sits in memory,
which numpy abstracts away, so every routine here works on logical matrices.
Contents that LAPACK leaves unspecified (workspaces, the destroyed input of an
SVD, the factor of a failed Cholesky) are documented where they are produced.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Optional, Sequence

import ml_dtypes
import numpy as np

from ..runtime.ffi_attributes import backend_config_dict, lapack_char_option

# --------------------------------------------------------------------------------------
# dtype helpers
# --------------------------------------------------------------------------------------

_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64),
                  np.dtype(np.complex64), np.dtype(np.complex128))


def _is_float_like(dtype: np.dtype) -> bool:
    """True for numpy floats and the ml_dtypes float types (bf16, f8, f4)."""
    if dtype.kind == "f":
        return True
    # ml_dtypes floats report kind 'V'; only they are recognised by ml_dtypes.finfo.
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return dtype.kind == "V"


def _compute_dtype(dtype: np.dtype, what: str) -> np.dtype:
    """The dtype a floating/complex kernel computes in: narrow floats widen to f32."""
    dtype = np.dtype(dtype)
    if dtype in _LAPACK_DTYPES:
        return dtype
    if _is_float_like(dtype):
        return np.dtype(np.float32)
    raise ValueError(f"{what}: element type {dtype} is not a floating-point or complex type")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else (
        np.dtype(np.float64) if dtype == np.complex128 else dtype)


def _check_matrices(a: np.ndarray, what: str, square: bool = True) -> None:
    if a.ndim < 2:
        raise ValueError(f"{what}: operand must have rank >= 2, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what}: the two minor dimensions must be equal, got shape {a.shape}")


def _eye_mask(n: int) -> np.ndarray:
    return np.eye(n, dtype=bool)


def _triangle_mask(n: int, lower: bool) -> np.ndarray:
    """Boolean mask of the lower (or upper) triangle, diagonal included."""
    return np.tri(n, dtype=bool) if lower else np.tri(n, dtype=bool).T


def _conj_t(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


def _flat_batch(a: np.ndarray) -> np.ndarray:
    """a with its batch dims collapsed into one (explicit count: -1 fails for size 0)."""
    return a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)),) + a.shape[-2:])


# --------------------------------------------------------------------------------------
# Cholesky
# --------------------------------------------------------------------------------------

def _hermitian_from_triangle(a: np.ndarray, lower: bool) -> np.ndarray:
    """The Hermitian matrix described by one triangle of `a` (the other is ignored).

    Like LAPACK and XLA's expander, only the real part of a complex diagonal is used.
    """
    n = a.shape[-1]
    tri = np.where(_triangle_mask(n, lower), a, 0)
    strict = np.where(_eye_mask(n), 0, tri)
    diag = np.where(_eye_mask(n), tri.real if np.iscomplexobj(tri) else tri, 0)
    return strict + _conj_t(strict) + diag


def _first_failing_minor(h: np.ndarray) -> int:
    """LAPACK's potrf `info`: the order of the first leading minor that is not PD.

    Positive definiteness of leading minors is monotone, so bisect on the order.
    """
    good, bad = 0, h.shape[-1]
    while bad - good > 1:
        mid = (good + bad) // 2
        try:
            np.linalg.cholesky(h[:mid, :mid])
            good = mid
        except np.linalg.LinAlgError:
            bad = mid
    return bad


def _cholesky_lower_with_info(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower Cholesky factors of a batch of Hermitian matrices, and LAPACK-style info.

    Failed batch elements get a NaN factor and info > 0; the others info = 0.
    numpy rejects the whole batch when one element fails, so only then do we go
    through the elements one by one.
    """
    flat = _flat_batch(h)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    try:
        factor = np.linalg.cholesky(flat)
    except np.linalg.LinAlgError:
        factor = np.empty_like(flat)
        for i, matrix in enumerate(flat):
            try:
                factor[i] = np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                factor[i] = np.nan
                info[i] = _first_failing_minor(matrix)
    return factor.reshape(h.shape), info.reshape(h.shape[:-2])


def cholesky(a: np.ndarray, lower: bool) -> np.ndarray:
    """HLO `cholesky`: batched Cholesky factor of the matrix given by one triangle.

    lower=True: L with a = L·Lᴴ; lower=False: U with a = Uᴴ·U. The unused triangle
    of the result is zero; a batch element that is not positive definite is NaN.
    """
    _check_matrices(a, "cholesky")
    work = _compute_dtype(a.dtype, "cholesky")
    h = _hermitian_from_triangle(a.astype(work), lower)
    factor, _ = _cholesky_lower_with_info(h)
    result = factor if lower else _conj_t(factor)
    return np.ascontiguousarray(result).astype(a.dtype)


# --------------------------------------------------------------------------------------
# Triangular solve
# --------------------------------------------------------------------------------------

_TRANSPOSE_KINDS = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


def _forward_substitution(t: np.ndarray, rhs: np.ndarray, unit_diagonal: bool) -> np.ndarray:
    """Solve t·x = rhs for lower-triangular t, batched; reads only t's lower triangle.

    One step per matrix row, each vectorised over the batch and rhs columns.
    """
    m = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:],
                 dtype=np.result_type(t, rhs))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(m):
            known = (t[..., i:i + 1, :i] @ x[..., :i, :])[..., 0, :]
            row = rhs[..., i, :] - known
            x[..., i, :] = row if unit_diagonal else row / t[..., i, i][..., None]
    return x


def triangular_solve(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool,
                     unit_diagonal: bool, transpose_a: str) -> np.ndarray:
    """HLO `triangular-solve`: x with op(a)·x = b (left_side) or x·op(a) = b.

    op(a) is a, aᵀ or aᴴ for transpose_a NO_TRANSPOSE / TRANSPOSE / ADJOINT. Only the
    `lower` (or upper) triangle of a is read; unit_diagonal never reads its diagonal.
    """
    if transpose_a not in _TRANSPOSE_KINDS:
        raise ValueError(f"triangular-solve: transpose_a must be one of {_TRANSPOSE_KINDS}, "
                         f"got {transpose_a!r}")
    _check_matrices(a, "triangular-solve")
    _check_matrices(b, "triangular-solve", square=False)
    m = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != m:
        raise ValueError(f"triangular-solve: b shape {b.shape} does not fit a shape {a.shape} "
                         f"with left_side={left_side}")
    work = _compute_dtype(np.result_type(a.dtype, b.dtype), "triangular-solve")
    # Keep only the used triangle (np.where, so garbage such as NaN cannot leak in).
    t = np.where(_triangle_mask(m, lower), a.astype(work), 0)
    if unit_diagonal:
        t = np.where(_eye_mask(m), 1, t).astype(work)
    t_lower = lower
    if transpose_a != "NO_TRANSPOSE":
        t = np.swapaxes(t, -1, -2)
        if transpose_a == "ADJOINT":
            t = np.conj(t)
        t_lower = not t_lower
    rhs = b.astype(work)
    if not left_side:  # x·t = b  <=>  tᵀ·xᵀ = bᵀ
        t, rhs, t_lower = np.swapaxes(t, -1, -2), np.swapaxes(rhs, -1, -2), not t_lower
    if not t_lower:  # reversing rows and columns turns an upper system into a lower one
        t, rhs = t[..., ::-1, ::-1], rhs[..., ::-1, :]
    x = _forward_substitution(t, rhs, unit_diagonal)
    if not t_lower:
        x = x[..., ::-1, :]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return np.ascontiguousarray(x).astype(b.dtype)


# --------------------------------------------------------------------------------------
# FFT
# --------------------------------------------------------------------------------------

_FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _fft_result_shape(x: np.ndarray, fft_type: str, fft_length: tuple[int, ...]) -> tuple:
    """Checks operand dims against fft_length and returns the result shape (XLA rule)."""
    rank_l = len(fft_length)
    lead, inner = x.shape[:-rank_l], x.shape[-rank_l:]
    expected = tuple(fft_length)
    if fft_type == "IRFFT":
        expected = expected[:-1] + (fft_length[-1] // 2 + 1 if fft_length[-1] else 0,)
    if inner != expected:
        raise ValueError(f"fft: {fft_type} with fft_length={list(fft_length)} needs trailing "
                         f"dims {list(expected)}, operand has shape {x.shape}")
    if fft_type == "RFFT":
        last = fft_length[-1] // 2 + 1 if fft_length[-1] else 0
        return lead + tuple(fft_length[:-1]) + (last,)
    if fft_type == "IRFFT":
        return lead + tuple(fft_length)
    return x.shape


def fft(x: np.ndarray, fft_type: str, fft_length: Sequence[int]) -> np.ndarray:
    """HLO `fft` over the last len(fft_length) axes.

    Forward transforms are unnormalised, inverse ones scaled by 1/N (numpy's
    convention, which is XLA's). RFFT keeps n//2+1 bins of the innermost axis;
    IRFFT rebuilds the rest by Hermitian symmetry and returns fft_length[-1] points.
    Computed in double precision and rounded to the result type.
    """
    if fft_type not in _FFT_TYPES:
        raise ValueError(f"fft: unknown fft_type {fft_type!r}")
    fft_length = tuple(int(n) for n in fft_length)
    if not 1 <= len(fft_length) <= 3 or x.ndim < len(fft_length):
        raise ValueError(f"fft: fft_length {list(fft_length)} needs 1 to 3 entries and "
                         f"at most rank {x.ndim}")
    is_complex = x.dtype in (np.complex64, np.complex128)
    if fft_type == "RFFT":
        if x.dtype not in (np.float32, np.float64):
            raise ValueError(f"fft: RFFT needs f32 or f64 input, got {x.dtype}")
        out_dtype = np.dtype(np.complex64 if x.dtype == np.float32 else np.complex128)
    else:
        if not is_complex:
            raise ValueError(f"fft: {fft_type} needs c64 or c128 input, got {x.dtype}")
        out_dtype = _real_dtype(x.dtype) if fft_type == "IRFFT" else x.dtype
    result_shape = _fft_result_shape(x, fft_type, fft_length)
    if 0 in result_shape:
        return np.zeros(result_shape, dtype=out_dtype)
    axes = tuple(range(x.ndim - len(fft_length), x.ndim))
    if fft_type == "FFT":
        out = np.fft.fftn(x.astype(np.complex128), axes=axes)
    elif fft_type == "IFFT":
        out = np.fft.ifftn(x.astype(np.complex128), axes=axes)
    elif fft_type == "RFFT":
        out = np.fft.rfftn(x.astype(np.float64), s=fft_length, axes=axes)
    else:
        out = np.fft.irfftn(x.astype(np.complex128), s=fft_length, axes=axes)
    return out.astype(out_dtype)


# --------------------------------------------------------------------------------------
# Batch normalisation
# --------------------------------------------------------------------------------------

def _bn_setup(operand: np.ndarray, feature_index: int, what: str):
    """(compute dtype, reduction axes, reshape-for-broadcast function)."""
    if not 0 <= feature_index < operand.ndim:
        raise ValueError(f"{what}: feature_index {feature_index} out of range for rank "
                         f"{operand.ndim}")
    work = _compute_dtype(operand.dtype, what)
    if work.kind == "c":
        raise ValueError(f"{what}: complex element type {operand.dtype} is not supported")
    axes = tuple(d for d in range(operand.ndim) if d != feature_index)
    shape = [1] * operand.ndim
    shape[feature_index] = operand.shape[feature_index]

    def per_feature(v: np.ndarray) -> np.ndarray:
        if v.shape != (operand.shape[feature_index],):
            raise ValueError(f"{what}: per-feature operand has shape {v.shape}, expected "
                             f"({operand.shape[feature_index]},)")
        return v.astype(work).reshape(shape)

    return work, axes, per_feature


def batch_norm_training(operand: np.ndarray, scale: np.ndarray, offset: np.ndarray,
                        epsilon: float, feature_index: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HLO `batch-norm-training`: (normalised operand, batch mean, biased batch variance)."""
    work, axes, per_feature = _bn_setup(operand, feature_index, "batch-norm-training")
    x = operand.astype(work)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.mean(x, axis=axes, keepdims=True)
        var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
        inv = 1 / np.sqrt(var + work.type(epsilon))
        y = per_feature(scale) * (x - mean) * inv + per_feature(offset)
    dtype = operand.dtype
    return y.astype(dtype), mean.reshape(-1).astype(dtype), var.reshape(-1).astype(dtype)


def batch_norm_inference(operand: np.ndarray, scale: np.ndarray, offset: np.ndarray,
                         mean: np.ndarray, variance: np.ndarray, epsilon: float,
                         feature_index: int) -> np.ndarray:
    """HLO `batch-norm-inference`: normalise with the given mean and variance."""
    work, _, per_feature = _bn_setup(operand, feature_index, "batch-norm-inference")
    x = operand.astype(work)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1 / np.sqrt(per_feature(variance) + work.type(epsilon))
        y = per_feature(scale) * (x - per_feature(mean)) * inv + per_feature(offset)
    return y.astype(operand.dtype)


def batch_norm_grad(operand: np.ndarray, scale: np.ndarray, mean: np.ndarray,
                    variance: np.ndarray, grad_output: np.ndarray, epsilon: float,
                    feature_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HLO `batch-norm-grad`: (grad_operand, grad_scale, grad_offset), standard back-prop."""
    work, axes, per_feature = _bn_setup(operand, feature_index, "batch-norm-grad")
    if grad_output.shape != operand.shape:
        raise ValueError(f"batch-norm-grad: grad_output shape {grad_output.shape} differs "
                         f"from operand shape {operand.shape}")
    x, dy = operand.astype(work), grad_output.astype(work)
    with np.errstate(divide="ignore", invalid="ignore"):
        var_eps = per_feature(variance) + work.type(epsilon)
        inv = 1 / np.sqrt(var_eps)
        centred = x - per_feature(mean)
        mean_dy = np.mean(dy, axis=axes, keepdims=True)
        mean_dy_centred = np.mean(dy * centred, axis=axes, keepdims=True) / var_eps
        grad_x = per_feature(scale) * inv * (dy - mean_dy - mean_dy_centred * centred)
        grad_scale = np.sum(dy * centred * inv, axis=axes)
        grad_offset = np.sum(dy, axis=axes)
    dtype = operand.dtype
    return grad_x.astype(dtype), grad_scale.astype(dtype), grad_offset.astype(dtype)


# --------------------------------------------------------------------------------------
# LAPACK routines on logical, batched matrices
# --------------------------------------------------------------------------------------

def _pivot_magnitude(col: np.ndarray) -> np.ndarray:
    """|x| as BLAS i?amax measures it (|re|+|im| for complex); NaN never wins."""
    mag = np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)
    return np.where(np.isnan(mag), -np.inf, mag)


def lu_decomposition(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK getrf: LU with partial pivoting of batched m×n matrices.

    Returns (lu, ipiv, info): unit-lower L below the diagonal and U on and above it;
    ipiv s32[..., min(m,n)] 1-based (row i was swapped with row ipiv[i]); info s32[...]
    is the 1-based index of the first exactly-zero pivot, else 0.
    """
    _check_matrices(a, "getrf", square=False)
    work = _compute_dtype(a.dtype, "getrf")
    *batch, m, n = a.shape
    lu = _flat_batch(a.astype(work)).copy()
    count, k = lu.shape[0], min(m, n)
    ipiv = np.zeros((count, k), dtype=np.int32)
    info = np.zeros(count, dtype=np.int32)
    rows = np.arange(count)
    tiny = np.finfo(work).tiny
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j in range(k):
            p = j + np.argmax(_pivot_magnitude(lu[:, j:, j]), axis=1)
            ipiv[:, j] = p + 1
            lu[rows, j], lu[rows, p] = lu[rows, p].copy(), lu[rows, j].copy()
            pivot = lu[:, j, j]
            nonzero = pivot != 0
            info = np.where((info == 0) & ~nonzero, j + 1, info).astype(np.int32)
            # Like dgetf2: multiply by the reciprocal unless that would overflow.
            safe = np.where(nonzero, pivot, 1)
            scaled = np.where((np.abs(safe) >= tiny)[:, None],
                              lu[:, j + 1:, j] * (1 / safe)[:, None],
                              lu[:, j + 1:, j] / safe[:, None])
            lu[:, j + 1:, j] = np.where(nonzero[:, None], scaled, lu[:, j + 1:, j])
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return (lu.reshape(a.shape).astype(a.dtype), ipiv.reshape((*batch, k)),
            info.reshape(batch))


def _householder(alpha: np.ndarray, x: np.ndarray):
    """Vectorised LAPACK ?larfg: (beta, tau, scale for x) per batch element.

    H = I - tau·v·vᴴ with v = [1, x·scale] maps [alpha, x] to [beta, 0]; tau = 0
    (H = I) when x is zero and alpha is real.
    """
    if x.shape[-1]:
        xnorm = np.linalg.norm(x, axis=-1)
    else:
        xnorm = np.zeros(alpha.shape, _real_dtype(x.dtype))
    alpha_im = alpha.imag if np.iscomplexobj(alpha) else np.zeros_like(xnorm)
    active = (xnorm != 0) | (alpha_im != 0)
    norm = np.sqrt(np.square(np.abs(alpha)) + np.square(xnorm)) if np.iscomplexobj(alpha) \
        else np.hypot(alpha, xnorm)
    beta = -np.copysign(norm, alpha.real)
    safe_beta = np.where(active, beta, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.iscomplexobj(alpha):
            tau = (safe_beta - alpha.real) / safe_beta - 1j * (alpha_im / safe_beta)
        else:
            tau = (safe_beta - alpha) / safe_beta
        scale = 1 / np.where(active, alpha - beta, 1)
    tau = np.where(active, tau, 0).astype(alpha.dtype)
    beta = np.where(active, beta, alpha).astype(alpha.dtype)
    return beta, tau, np.where(active, scale, 1).astype(alpha.dtype)


def qr_householder(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK geqrf: (a_out, tau) with R on and above the diagonal of a_out and the
    Householder vectors (implicit leading 1) below it; a = Q·R, Q = H(1)…H(k)."""
    _check_matrices(a, "geqrf", square=False)
    work = _compute_dtype(a.dtype, "geqrf")
    *batch, m, n = a.shape
    r = _flat_batch(a.astype(work)).copy()
    k = min(m, n)
    tau = np.zeros((r.shape[0], k), dtype=work)
    for i in range(k):
        beta, tau_i, scale = _householder(r[:, i, i], r[:, i + 1:, i])
        r[:, i + 1:, i] *= scale[:, None]
        r[:, i, i] = beta
        tau[:, i] = tau_i
        v = np.concatenate([np.ones((r.shape[0], 1), work), r[:, i + 1:, i]], axis=1)
        trailing = r[:, i:, i + 1:]
        w = np.einsum("bi,bij->bj", np.conj(v), trailing)
        # Apply H(i)ᴴ = I - conj(tau)·v·vᴴ from the left.
        trailing -= np.conj(tau_i)[:, None, None] * v[:, :, None] * w[:, None, :]
    return r.reshape(a.shape).astype(a.dtype), tau.reshape((*batch, k)).astype(a.dtype)


def householder_product(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """LAPACK orgqr/ungqr: the first n columns of Q = H(1)…H(k) from geqrf's output."""
    _check_matrices(a, "orgqr", square=False)
    work = _compute_dtype(a.dtype, "orgqr")
    *batch, m, n = a.shape
    k = tau.shape[-1]
    if not m >= n >= k or tau.shape[:-1] != tuple(batch):
        raise ValueError(f"orgqr: needs m >= n >= k and matching batch dims, got a {a.shape}, "
                         f"tau {tau.shape}")
    vs = _flat_batch(a.astype(work))
    taus = tau.astype(work).reshape((vs.shape[0], k))
    q = np.broadcast_to(np.eye(m, n, dtype=work), vs.shape).copy()
    for i in reversed(range(k)):
        v = np.concatenate([np.ones((vs.shape[0], 1), work), vs[:, i + 1:, i]], axis=1)
        block = q[:, i:, :]
        w = np.einsum("bi,bij->bj", np.conj(v), block)
        block -= taus[:, i, None, None] * v[:, :, None] * w[:, None, :]
    return q.reshape(a.shape).astype(a.dtype)


def _batched_or_each(fn: Callable, flat: np.ndarray) -> tuple[list, np.ndarray]:
    """Run numpy `fn` on a batch; if numpy rejects the batch, run each element alone.

    Returns (per-output arrays, ok flags); outputs of failed elements are NaN.
    """
    ok = np.ones(flat.shape[0], dtype=bool)
    try:
        return [np.asarray(o) for o in _as_tuple(fn(flat))], ok
    except np.linalg.LinAlgError:
        pass
    template = [np.asarray(o) for o in _as_tuple(fn(np.eye(*flat.shape[-2:], dtype=flat.dtype)))]
    outs = [np.full((flat.shape[0],) + t.shape, np.nan, dtype=t.dtype) for t in template]
    for i, matrix in enumerate(flat):
        try:
            for out, value in zip(outs, _as_tuple(fn(matrix))):
                out[i] = value
        except np.linalg.LinAlgError:
            ok[i] = False
    return outs, ok


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, tuple) else (value,)


def symmetric_eigh(a: np.ndarray, lower: bool, vectors: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK syevd/heevd: (eigenvectors as columns, ascending real eigenvalues, info).

    Only the `lower` (or upper) triangle is read. Without vectors the first output
    is the input unchanged (LAPACK leaves it unspecified). Non-convergence gives NaN
    and info = 1.
    """
    _check_matrices(a, "syevd")
    flat = _flat_batch(a.astype(_compute_dtype(a.dtype, "syevd")))
    uplo = "L" if lower else "U"
    if vectors:
        (w, v), ok = _batched_or_each(lambda x: tuple(np.linalg.eigh(x, UPLO=uplo)), flat)
    else:
        (w,), ok = _batched_or_each(lambda x: np.linalg.eigvalsh(x, UPLO=uplo), flat)
        v = flat
    info = np.where(ok, 0, 1).astype(np.int32).reshape(a.shape[:-2])
    return (np.asarray(v).reshape(a.shape).astype(a.dtype),
            w.reshape(a.shape[:-1]).astype(_real_dtype(a.dtype)), info)


def svd_gesdd(a: np.ndarray, mode: str) -> tuple[np.ndarray, ...]:
    """LAPACK gesdd: (s, u, vt, info) for mode 'A' (full), 'S' (reduced) or 'N' (no u/vt;
    then u and vt are None). numpy's svd calls gesdd too. Non-convergence: NaN, info 1."""
    _check_matrices(a, "gesdd", square=False)
    if mode not in ("A", "S", "N"):
        raise ValueError(f"gesdd: unsupported computation mode {mode!r}")
    *batch, m, n = a.shape
    flat = _flat_batch(a.astype(_compute_dtype(a.dtype, "gesdd")))
    if mode == "N":
        (s,), ok = _batched_or_each(lambda x: np.linalg.svd(x, compute_uv=False), flat)
        u = vt = None
    else:
        full = mode == "A"
        (u, s, vt), ok = _batched_or_each(
            lambda x: tuple(np.linalg.svd(x, full_matrices=full)), flat)
        u = u.reshape((*batch, *u.shape[-2:])).astype(a.dtype)
        vt = vt.reshape((*batch, *vt.shape[-2:])).astype(a.dtype)
    info = np.where(ok, 0, 1).astype(np.int32).reshape(batch)
    return s.reshape((*batch, s.shape[-1])).astype(_real_dtype(a.dtype)), u, vt, info


def potrf(a: np.ndarray, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK potrf: (factor, info). The factor replaces the `lower` (or upper) triangle;
    the other triangle keeps the input, as in LAPACK. Failed elements: info > 0 (order
    of the first non-PD leading minor) and NaN in the factor's triangle (LAPACK leaves
    a partial factor there, which callers such as JAX discard)."""
    _check_matrices(a, "potrf")
    h = _hermitian_from_triangle(a.astype(_compute_dtype(a.dtype, "potrf")), lower)
    factor, info = _cholesky_lower_with_info(h)
    if not lower:
        factor = _conj_t(factor)
    mask = _triangle_mask(a.shape[-1], lower)
    return np.where(mask, factor, a).astype(a.dtype), info


# --------------------------------------------------------------------------------------
# LAPACK custom-call targets
# --------------------------------------------------------------------------------------

_PREFIX_DTYPES = {"s": np.dtype(np.float32), "d": np.dtype(np.float64),
                  "c": np.dtype(np.complex64), "z": np.dtype(np.complex128)}


def _result_spec(spec) -> tuple[tuple[int, ...], np.dtype]:
    """(dims, dtype) of a result leaf given as a hlo.shapes.Shape or a (dims, dtype) pair."""
    if hasattr(spec, "element_type") and hasattr(spec, "dims"):
        return tuple(spec.dims), np.dtype(spec.element_type.dtype)
    dims, dtype = spec
    return tuple(dims), np.dtype(dtype)


def _fit_results(target: str, computed: Sequence[np.ndarray], result_specs) -> list[np.ndarray]:
    """Match computed outputs to the call's result leaves.

    Older ABIs declare extra results (info, workspaces) after the computed ones:
    these are filled with zeros. Each output is cast to its declared dtype and its
    shape checked. result_specs None returns `computed` unchanged.
    """
    if result_specs is None:
        return list(computed)
    specs = [_result_spec(s) for s in result_specs]
    if len(specs) < 1:
        raise ValueError(f"{target}: custom call declares no results")
    out = []
    for i, (dims, dtype) in enumerate(specs):
        if i < len(computed) and computed[i] is not None:
            value = np.asarray(computed[i])
            if value.shape != dims:
                raise ValueError(f"{target}: result {i} has shape {value.shape}, the call "
                                 f"declares {dims}")
            out.append(value.astype(dtype, copy=False))
        else:
            out.append(np.zeros(dims, dtype=dtype))
    return out


def _check_operands(target: str, operands: Sequence[np.ndarray], counts: tuple[int, ...],
                    dtype: np.dtype, matrix_positions: Sequence[int]) -> None:
    if len(operands) not in counts:
        raise ValueError(f"{target}: expected {' or '.join(map(str, counts))} operands, "
                         f"got {len(operands)}")
    for pos in matrix_positions:
        if np.asarray(operands[pos]).dtype != dtype:
            raise ValueError(f"{target}: operand {pos} has element type "
                             f"{np.asarray(operands[pos]).dtype}, expected {dtype}")


def _scalar(value) -> int:
    return int(np.asarray(value).reshape(-1)[0])


def _potrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    uplo = lapack_char_option(backend_config_dict(backend_config), "uplo", "LU", target)
    return _fit_results(target, potrf(np.asarray(operands[0]), uplo == "L"), result_specs)


def _trsm(target, a, b, alpha, side, uplo, trans, diag, result_specs):
    transpose = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[trans]
    x = triangular_solve(a, b, left_side=side == "L", lower=uplo == "L",
                         unit_diagonal=diag == "U", transpose_a=transpose)
    if alpha is not None:  # trsm solves op(a)·x = alpha·b
        x = (x * np.asarray(alpha).reshape(())).astype(b.dtype)
    return _fit_results(target, [x], result_specs)


def _trsm_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Newer jaxlib passes (a, b); older FFI versions add a scalar alpha operand.
    _check_operands(target, operands, (2, 3), dtype, (0, 1))
    config = backend_config_dict(backend_config)
    alpha = operands[2] if len(operands) == 3 else None
    return _trsm(target, np.asarray(operands[0]), np.asarray(operands[1]), alpha,
                 lapack_char_option(config, "side", "LR", target), lapack_char_option(config, "uplo", "LU", target),
                 lapack_char_option(config, "trans_x", "NTC", target),
                 lapack_char_option(config, "diag", "NU", target), result_specs)


def _getrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    return _fit_results(target, lu_decomposition(np.asarray(operands[0])), result_specs)


def _geqrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Current ABI: (a_out, tau); older ones add (info, workspace).
    _check_operands(target, operands, (1,), dtype, (0,))
    a_out, tau = qr_householder(np.asarray(operands[0]))
    info = np.zeros(a_out.shape[:-2], dtype=np.int32)
    return _fit_results(target, [a_out, tau, info], result_specs)


def _orgqr_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Current ABI: (a_out); older ones add (info, workspace).
    _check_operands(target, operands, (2,), dtype, (0, 1))
    q = householder_product(np.asarray(operands[0]), np.asarray(operands[1]))
    return _fit_results(target, [q, np.zeros(q.shape[:-2], dtype=np.int32)], result_specs)


def _syevd_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    config = backend_config_dict(backend_config)
    uplo = lapack_char_option(config, "uplo", "LU", target)
    mode = lapack_char_option(config, "mode", "VN", target, default="V")
    return _fit_results(target, symmetric_eigh(np.asarray(operands[0]), uplo == "L", mode == "V"),
                        result_specs)


def _gesdd_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    mode = lapack_char_option(backend_config_dict(backend_config), "mode", "ASN", target)
    a = np.asarray(operands[0])
    s, u, vt, info = svd_gesdd(a, mode)
    # LAPACK destroys the input; we return it unchanged. Without u/vt they stay zero.
    return _fit_results(target, [a, s, u, vt, info], result_specs)


# Legacy (pre-FFI) kernels: the options travel as leading s32 scalar operands.

def _legacy_potrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, potrf(np.asarray(operands[3]), bool(_scalar(operands[0]))),
                        result_specs)


def _legacy_trsm(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (10,), dtype, (8, 9))
    left, lower, trans, unit = (_scalar(operands[i]) for i in range(4))
    if trans not in (0, 1, 2):
        raise ValueError(f"{target}: trans_a must be 0, 1 or 2, got {trans}")
    return _trsm(target, np.asarray(operands[8]), np.asarray(operands[9]), operands[7],
                 "L" if left else "R", "L" if lower else "U", "NTC"[trans], "U" if unit else "N",
                 result_specs)


def _legacy_getrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, lu_decomposition(np.asarray(operands[3])), result_specs)


def _legacy_geqrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (5,), dtype, (4,))
    a_out, tau = qr_householder(np.asarray(operands[4]))
    return _fit_results(target, [a_out, tau, np.zeros(a_out.shape[:-2], np.int32)], result_specs)


def _legacy_orgqr(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (7,), dtype, (5, 6))
    q = householder_product(np.asarray(operands[5]), np.asarray(operands[6]))
    return _fit_results(target, [q, np.zeros(q.shape[:-2], np.int32)], result_specs)


def _legacy_syevd(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, symmetric_eigh(np.asarray(operands[3]), bool(_scalar(operands[0]))),
                        result_specs)


def _legacy_gesdd(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (7,), dtype, (6,))
    full, compute_uv = bool(_scalar(operands[0])), bool(_scalar(operands[1]))
    a = np.asarray(operands[6])
    s, u, vt, info = svd_gesdd(a, ("A" if full else "S") if compute_uv else "N")
    return _fit_results(target, [a, s, u, vt, info], result_specs)


def _build_lapack_targets() -> dict[str, Callable]:
    """Target name -> handler for every routine and precision prefix (s, d, c, z)."""
    targets: dict[str, Callable] = {}

    def add(name: str, handler: Callable, dtype: np.dtype) -> None:
        targets[name] = functools.partial(handler, dtype=dtype, target=name)

    for p, dtype in _PREFIX_DTYPES.items():
        complex_ = p in "cz"
        orgqr = "ungqr" if complex_ else "orgqr"
        syevd = "heevd" if complex_ else "syevd"
        for suffix, ffi, legacy in (("potrf", _potrf_ffi, _legacy_potrf),
                                    ("trsm", _trsm_ffi, _legacy_trsm),
                                    ("getrf", _getrf_ffi, _legacy_getrf),
                                    ("geqrf", _geqrf_ffi, _legacy_geqrf),
                                    (orgqr, _orgqr_ffi, _legacy_orgqr),
                                    (syevd, _syevd_ffi, _legacy_syevd),
                                    ("gesdd", _gesdd_ffi, _legacy_gesdd)):
            add(f"lapack_{p}{suffix}_ffi", ffi, dtype)
            add(f"lapack_{p}{suffix}", legacy, dtype)
        if complex_:  # accept the real-type spelling for complex Q too
            add(f"lapack_{p}orgqr_ffi", _orgqr_ffi, dtype)
    return targets


LAPACK_TARGETS: dict[str, Callable] = _build_lapack_targets()
