"""Numpy kernels for HLO's contractions: dot (dot_general) and convolution.

Arithmetic follows XLA: both operands are converted to the result element type,
then computed in a *computation type*: f32 for every float narrower than 32 bits
(XLA:CPU upcasts bf16/f16/f8 and rounds the result back), the type itself for
f32/f64/complex, and 64-bit integers for integral and PRED results, wrapped back
to the result width at the end (wrap-around is exact because integer sums and
products are computed modulo 2**64). Heavy lifting is done by np.matmul, which
calls BLAS for f32/f64/complex.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..shapes import PrimitiveType
from ..attributes import ConvDims, DotDims, Window
from .windows import dilated_size, pad, window_output_dims, window_padding_config


# --------------------------------------------------------------------------- dimension numbers


# --------------------------------------------------------------------------- arithmetic types


def _computation_dtype(result_type: PrimitiveType) -> np.dtype:
    if result_type.is_float:
        return np.dtype(np.float64 if result_type.bits > 32 else np.float32)
    if result_type.is_complex:
        return result_type.dtype
    if result_type.is_signed_int or result_type.is_pred:
        return np.dtype(np.int64)
    if result_type.is_unsigned_int:
        return np.dtype(np.uint64)
    raise ValueError(f"no arithmetic on element type {result_type.name}")


def _to_computation(x: np.ndarray, result_type: PrimitiveType) -> np.ndarray:
    """Convert an operand to the result type (as XLA does), then to the computation type."""
    x = np.asarray(x)
    if x.dtype != result_type.dtype:
        x = x.astype(result_type.dtype)
    return x.astype(_computation_dtype(result_type), copy=False)


def _wrap_subbyte(values: np.ndarray, result_type: PrimitiveType) -> np.ndarray:
    mask = (1 << result_type.bits) - 1
    low = values.astype(np.int64) & mask
    if result_type.is_signed_int:
        half = 1 << (result_type.bits - 1)
        low = np.where(low >= half, low - (mask + 1), low)
    return low.astype(result_type.dtype)


def _from_computation(values: np.ndarray, result_type: PrimitiveType) -> np.ndarray:
    """Round floats / wrap integers back to the result element type."""
    if result_type.is_pred:
        return np.asarray(values != 0)  # 0-d comparisons would give numpy scalars
    if result_type.is_integral and result_type.bits < 8:
        return _wrap_subbyte(values, result_type)
    return values.astype(result_type.dtype)  # int64 -> narrower ints wraps (C cast)


# --------------------------------------------------------------------------- dot


def _check_dot_dims(lhs_shape, rhs_shape, dims: DotDims) -> None:
    if len(dims.lhs_batch) != len(dims.rhs_batch):
        raise ValueError("dot: lhs and rhs must have the same number of batch dimensions")
    if len(dims.lhs_contracting) != len(dims.rhs_contracting):
        raise ValueError("dot: lhs and rhs must have the same number of contracting dimensions")
    for name, shape, listed in (("lhs", lhs_shape, dims.lhs_batch + dims.lhs_contracting),
                                ("rhs", rhs_shape, dims.rhs_batch + dims.rhs_contracting)):
        if len(set(listed)) != len(listed) or any(d < 0 or d >= len(shape) for d in listed):
            raise ValueError(f"dot: {name} batch/contracting dims {listed} must be distinct and "
                             f"in [0, {len(shape)})")
    for kind, ls, rs in (("batch", dims.lhs_batch, dims.rhs_batch),
                         ("contracting", dims.lhs_contracting, dims.rhs_contracting)):
        for l, r in zip(ls, rs):
            if lhs_shape[l] != rhs_shape[r]:
                raise ValueError(f"dot: {kind} dims lhs {l} (size {lhs_shape[l]}) and rhs {r} "
                                 f"(size {rhs_shape[r]}) differ")


def _free_dims(rank: int, *used: Sequence[int]) -> list[int]:
    taken = set().union(*used)
    return [d for d in range(rank) if d not in taken]


def dot_general(lhs: np.ndarray, rhs: np.ndarray, dims: DotDims,
                result_type: PrimitiveType) -> np.ndarray:
    """HLO dot: result dims are batch dims, then lhs free dims, then rhs free dims."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    _check_dot_dims(lhs.shape, rhs.shape, dims)
    lhs_free = _free_dims(lhs.ndim, dims.lhs_batch, dims.lhs_contracting)
    rhs_free = _free_dims(rhs.ndim, dims.rhs_batch, dims.rhs_contracting)
    batch_shape = tuple(lhs.shape[d] for d in dims.lhs_batch)
    lhs_free_shape = tuple(lhs.shape[d] for d in lhs_free)
    rhs_free_shape = tuple(rhs.shape[d] for d in rhs_free)
    contracted = math.prod(lhs.shape[d] for d in dims.lhs_contracting)
    batch = math.prod(batch_shape)
    # As a batched matmul: [batch, lhs free, contracted] @ [batch, contracted, rhs free].
    a = _to_computation(lhs, result_type).transpose(
        list(dims.lhs_batch) + lhs_free + list(dims.lhs_contracting))
    b = _to_computation(rhs, result_type).transpose(
        list(dims.rhs_batch) + list(dims.rhs_contracting) + rhs_free)
    a = a.reshape(batch, math.prod(lhs_free_shape), contracted)
    b = b.reshape(batch, contracted, math.prod(rhs_free_shape))
    product = np.matmul(a, b).reshape(batch_shape + lhs_free_shape + rhs_free_shape)
    return _from_computation(product, result_type)


# --------------------------------------------------------------------------- convolution


def _check_conv(lhs_shape, rhs_shape, window: Window, dims: ConvDims,
                feature_groups: int, batch_groups: int) -> None:
    n = dims.num_spatial
    if len(lhs_shape) != n + 2 or len(rhs_shape) != n + 2:
        raise ValueError(f"convolution: dim_labels {dims.to_text()} need rank-{n + 2} operands, "
                         f"got lhs {tuple(lhs_shape)} and rhs {tuple(rhs_shape)}")
    if len(window.dims) != n:
        raise ValueError(f"convolution: window has {len(window.dims)} dimensions, dim_labels "
                         f"have {n} spatial dimensions")
    if feature_groups < 1 or batch_groups < 1:
        raise ValueError("convolution: feature_group_count and batch_group_count must be >= 1")
    if feature_groups > 1 and batch_groups > 1:
        raise ValueError("convolution: feature_group_count and batch_group_count "
                         "cannot both be > 1")
    batch, features = lhs_shape[dims.input_batch], lhs_shape[dims.input_feature]
    in_features = rhs_shape[dims.kernel_input_feature]
    out_features = rhs_shape[dims.kernel_output_feature]
    if features % feature_groups or features // feature_groups != in_features:
        raise ValueError(f"convolution: lhs features {features} must equal kernel input features "
                         f"{in_features} x feature_group_count {feature_groups}")
    if out_features % feature_groups:
        raise ValueError(f"convolution: kernel output features {out_features} not divisible by "
                         f"feature_group_count {feature_groups}")
    if out_features % batch_groups or batch % batch_groups:
        raise ValueError(f"convolution: kernel output features {out_features} and lhs batch "
                         f"{batch} must be divisible by batch_group_count {batch_groups}")
    for k, (wd, d) in enumerate(zip(window.dims, dims.kernel_spatial)):
        if wd.size != rhs_shape[d]:
            raise ValueError(f"convolution: window size {wd.size} of spatial dim {k} differs "
                             f"from kernel size {rhs_shape[d]}")


def _kernel_matrices(kernel: np.ndarray, window: Window, groups: int) -> np.ndarray:
    """Canonical kernel [O, I, K...] as per-group matrices [groups, I*prod(K), O/groups]."""
    flip = tuple(2 + k for k, wd in enumerate(window.dims) if wd.window_reversal)
    if flip:
        kernel = np.flip(kernel, axis=flip)
    out_features, in_features = kernel.shape[:2]
    taps = math.prod(kernel.shape[2:])
    grouped = kernel.reshape((groups, out_features // groups, in_features, taps))
    return grouped.transpose(0, 2, 3, 1).reshape(groups, in_features * taps, out_features // groups)


def _input_patches(padded: np.ndarray, window: Window, out_spatial: tuple[int, ...],
                   batch_groups: int, feature_groups: int) -> np.ndarray:
    """im2col of canonical padded input [N, C, P...]: [groups, N/Bg*prod(out), C/G*prod(K)].

    Group g' = batch_group * G + feature_group (one of the two counts is 1).
    """
    n = len(window.dims)
    batch, features = padded.shape[:2]
    spans = [dilated_size(wd.size, wd.window_dilation) for wd in window.dims]
    views = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=tuple(range(2, 2 + n)))
    positions = tuple(slice(0, (o - 1) * wd.stride + 1, wd.stride)
                      for o, wd in zip(out_spatial, window.dims))
    taps = tuple(slice(None, None, wd.window_dilation) for wd in window.dims)
    views = views[(slice(None), slice(None)) + positions + taps]  # [N, C, out..., K...]
    nb, cg = batch // batch_groups, features // feature_groups
    views = views.reshape((batch_groups, nb, feature_groups, cg) + views.shape[2:])
    order = (0, 2, 1) + tuple(range(4, 4 + n)) + (3,) + tuple(range(4 + n, 4 + 2 * n))
    return views.transpose(order).reshape(batch_groups * feature_groups,
                                          nb * math.prod(out_spatial),
                                          cg * math.prod(v.size for v in window.dims))


_PATCH_BUDGET = 1 << 24  # im2col elements built at once; larger batches go in chunks


def _conv_canonical(x: np.ndarray, kernel: np.ndarray, window: Window, out_spatial,
                    feature_groups: int, batch_groups: int) -> np.ndarray:
    """Convolution of canonical [N, C, S...] by [O, I, K...] into [N/Bg, O, out...]."""
    groups = feature_groups * batch_groups
    batch = x.shape[0] // batch_groups
    out_features = kernel.shape[0]
    result = np.zeros((batch, out_features) + tuple(out_spatial), dtype=x.dtype)
    if result.size == 0:
        return result
    padded = pad(x, np.zeros((), x.dtype), ((0, 0, 0), (0, 0, 0)) + window_padding_config(window))
    padded = padded.reshape((batch_groups, batch) + padded.shape[1:])
    matrices = _kernel_matrices(kernel, window, groups)
    patch_size = x.shape[1] * math.prod(out_spatial) * math.prod(wd.size for wd in window.dims)
    chunk = max(1, _PATCH_BUDGET // max(1, patch_size * batch_groups))
    n = len(out_spatial)
    for start in range(0, batch, chunk):
        block = padded[:, start:start + chunk]
        size = block.shape[1]
        block = block.reshape((batch_groups * size,) + block.shape[2:])
        patches = _input_patches(block, window, tuple(out_spatial), batch_groups, feature_groups)
        product = np.matmul(patches, matrices)  # [groups, size*prod(out), O/groups]
        product = product.reshape((groups, size) + tuple(out_spatial) + (out_features // groups,))
        order = (1, 0, 2 + n) + tuple(range(2, 2 + n))  # -> [size, groups, O/groups, out...]
        result[start:start + size] = product.transpose(order).reshape(
            (size, out_features) + tuple(out_spatial))
    return result


def convolution(lhs: np.ndarray, rhs: np.ndarray, window: Window, dims: ConvDims,
                feature_group_count: int, batch_group_count: int,
                result_type: PrimitiveType) -> np.ndarray:
    """HLO convolution (cross-correlation) with XLA's padding, dilation, reversal and groups."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    _check_conv(lhs.shape, rhs.shape, window, dims, feature_group_count, batch_group_count)
    x = _to_computation(lhs, result_type).transpose(
        (dims.input_batch, dims.input_feature) + dims.input_spatial)
    kernel = _to_computation(rhs, result_type).transpose(
        (dims.kernel_output_feature, dims.kernel_input_feature) + dims.kernel_spatial)
    out_spatial = window_output_dims(x.shape[2:], window)
    canonical = _conv_canonical(x, kernel, window, out_spatial,
                                feature_group_count, batch_group_count)
    to_output = [0] * canonical.ndim
    to_output[dims.output_batch] = 0
    to_output[dims.output_feature] = 1
    for k, d in enumerate(dims.output_spatial):
        to_output[d] = 2 + k
    return _from_computation(canonical.transpose(to_output), result_type)
