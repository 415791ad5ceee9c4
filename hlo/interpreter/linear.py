"""The linear family: dot, ragged-dot, scaled-dot and convolution (kernels and handlers).

Arithmetic follows XLA: both operands are converted to the product type (the result
element type, or the operands' common type when the result is less precise: XLA:CPU's
OperandUpcaster and ResultCaster, see shape_inference/element_types.py), then computed in
a *computation type*: f32 for every float narrower than 32 bits
(XLA:CPU upcasts bf16/f16/f8 and rounds the result back), the type itself for
f32/f64/complex, and 64-bit integers for integral and PRED results, wrapped back
to the product type's width at the end, then converted to the result type (wrap-around is exact because integer sums and
products are computed modulo 2**64). Heavy lifting is done by np.matmul, which
calls BLAS for f32/f64/complex. Where the operands already have the result's f32/f64/complex
type and the dimension numbers are a (batched) matrix product, the dot handler calls
np.matmul directly (`_matmul_template`), as dot_general would.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..attributes import ConvDims, DotDims, Window, WindowDim
from ..opcodes import Op
from ..shape_inference import dilated_size, window_output_dims
from ..shape_inference.element_types import product_types
from ..shapes import PrimitiveType, primitive_type, type_of_dtype
from .conversions import convert
from .handlers import HANDLERS, Source, written_as
from .numerics import IEEE_FLOATS
from .values import as_array
from .windows import pad, window_padding_config


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


def _to_computation(x: np.ndarray, product_type: PrimitiveType) -> np.ndarray:
    """Convert an operand to the product type (XLA's convert), then to the computation type."""
    x = np.asarray(x)
    if x.dtype != product_type.dtype:
        x = convert(x, type_of_dtype(x.dtype), product_type)
    return x.astype(_computation_dtype(product_type), copy=False)


def _wrap_subbyte(values: np.ndarray, result_type: PrimitiveType) -> np.ndarray:
    mask = (1 << result_type.bits) - 1
    low = values.astype(np.int64) & mask
    if result_type.is_signed_int:
        half = 1 << (result_type.bits - 1)
        low = np.where(low >= half, low - (mask + 1), low)
    return low.astype(result_type.dtype)


def _from_computation(values: np.ndarray, product_type: PrimitiveType, result_type: PrimitiveType) -> np.ndarray:
    """Round floats / wrap integers back to the product type, then convert to the result type."""
    if product_type.is_pred:
        values = np.asarray(values != 0)  # 0-d comparisons would give numpy scalars
    elif product_type.is_integral and product_type.bits < 8:
        values = _wrap_subbyte(values, product_type)
    else:
        values = values.astype(product_type.dtype)  # int64 -> narrower ints wraps (C cast)
    return values if product_type is result_type else convert(values, product_type, result_type)


def _product_type(lhs: np.ndarray, rhs: np.ndarray, result_type: PrimitiveType) -> PrimitiveType:
    return product_types(type_of_dtype(lhs.dtype), type_of_dtype(rhs.dtype), result_type)


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
    product_type = _product_type(lhs, rhs, result_type)
    # As a batched matmul: [batch, lhs free, contracted] @ [batch, contracted, rhs free].
    a = _to_computation(lhs, product_type).transpose(
        list(dims.lhs_batch) + lhs_free + list(dims.lhs_contracting))
    b = _to_computation(rhs, product_type).transpose(
        list(dims.rhs_batch) + list(dims.rhs_contracting) + rhs_free)
    a = a.reshape(batch, math.prod(lhs_free_shape), contracted)
    b = b.reshape(batch, contracted, math.prod(rhs_free_shape))
    product = np.matmul(a, b).reshape(batch_shape + lhs_free_shape + rhs_free_shape)
    return _from_computation(product, product_type, result_type)


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
    product_type = _product_type(lhs, rhs, result_type)
    x = _to_computation(lhs, product_type).transpose(
        (dims.input_batch, dims.input_feature) + dims.input_spatial)
    kernel = _to_computation(rhs, product_type).transpose(
        (dims.kernel_output_feature, dims.kernel_input_feature) + dims.kernel_spatial)
    out_spatial = window_output_dims(x.shape[2:], window)
    canonical = _conv_canonical(x, kernel, window, out_spatial,
                                feature_group_count, batch_group_count)
    to_output = [0] * canonical.ndim
    to_output[dims.output_batch] = 0
    to_output[dims.output_feature] = 1
    for k, d in enumerate(dims.output_spatial):
        to_output[d] = 2 + k
    return _from_computation(canonical.transpose(to_output), product_type, result_type)


# --------------------------------------------------------------------------- ragged and scaled dots

def ragged_dot(lhs: np.ndarray, rhs: np.ndarray, group_sizes: np.ndarray, dims: DotDims,
               ragged_dims: Sequence[int], group_dims: Sequence[int], result_type) -> np.ndarray:
    """HLO ragged-dot: the lhs ragged dimension is cut into consecutive groups of
    `group_sizes` rows; entries past the last group are zero."""
    if len(ragged_dims) != 1:
        raise ValueError(f"ragged-dot needs exactly one lhs_ragged_dims entry, got {list(ragged_dims)}")
    sizes = np.asarray(group_sizes).astype(np.int64)
    if sizes.ndim != 1:
        raise ValueError("ragged-dot with per-row (vectorised) group_sizes is not supported by the interpreter")
    ragged = ragged_dims[0]
    bounds = np.concatenate([[0], np.cumsum(sizes)])

    def in_group(j: int, array: np.ndarray, axis: int) -> np.ndarray:
        """Mask (broadcastable to array) of the positions of group j along axis."""
        positions = np.arange(array.shape[axis])
        shape = [1] * array.ndim
        shape[axis] = array.shape[axis]
        return ((positions >= bounds[j]) & (positions < bounds[j + 1])).reshape(shape)

    zero = np.zeros((), lhs.dtype)
    if ragged in dims.lhs_contracting:  # one output slice per group, contracting its k-range
        return np.stack([dot_general(np.where(in_group(j, lhs, ragged), lhs, zero), rhs, dims,
                                            result_type) for j in range(len(sizes))])
    if ragged in dims.lhs_batch:  # an ordinary batched dot; batch entries past the groups are 0
        out = dot_general(lhs, rhs, dims, result_type)
        axis = list(dims.lhs_batch).index(ragged)
        covered = np.zeros(out.shape[axis], dtype=bool)
        covered[:min(int(bounds[-1]), out.shape[axis])] = True
        shape = [1] * out.ndim
        shape[axis] = out.shape[axis]
        return np.where(covered.reshape(shape), out, np.zeros((), out.dtype))
    if len(group_dims) != 1:
        raise ValueError("ragged-dot with a non-contracting ragged dim needs one rhs_group_dims entry")
    g = group_dims[0]

    def without_g(ds):
        return tuple(d - (d > g) for d in ds)

    inner = DotDims(dims.lhs_batch, dims.lhs_contracting, without_g(dims.rhs_batch),
                    without_g(dims.rhs_contracting))
    free = [d for d in range(lhs.ndim) if d not in dims.lhs_batch and d not in dims.lhs_contracting]
    out_axis = len(dims.lhs_batch) + free.index(ragged)
    total = None
    for j in range(len(sizes)):
        part = dot_general(lhs, np.take(rhs, j, axis=g), inner, result_type)
        if total is None:
            total = np.zeros_like(part)
        total = np.where(in_group(j, part, out_axis), part, total)
    if total is None:
        raise ValueError("ragged-dot needs at least one group")
    return total


def scaled_dot(lhs, rhs, lhs_scale, rhs_scale, dims: DotDims, result_type) -> np.ndarray:
    """HLO scaled-dot: dequantise each operand by its block scales, then dot."""
    f32 = primitive_type("f32")

    def dequantise(data: np.ndarray, scale: np.ndarray) -> np.ndarray:
        values = convert(data, type_of_dtype(data.dtype), f32)
        factors = convert(scale, type_of_dtype(scale.dtype), f32)
        if factors.ndim != values.ndim:
            raise ValueError(f"scale rank {factors.ndim} differs from operand rank {values.ndim}")
        for axis, (n, s) in enumerate(zip(values.shape, factors.shape)):
            if s != n:
                if s == 0 or n % s:
                    raise ValueError(f"scale dimension {axis} of size {s} does not divide {n}")
                factors = np.repeat(factors, n // s, axis=axis)
        return convert(values * factors, f32, result_type)

    return dot_general(dequantise(lhs, lhs_scale), dequantise(rhs, rhs_scale), dims, result_type)


# --------------------------------------------------------------------------- dot as one np.matmul

def _matmul_template(lhs_rank: int, rhs_rank: int, dims: DotDims) -> Optional[str]:
    """The dot as one np.matmul when its dimension numbers are a (batched) matrix
    product up to a swap of the last two axes of an operand: a Python expression
    of `matmul`, `{0}` (lhs) and `{1}` (rhs); else None.

    Only for operands already of the result's float type, where dot_general would
    make the same BLAS call on the same values."""
    b = len(dims.lhs_batch)
    batch = tuple(range(b))
    if (dims.lhs_batch != batch or dims.rhs_batch != batch or len(dims.lhs_contracting) != 1
            or len(dims.rhs_contracting) != 1):
        return None
    lc, rc = dims.lhs_contracting[0], dims.rhs_contracting[0]
    if b == 0 and lc == lhs_rank - 1 and rhs_rank <= 2:  # [..., k] @ [k, n]: matmul broadcasts
        return "matmul({0}, {1})" if rc == 0 or rhs_rank == 1 else "matmul({0}, {1}.T)"
    if lhs_rank != b + 2 or rhs_rank not in (b + 1, b + 2):
        return None
    if lc not in (b, b + 1) or rc not in (b, b + 1):
        return None
    lhs = "{0}.swapaxes(-1, -2)" if lc == b else "{0}"
    if rhs_rank == b + 1:
        return f"matmul({lhs}, {{1}}[..., None])[..., 0]" if rc == b else None
    rhs = "{1}.swapaxes(-1, -2)" if rc == b + 1 else "{1}"
    return f"matmul({lhs}, {rhs})"


_MATMUL_FORMS: dict[str, Callable] = {}


def _matmul_form(lhs: np.ndarray, rhs: np.ndarray, dims: DotDims) -> Optional[np.ndarray]:
    """The dot as one np.matmul (see _matmul_template), or None."""
    template = _matmul_template(lhs.ndim, rhs.ndim, dims)
    if template is None:
        return None
    form = _MATMUL_FORMS.get(template)
    if form is None:
        form = _MATMUL_FORMS[template] = eval("lambda a, b: " + template.format("a", "b"), {"matmul": np.matmul})
    return form(lhs, rhs)


def _write_dot(src: Source) -> Optional[str]:
    inst = src.inst
    lhs, rhs = src.in_types
    if not (lhs == rhs == inst.shape.element_type.dtype and lhs in IEEE_FLOATS):
        return None
    template = _matmul_template(inst.operands[0].shape.rank, inst.operands[1].shape.rank, DotDims.of(inst))
    if template is None:
        return None
    return template.replace("matmul", src.bind(np.matmul)).format(*src.args)


# --------------------------------------------------------------------------- handlers

@HANDLERS.register(Op.DOT)
@written_as(_write_dot)
def run_dot(ev, inst, ops):
    lhs, rhs = ops
    dims = ev.plans.attribute(inst, DotDims.of)
    if lhs.dtype == rhs.dtype == inst.shape.element_type.dtype and lhs.dtype in IEEE_FLOATS:
        product = _matmul_form(lhs, rhs, dims)
        if product is not None:
            return as_array(product)
    return dot_general(lhs, rhs, dims, inst.shape.element_type)


@HANDLERS.register(Op.RAGGED_DOT)
def run_ragged_dot(ev, inst, ops):
    return ragged_dot(ops[0], ops[1], ops[2], DotDims.of(inst), inst.attrs["lhs_ragged_dims"],
                      inst.attrs.get("rhs_group_dims", ()), inst.shape.element_type)


@HANDLERS.register(Op.SCALED_DOT)
def run_scaled_dot(ev, inst, ops):
    return scaled_dot(ops[0], ops[1], ops[2], ops[3], DotDims.of(inst), inst.shape.element_type)


@HANDLERS.register(Op.CONVOLUTION)
def run_convolution(ev, inst, ops):
    dims: ConvDims = inst.attrs["dim_labels"]
    window = inst.attrs.get("window")
    if window is None:  # no window= : the kernel's full extent, stride 1, no padding
        window = Window(tuple(WindowDim(ops[1].shape[d]) for d in dims.kernel_spatial))
    return convolution(ops[0], ops[1], window, dims, inst.attrs.get("feature_group_count", 1),
                       inst.attrs.get("batch_group_count", 1), inst.shape.element_type)
