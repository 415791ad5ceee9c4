"""XLA:CPU's order of reduction, which decides the result when a reducer is not associative.

XLA leaves the order of a reduction unspecified; XLA:CPU's is, for each output element:

* `acc = init`, then `acc = f(acc, x)` for each reduced element in row-major order of the
  operand's logical index (whatever its layout), one after the other;
* except that a single-operand reduce with a reduced dimension longer than 32 is first
  rewritten (its tree reduction rewriter, run to a fixed point) into a reduce-window with
  windows of min(n, 32) elements and strides as long, padded as `SAME` (padding skipped), and
  the reduce of that: each window is folded serially from `init`, then the window results;
* a reduce whose result has as many elements as its operand is the operand itself (its
  algebraic simplifier assumes `init` is the reducer's identity), and so is a reduce-window of
  a scalar; a reduce-window that covers whole dimensions, without strides, dilation or
  padding, is a reduce over them.

XLA:CPU's algebraic simplifier also rewrites the graph around reductions (merging a reduce of a
reduce, reducing the operand of a transpose or reshape directly...), assuming associativity;
such rewrites are not reproduced here: they change results only for reducers that are not.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..attributes import Window

TREE_WINDOW = 32  # the window of XLA:CPU's tree reduction rewriter

# apply(values of the reducer's parameters) -> its results, cast to the accumulators' dtypes
Apply = Callable[[list[np.ndarray]], list[np.ndarray]]


def is_reshape(in_dims: Sequence[int], dims: Sequence[int]) -> bool:
    """True if a reduce over `dims` keeps every element (all reduced dimensions have size 1)."""
    return math.prod(in_dims[d] for d in dims) == 1


def serial_fold(apply: Apply, accs: list[np.ndarray], values: list[np.ndarray]) -> list[np.ndarray]:
    """acc = f(acc, v[j]) for j along axis 0 of each value, vectorised over the other axes."""
    for j in range(values[0].shape[0]):
        accs = apply(accs + [v[j] for v in values])
    return accs


def reduced_first(x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """x with the reduced dims moved to the front, in order, and flattened into one (row-major)."""
    kept_shape = tuple(n for d, n in enumerate(x.shape) if d not in dims)
    moved = np.moveaxis(x, tuple(dims), tuple(range(len(dims))))
    return moved.reshape((math.prod(x.shape[d] for d in dims),) + kept_shape)


def reduce_in_order(apply: Apply, operands: list[np.ndarray], inits: list[np.ndarray],
                    dims: Sequence[int]) -> list[np.ndarray]:
    """A reduce (operands without zero-size dimensions) in XLA:CPU's order."""
    dims = tuple(sorted(dims))
    if len(operands) == 1:
        x = operands[0]
        while any(x.shape[d] > TREE_WINDOW for d in dims):
            x = _window_level(apply, x, inits[0], dims)
        operands = [x]
    values = [reduced_first(x, dims) for x in operands]
    kept_shape = values[0].shape[1:]
    starts = [np.full(kept_shape, v, dtype=v.dtype) for v in inits]
    return serial_fold(apply, starts, values)


def _window_level(apply: Apply, x: np.ndarray, init: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """One tree-rewriter step: windows of min(n, 32) along each reduced dim, `SAME` padding,
    each window folded serially from init over its real elements (taps in row-major order)."""
    widths = {d: min(x.shape[d], TREE_WINDOW) for d in dims}
    outs = {d: -(-x.shape[d] // widths[d]) for d in dims}
    lows = {d: (outs[d] * widths[d] - x.shape[d]) // 2 for d in dims}
    padding = [(lows[d], outs[d] * widths[d] - x.shape[d] - lows[d]) if d in dims else (0, 0)
               for d in range(x.ndim)]
    padded = np.pad(x, padding)
    split = []
    for d in range(x.ndim):
        split += [outs[d], widths[d]] if d in dims else [x.shape[d]]
    blocks = padded.reshape(split)
    tap_axes = [d + 1 + k for k, d in enumerate(dims)]  # the (width) axis after each (out) axis
    blocks = np.moveaxis(blocks, tap_axes, range(blocks.ndim - len(dims), blocks.ndim))
    out_shape = blocks.shape[:x.ndim]
    acc = np.full(out_shape, init, dtype=init.dtype)
    for tap in np.ndindex(*(widths[d] for d in dims)):
        real = _real_positions(tap, dims, widths, outs, lows, x.shape, x.ndim)
        new = apply([acc, blocks[(Ellipsis,) + tap]])[0]
        acc = new if real is None else np.where(real, new, acc)
    return acc


def _real_positions(tap, dims, widths, outs, lows, in_shape, rank) -> Optional[np.ndarray]:
    """Mask over the window positions whose tap `tap` reads an element (not padding)."""
    mask = None
    for k, d in enumerate(dims):
        position = np.arange(outs[d]) * widths[d] + tap[k] - lows[d]
        inside = (position >= 0) & (position < in_shape[d])
        if inside.all():
            continue
        shape = [1] * rank
        shape[d] = outs[d]
        inside = inside.reshape(shape)
        mask = inside if mask is None else mask & inside
    return mask


def window_as_reduce_dims(window: Window, in_dims: Sequence[int]) -> Optional[tuple[int, ...]]:
    """The dimensions a reduce-window reduces whole, when it is a reduce in disguise (no
    stride, dilation or padding; each window is 1 or the whole dimension); else None."""
    dims = []
    for d, (wd, n) in enumerate(zip(window.dims, in_dims)):
        if (wd.stride != 1 or wd.base_dilation != 1 or wd.window_dilation != 1
                or wd.padding_low or wd.padding_high):
            return None
        if wd.size != 1:
            if wd.size != n:
                return None
            dims.append(d)
    return tuple(dims) or None
