"""The window family: reduce, reduce-window and select-and-scatter (kernels and handlers),
the pad kernel and the shared window geometry helpers.

A window (the `window={size=... stride=... pad=... lhs_dilate=... rhs_dilate=...}`
attribute) is described by `Window`, one `WindowDim` per operand dimension. All
kernels here follow XLA's evaluator: the base (lhs) dilation inserts holes between
input elements, padding extends (or, when negative, crops) the dilated base, and a
window position reads the taps `o*stride - pad_low + w*window_dilation`; taps that
land on padding or holes are skipped rather than read. (The window arithmetic is
shape inference's; the kernels share it.)

Called computations arrive as `Combiner`s and are applied to whole arrays: the
loops below run over window taps, tree levels or scatter rounds, never over
output elements. A reduce whose computation is a single numpy ufunc (add, max ...)
is one numpy reduction where numpy computes exactly what XLA does.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..attributes import Window, WindowDim
from ..opcodes import Op
from ..runtime.resources import check_allocation
from ..shape_inference import window_output_dims
from ..shapes import type_of_dtype
from .combiner import Combiner, binary_ufunc
from .elementwise import FAST_FLOAT_BINARY
from .handlers import HANDLERS, Source, written_as
from .numerics import BOOL, IEEE_FLOATS, NATIVE_INTS, REAL_FLOATS
from .reduction_order import is_reshape, reduce_in_order, reduced_first, window_as_reduce_dims
from .values import as_array, as_tuple_if, broadcast_view


# --------------------------------------------------------------------------- window attribute

def window_padding_config(window: Window) -> tuple[tuple[int, int, int], ...]:
    """The pad config (low, high, interior) that builds a window's padded, dilated base."""
    return tuple((wd.padding_low, wd.padding_high, wd.base_dilation - 1) for wd in window.dims)


def _window_has_holes(window: Window) -> bool:
    return any(wd.padding_low or wd.padding_high or wd.base_dilation > 1 for wd in window.dims)


def _tap_slices(tap: Sequence[int], window: Window, out_dims: Sequence[int]) -> tuple:
    """Index selecting, in the padded base, tap `tap` of every window position."""
    slices = []
    for w, wd, o in zip(tap, window.dims, out_dims):
        start = w * wd.window_dilation
        slices.append(slice(start, start + (o - 1) * wd.stride + 1, wd.stride))
    return tuple(slices) + (Ellipsis,)  # Ellipsis keeps rank-0 results as arrays


def _taps(window: Window):
    """Window tap offsets in row-major order."""
    return itertools.product(*(range(wd.size) for wd in window.dims))


def _real_cells_mask(shape: Sequence[int], window: Window) -> Optional[np.ndarray]:
    """Boolean padded-base mask of real input elements, or None if every cell is real."""
    if not _window_has_holes(window):
        return None
    return pad(np.ones(shape, dtype=bool), np.array(False), window_padding_config(window))


# --------------------------------------------------------------------------- pad


def _pad_output_dims(in_dims, config) -> tuple[int, ...]:
    if len(config) != len(in_dims):
        raise ValueError(f"padding config has {len(config)} dimensions but the operand has "
                         f"{len(in_dims)}")
    out = []
    for k, (n, (lo, hi, interior)) in enumerate(zip(in_dims, config)):
        if interior < 0:
            raise ValueError(f"pad dimension {k}: negative interior padding {interior}")
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ValueError(f"pad dimension {k}: padding {lo}_{hi}_{interior} of {n} "
                             f"elements gives negative size {size}")
        out.append(size)
    return tuple(out)


def _pad_copy_slices(n: int, lo: int, interior: int, size: int) -> tuple[slice, slice]:
    """(source slice, destination slice) of the elements that survive cropping.

    Source element i lands at lo + i*(interior+1); keep those inside [0, size).
    """
    step = interior + 1
    first = 0 if lo >= 0 else (-lo + step - 1) // step  # ceil(-lo / step)
    room = size - 1 - lo  # largest offset i*step that still fits
    last = min(n - 1, room // step) if room >= 0 else -1
    if last < first:
        return slice(0, 0), slice(0, 0)
    dst_start = lo + first * step
    return slice(first, last + 1), slice(dst_start, dst_start + (last - first) * step + 1, step)


def pad(operand: np.ndarray, padding_value, config: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """HLO pad: per dim (low, high, interior); negative low/high crop."""
    operand = np.asarray(operand)
    out_dims = _pad_output_dims(operand.shape, config)
    check_allocation(math.prod(out_dims) * operand.dtype.itemsize, f"padding to {list(out_dims)}")
    result = np.full(out_dims, padding_value, dtype=operand.dtype)
    src, dst = [], []
    for n, (lo, _, interior), size in zip(operand.shape, config, out_dims):
        s, d = _pad_copy_slices(n, lo, interior, size)
        src.append(s)
        dst.append(d)
    result[tuple(dst) + (Ellipsis,)] = operand[tuple(src) + (Ellipsis,)]
    return result


# --------------------------------------------------------------------------- combiner helpers


def _apply(combiner: Combiner, args: Sequence[np.ndarray], dtypes: Sequence[np.dtype]
           ) -> list[np.ndarray]:
    """Call a combiner on arrays; results broadcast to the args' shape, cast to dtypes."""
    results = combiner(*args)
    if len(results) != len(dtypes):
        raise ValueError(f"{combiner.name} returned {len(results)} values, expected {len(dtypes)}")
    shape = args[0].shape if all(type(a) is np.ndarray and a.shape == args[0].shape for a in args) \
        else np.broadcast_shapes(*(np.shape(a) for a in args))
    out = []
    for r, dt in zip(results, dtypes):
        if type(r) is not np.ndarray or r.dtype != dt or r.shape != shape:  # (the common case costs nothing)
            r = np.broadcast_to(np.asarray(r, dtype=dt), shape)
        out.append(r)
    return out


def _is_subbyte_int(dtype: np.dtype) -> bool:
    try:
        t = type_of_dtype(dtype)
    except KeyError:
        return False
    return t.is_integral and t.bits < 8


def _ufunc_fast_path(combiner: Combiner, inputs, inits) -> Optional[np.ufunc]:
    """The combiner's ufunc when it can replace calls to the combiner, else None.

    Needs a single input of the init's dtype; sub-byte ints are excluded because
    numpy widens them (int4 max int4 -> int8).
    """
    if combiner.ufunc is None or len(inputs) != 1:
        return None
    dtype = inits[0].dtype
    if inputs[0].dtype != dtype or _is_subbyte_int(dtype):
        return None
    return combiner.ufunc


def _binary(ufunc: np.ufunc, dtype: np.dtype) -> Callable:
    """ufunc as a binary kernel of dtype: for maximum/minimum of floats the IEEE one, which
    orders -0 < +0 as XLA does (numpy's does not)."""
    if ufunc in (np.maximum, np.minimum) and _is_float(dtype):
        return FAST_FLOAT_BINARY[Op.MAXIMUM if ufunc is np.maximum else Op.MINIMUM]
    return ufunc


def _is_float(dtype: np.dtype) -> bool:
    try:
        return type_of_dtype(dtype).is_float
    except KeyError:
        return False


def _accumulation_dtype(ufunc: np.ufunc, dtype: np.dtype) -> np.dtype:
    """Sums and products of sub-f32 floats accumulate in f32 (like XLA:CPU)."""
    if ufunc in (np.add, np.multiply):
        try:
            t = type_of_dtype(dtype)
        except KeyError:
            return dtype
        if t.is_float and t.bits < 32:
            return np.dtype(np.float32)
    return dtype


def _check_variadic(operands, inits, what: str) -> None:
    if len(operands) == 0 or len(operands) != len(inits):
        raise ValueError(f"{what} needs N >= 1 operands and as many init values, got "
                         f"{len(operands)} and {len(inits)}")
    for i, init in enumerate(inits):
        if np.ndim(init) != 0:
            raise ValueError(f"{what}: init value {i} must be a scalar, got shape {np.shape(init)}")
    shape = operands[0].shape
    for i, x in enumerate(operands):
        if x.shape != shape:
            raise ValueError(f"{what}: operand {i} has shape {x.shape}, operand 0 has {shape}")


# --------------------------------------------------------------------------- reduce


def reduce(operands: Sequence[np.ndarray], inits: Sequence[np.ndarray],
           dimensions: Sequence[int], combiner: Combiner) -> list[np.ndarray]:
    """HLO (variadic) reduce of `operands` over `dimensions`, one result per operand, in XLA:CPU's
    order (reduction_order.py): a reducer that is not associative gives XLA:CPU's result."""
    operands = [np.asarray(x) for x in operands]
    inits = [np.asarray(v) for v in inits]
    _check_variadic(operands, inits, "reduce")
    rank = operands[0].ndim
    dims = tuple(sorted(dimensions))
    if len(set(dims)) != len(dims) or any(d < 0 or d >= rank for d in dims):
        raise ValueError(f"reduce: dimensions {tuple(dimensions)} must be distinct "
                         f"and in [0, {rank})")
    dtypes = [v.dtype for v in inits]
    kept_shape = tuple(n for d, n in enumerate(operands[0].shape) if d not in dims)
    if operands[0].size == 0:
        return [np.full(kept_shape, v, dtype=v.dtype) for v in inits]
    if is_reshape(operands[0].shape, dims):  # XLA:CPU keeps the elements (init is taken as the identity)
        return [x.reshape(kept_shape).astype(dt, copy=False) for x, dt in zip(operands, dtypes)]
    ufunc = _ufunc_fast_path(combiner, operands, inits)
    if ufunc is not None:
        acc_dtype = _accumulation_dtype(ufunc, dtypes[0])
        values = reduced_first(operands[0], dims).astype(acc_dtype, copy=False)
        total = ufunc.reduce(values, axis=0, dtype=acc_dtype)
        start = np.full(kept_shape, inits[0], dtype=acc_dtype)
        if ufunc in (np.maximum, np.minimum) and _is_float(acc_dtype):
            # numpy does not order zeros: -0 < +0 in XLA's maximum and minimum
            total = _signed_zero_extremum(values, (0,), total, ufunc is np.maximum)
        return [np.asarray(_binary(ufunc, acc_dtype)(start, total)).astype(dtypes[0])]
    results = reduce_in_order(lambda args: _apply(combiner, args, dtypes), operands, inits, dims)
    return [np.array(a) for a in results]


def reduce_with(combiner: Combiner, operands: Sequence[np.ndarray], inits: Sequence[np.ndarray],
                dims: tuple[int, ...]) -> list[np.ndarray]:
    """A reduce by a called computation: one numpy reduction where that is exact, else `reduce`."""
    if len(operands) == 1 and combiner.ufunc is not None and not is_reshape(operands[0].shape, dims):
        total = _ufunc_reduce(operands[0], inits[0], dims, combiner.ufunc)
        if total is not None:
            return [total]
    return reduce(operands, inits, dims, combiner)


# --------------------------------------------------------------------------- reduce-window


def reduce_window(operands: Sequence[np.ndarray], inits: Sequence[np.ndarray], window: Window,
                  combiner: Combiner) -> list[np.ndarray]:
    """HLO (variadic) reduce-window; padding and base-dilation holes are skipped. As in XLA:CPU,
    a scalar reduce-window is its operand, and one that reduces whole dimensions a reduce."""
    operands = [np.asarray(x) for x in operands]
    inits = [np.asarray(v) for v in inits]
    _check_variadic(operands, inits, "reduce-window")
    shape = operands[0].shape
    if not shape:
        return [x.astype(v.dtype, copy=False) for x, v in zip(operands, inits)]
    out_dims = window_output_dims(shape, window)
    dtypes = [v.dtype for v in inits]
    accs = [np.full(out_dims, v, dtype=v.dtype) for v in inits]
    if math.prod(out_dims) == 0:
        return accs
    whole = window_as_reduce_dims(window, shape)
    if whole is not None:
        return [r.reshape(out_dims) for r in reduce_with(combiner, operands, inits, whole)]
    config = window_padding_config(window)
    padded = [pad(x, np.zeros((), x.dtype), config) for x in operands]
    valid = _real_cells_mask(shape, window)
    ufunc = _ufunc_fast_path(combiner, operands, inits)
    binary = _binary(ufunc, dtypes[0]) if ufunc is not None else None
    for tap in _taps(window):
        index = _tap_slices(tap, window, out_dims)
        xs = [p[index] for p in padded]
        if binary is not None:
            new = [np.asarray(binary(accs[0], xs[0])).astype(dtypes[0], copy=False)]
        else:
            new = _apply(combiner, accs + xs, dtypes)
        if valid is not None:
            real = valid[index]
            new = [np.where(real, n, a) for n, a in zip(new, accs)]
        accs = new
    return [np.array(a) for a in accs]


# --------------------------------------------------------------------------- select-and-scatter


def _select_in_windows(operand: np.ndarray, window: Window, out_dims, select: Combiner
                       ) -> np.ndarray:
    """Flat operand index picked in every window (-1 when the window holds only padding).

    Walks the taps in row-major order keeping a current pick; a real candidate
    replaces the pick when there is none yet or select(pick, candidate) is false.
    """
    config = window_padding_config(window)
    padded = pad(operand, np.zeros((), operand.dtype), config)
    flat_index = pad(np.arange(operand.size).reshape(operand.shape), np.array(-1), config)
    best_value: Optional[np.ndarray] = None
    best_index = np.full(out_dims, -1, dtype=np.int64)
    for tap in _taps(window):
        index = _tap_slices(tap, window, out_dims)
        candidate, candidate_index = padded[index], flat_index[index]
        real = candidate_index >= 0
        if best_value is None:
            take = real
        else:
            keep = _apply(select, [best_value, candidate], [np.dtype(bool)])[0]
            take = real & ((best_index < 0) | ~keep)
        best_value = candidate if best_value is None else np.where(take, candidate, best_value)
        best_index = np.where(take, candidate_index, best_index)
    return best_index


def _occurrence_rank(targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable order sorting targets, rank of each sorted entry among equal targets)."""
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    positions = np.arange(len(ordered))
    group_start = np.ones(len(ordered), dtype=bool)
    group_start[1:] = ordered[1:] != ordered[:-1]
    first_of_group = np.maximum.accumulate(np.where(group_start, positions, 0))
    return order, positions - first_of_group


def select_and_scatter(operand: np.ndarray, source: np.ndarray, init, window: Window,
                       select: Combiner, scatter: Combiner) -> np.ndarray:
    """HLO select-and-scatter: scatter each source value onto the element its window selects.

    Values landing on the same element combine in source row-major order as
    scatter(current output, source value) (the XLA:CPU argument order).
    """
    operand, source, init = np.asarray(operand), np.asarray(source), np.asarray(init)
    if init.ndim != 0:
        raise ValueError(f"select-and-scatter: init value must be a scalar, got shape {init.shape}")
    out_dims = window_output_dims(operand.shape, window)
    if tuple(source.shape) != out_dims:
        raise ValueError(f"select-and-scatter: source shape {source.shape} must equal the "
                         f"window output shape {out_dims}")
    result = np.full(operand.shape, init, dtype=init.dtype)
    if source.size == 0 or operand.size == 0:
        return result
    targets = _select_in_windows(operand, window, out_dims, select).reshape(-1)
    values = source.reshape(-1)
    chosen = targets >= 0
    targets, values = targets[chosen], values[chosen]
    order, rank = _occurrence_rank(targets)
    flat = result.reshape(-1)
    # Each round updates distinct elements, so a vectorised write is safe.
    for r in range(int(rank.max()) + 1 if len(rank) else 0):
        picks = order[rank == r]
        where = targets[picks]
        flat[where] = _apply(scatter, [flat[where], values[picks]], [result.dtype])[0]
    return result


# --------------------------------------------------------------------------- reduce as one numpy reduction

_REDUCIBLE = {
    np.add: IEEE_FLOATS | NATIVE_INTS, np.multiply: IEEE_FLOATS | NATIVE_INTS,
    np.maximum: REAL_FLOATS | NATIVE_INTS, np.minimum: REAL_FLOATS | NATIVE_INTS,
    np.bitwise_and: NATIVE_INTS | {BOOL}, np.bitwise_or: NATIVE_INTS | {BOOL},
    np.bitwise_xor: NATIVE_INTS | {BOOL},
}


def _ufunc_reduce(x: np.ndarray, init: np.ndarray, dims: tuple[int, ...], ufunc: np.ufunc
                  ) -> Optional[np.ndarray]:
    """reduce(x, init) with a computation that is `ufunc`, as one numpy reduction, for
    the dtypes where numpy computes exactly what XLA does; None where it does not apply."""
    if not _ufunc_reducible(x.dtype, init.dtype, x.size, init.ndim, ufunc):
        return None
    return _exact_ufunc_reduce(x, init, dims, ufunc)


def _ufunc_reducible(x_dtype, init_dtype, size: int, init_rank: int, ufunc: np.ufunc) -> bool:
    return x_dtype == init_dtype and x_dtype in _REDUCIBLE.get(ufunc, ()) and size > 0 and init_rank == 0


def _exact_ufunc_reduce(x: np.ndarray, init: np.ndarray, dims: tuple[int, ...], ufunc: np.ufunc) -> np.ndarray:
    """_ufunc_reduce where _ufunc_reducible holds."""
    total = as_array(ufunc.reduce(x, axis=dims, dtype=x.dtype))  # (numpy would widen small ints)
    if x.dtype in REAL_FLOATS and ufunc in (np.maximum, np.minimum):
        total = _signed_zero_extremum(x, dims, total, ufunc is np.maximum)
        if init == (-np.inf if ufunc is np.maximum else np.inf):
            return total  # the identity: max(-inf, t) = t, NaN and signed zeros included
        return FAST_FLOAT_BINARY[Op.MAXIMUM if ufunc is np.maximum else Op.MINIMUM](
            broadcast_view(init.reshape((1,) * total.ndim), total.shape), total)
    return as_array(ufunc(init, total))


def _signed_zero_extremum(x: np.ndarray, dims, total: np.ndarray, is_max: bool) -> np.ndarray:
    """Fix the sign of zero maxima/minima: +0 beats -0 in a maximum, -0 in a minimum."""
    zero = total == 0
    if not zero.any():
        return total
    sign = np.signbit(x)
    wanted = ~sign if is_max else sign
    found = np.logical_or.reduce((x == 0) & wanted, axis=dims)
    signed_zero = x.dtype.type(0.0) if is_max else x.dtype.type(-0.0)
    other_zero = -signed_zero
    return np.where(zero, np.where(found, signed_zero, other_zero), total)


def _write_reduce(src: Source) -> Optional[str]:
    inst = src.inst
    if len(src.args) != 2:
        return None
    ufunc = binary_ufunc(inst.attrs["to_apply"])
    x_shape, init_shape = inst.operands[0].shape, inst.operands[1].shape
    if ufunc is None or not _ufunc_reducible(src.in_types[0], src.in_types[1], x_shape.element_count(),
                                             init_shape.rank, ufunc):
        return None
    dims = tuple(int(d) for d in inst.attrs["dimensions"])
    if is_reshape(x_shape.dims, dims):
        return None
    return f"{src.bind(_exact_ufunc_reduce)}({src.args[0]}, {src.args[1]}, {dims!r}, {src.bind(ufunc)})"


# --------------------------------------------------------------------------- handlers

def _window_of(inst, rank: int) -> Window:
    """The instruction's window; without window=, size 1 in each of `rank` dimensions."""
    return inst.attrs.get("window") or Window(tuple(WindowDim(1) for _ in range(rank)))


@HANDLERS.register(Op.REDUCE)
@written_as(_write_reduce)
def run_reduce(ev, inst, ops):
    n = len(ops) // 2
    results = reduce_with(ev.combiner(inst.attrs["to_apply"]), ops[:n], ops[n:], tuple(inst.attrs["dimensions"]))
    return as_tuple_if(inst.shape, results)


@HANDLERS.register(Op.REDUCE_WINDOW)
def run_reduce_window(ev, inst, ops):
    n = len(ops) // 2
    results = reduce_window(ops[:n], ops[n:], _window_of(inst, ops[0].ndim), ev.combiner(inst.attrs["to_apply"]))
    return as_tuple_if(inst.shape, results)


@HANDLERS.register(Op.SELECT_AND_SCATTER)
def run_select_and_scatter(ev, inst, ops):
    return select_and_scatter(ops[0], ops[1], ops[2], _window_of(inst, ops[0].ndim),
                              ev.combiner(inst.attrs["select"]), ev.combiner(inst.attrs["scatter"]))
