"""The linalg family: fft, cholesky, triangular-solve and batch-norm-* (kernels and handlers).

Numpy arrays of the storage dtype in and out; batch dimensions lead, matrix
dimensions are the last two:

* `cholesky`: only the selected triangle of the input is read; the unused
  triangle of the result is zero and a failed (non positive definite)
  factorisation gives NaN for that batch element, as XLA's CholeskyExpander does.
* `triangular_solve`: every combination of left_side / lower / unit_diagonal /
  transpose_a; only the selected triangle of `a` is read; a singular `a` gives
  inf/NaN, never an error.
* `fft`: FFT / IFFT / RFFT / IRFFT over the trailing `len(fft_length)` axes.
* `batch_norm_training` / `batch_norm_inference` / `batch_norm_grad`.

cholesky and triangular-solve go through LAPACK's potrf and trsm (lapack.py), the
routines the LAPACK custom calls JAX emits on CPU use.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..opcodes import Op
from .handlers import HANDLERS
from .lapack import potrf, trsm
from .numerics import is_float_like

# --------------------------------------------------------------------------------------
# dtype helpers
# --------------------------------------------------------------------------------------

_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64),
                  np.dtype(np.complex64), np.dtype(np.complex128))


def work_dtype(dtype: np.dtype, what: str) -> np.dtype:
    """The dtype a floating/complex kernel computes in: narrow floats widen to f32."""
    dtype = np.dtype(dtype)
    if dtype in _LAPACK_DTYPES:
        return dtype
    if is_float_like(dtype):
        return np.dtype(np.float32)
    raise ValueError(f"{what}: element type {dtype} is not a floating-point or complex type")


def real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else (
        np.dtype(np.float64) if dtype == np.complex128 else dtype)


def check_matrices(a: np.ndarray, what: str, square: bool = True) -> None:
    if a.ndim < 2:
        raise ValueError(f"{what}: operand must have rank >= 2, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what}: the two minor dimensions must be equal, got shape {a.shape}")


def triangle_mask(n: int, lower: bool) -> np.ndarray:
    """Boolean mask of the lower (or upper) triangle, diagonal included."""
    return np.tri(n, dtype=bool) if lower else np.tri(n, dtype=bool).T


# --------------------------------------------------------------------------------------
# Cholesky and triangular solve, through LAPACK's potrf and trsm (lapack.py)
# --------------------------------------------------------------------------------------

def cholesky(a: np.ndarray, lower: bool) -> np.ndarray:
    """HLO `cholesky`: batched Cholesky factor of the matrix given by one triangle.

    lower=True: L with a = L·Lᴴ; lower=False: U with a = Uᴴ·U. Only that triangle (and the
    real part of the diagonal) is read; the other triangle of the result is zero and a
    batch element that is not positive definite is NaN, as XLA's CholeskyExpander gives.
    """
    check_matrices(a, "cholesky")
    factor, info = potrf(a.astype(work_dtype(a.dtype, "cholesky")), lower)
    factor = np.where(triangle_mask(a.shape[-1], lower), factor, 0)
    factor[info != 0] = np.nan
    return factor.astype(a.dtype)


_TRANSPOSE_KINDS = {"NO_TRANSPOSE": "N", "TRANSPOSE": "T", "ADJOINT": "C"}


def triangular_solve(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool,
                     unit_diagonal: bool, transpose_a: str) -> np.ndarray:
    """HLO `triangular-solve`: x with op(a)·x = b (left_side) or x·op(a) = b.

    op(a) is a, aᵀ or aᴴ for transpose_a NO_TRANSPOSE / TRANSPOSE / ADJOINT. Only the
    `lower` (or upper) triangle of a is read; unit_diagonal never reads its diagonal; a
    singular a gives inf or NaN, never an error.
    """
    if transpose_a not in _TRANSPOSE_KINDS:
        raise ValueError(f"triangular-solve: transpose_a must be one of {tuple(_TRANSPOSE_KINDS)}, "
                         f"got {transpose_a!r}")
    check_matrices(a, "triangular-solve")
    check_matrices(b, "triangular-solve", square=False)
    m = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != m or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular-solve: b shape {b.shape} does not fit a shape {a.shape} "
                         f"with left_side={left_side}")
    work = work_dtype(np.result_type(a.dtype, b.dtype), "triangular-solve")
    x = trsm(a.astype(work), b.astype(work), left_side, lower, unit_diagonal, _TRANSPOSE_KINDS[transpose_a])
    return x.astype(b.dtype)


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
        out_dtype = real_dtype(x.dtype) if fft_type == "IRFFT" else x.dtype
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
    work = work_dtype(operand.dtype, what)
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
# Handlers
# --------------------------------------------------------------------------------------

@HANDLERS.register(Op.FFT)
def run_fft(ev, inst, ops):
    return fft(ops[0], inst.attrs["fft_type"], inst.attrs["fft_length"])


@HANDLERS.register(Op.CHOLESKY)
def run_cholesky(ev, inst, ops):
    return cholesky(ops[0], inst.attrs.get("lower", False))


@HANDLERS.register(Op.TRIANGULAR_SOLVE)
def run_triangular_solve(ev, inst, ops):
    transpose = inst.attrs.get("transpose_a", "NO_TRANSPOSE")
    if transpose == "TRANSPOSE_INVALID":
        transpose = "NO_TRANSPOSE"
    a = inst.attrs
    return triangular_solve(ops[0], ops[1], a.get("left_side", False), a.get("lower", False),
                            a.get("unit_diagonal", False), transpose)


@HANDLERS.register(Op.BATCH_NORM_TRAINING)
def run_batch_norm_training(ev, inst, ops):
    return tuple(batch_norm_training(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"]))


@HANDLERS.register(Op.BATCH_NORM_INFERENCE)
def run_batch_norm_inference(ev, inst, ops):
    return batch_norm_inference(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"])


@HANDLERS.register(Op.BATCH_NORM_GRAD)
def run_batch_norm_grad(ev, inst, ops):
    return tuple(batch_norm_grad(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"]))
