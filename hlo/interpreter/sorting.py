"""The sorting family: `sort` with an arbitrary comparator, and `topk` (kernels and handlers;
`topk` also serves XLA:CPU's "TopK" custom-call target).

`sort` never looks inside the comparator (JAX emits comparators with TOTALORDER bit
tricks, multi-key tie breaks, ...); it only calls it, vectorised over many pairs:

* short lanes: every pair of a lane is compared in one comparator call and each
  element's position is counted from the results (rank counting);
* long lanes: a bottom-up merge sort whose merge passes place every element with a
  vectorised binary search into the partner run, one comparator call per search
  step for all lanes and runs at once (about log2(n)^2 / 2 calls in total).

Both are stable, which also satisfies is_stable=false. With a comparator that is not
a strict weak order the result is still a permutation of the input.

`topk` orders by XLA's total order (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN)
with ties broken by the lower index, as XLA:CPU's TopK runtime does.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..opcodes import Op
from .combiner import Combiner
from .control import register_custom_call
from .handlers import HANDLERS
from .numerics import is_float_like
from .values import as_tuple_if

# Rank counting compares rows * n * n pairs in one call; beyond this, merge sort wins.
_ALL_PAIRS_LIMIT = 1 << 18


def _less(comparator: Combiner, lhs: Sequence[np.ndarray], rhs: Sequence[np.ndarray],
          shape: tuple[int, ...]) -> np.ndarray:
    """comparator(lhs0, rhs0, lhs1, rhs1, ...) as a bool array of `shape`."""
    args = [a for pair in zip(lhs, rhs) for a in pair]
    result = comparator(*args)
    return np.broadcast_to(np.asarray(result[0]).astype(bool, copy=False), shape)


# --------------------------------------------------------------------------- rank counting


def _all_pairs_order(lanes: list[np.ndarray], comparator: Combiner) -> np.ndarray:
    """Sorted order of each lane (rows, n) from all n*n comparisons of the lane."""
    rows, n = lanes[0].shape
    shape = (rows, n, n)
    lhs = [np.ascontiguousarray(np.broadcast_to(lane[:, :, None], shape)) for lane in lanes]
    rhs = [np.ascontiguousarray(np.broadcast_to(lane[:, None, :], shape)) for lane in lanes]
    less = _less(comparator, lhs, rhs, shape)          # less[r, i, j] = e_i < e_j
    greater = np.swapaxes(less, 1, 2)                  # greater[r, i, j] = e_j < e_i
    equivalent = ~less & ~greater
    earlier = np.tril(np.ones((n, n), dtype=bool), -1)  # j < i
    # Element i goes after every smaller element and after earlier equivalent ones.
    position = greater.sum(axis=2) + (equivalent & earlier).sum(axis=2)
    return np.argsort(position, axis=1, kind="stable")


# --------------------------------------------------------------------------- merge sort


def _merge_pass(lanes: list[np.ndarray], perm: np.ndarray, n: int, width: int,
                comparator: Combiner) -> np.ndarray:
    """Merge neighbouring sorted runs of `width` in every lane; returns the new order.

    perm holds, per lane, indices into the lane; indices >= n are padding, which
    sorts after every real element. Each element of a run counts, by binary
    search, the partner-run elements that go before it (for the left run those
    strictly less, for the right run those not greater: ties keep left first).
    """
    rows, size = perm.shape
    runs = size // (2 * width)
    blocks = perm.reshape(rows, runs, 2, width)
    pad = blocks >= n
    own = np.minimum(blocks, n - 1)
    partner = own[:, :, ::-1, :]
    partner_pad = pad[:, :, ::-1, :]
    is_left = np.zeros((1, 1, 2, 1), dtype=bool)
    is_left[:, :, 0, :] = True

    def values_at(index):
        flat = index.reshape(rows, size)
        return [np.take_along_axis(lane, flat, axis=1).reshape(blocks.shape) for lane in lanes]

    lo = np.zeros(blocks.shape, dtype=np.int64)
    hi = np.full(blocks.shape, width, dtype=np.int64)
    for _ in range(width.bit_length()):
        mid = np.minimum((lo + hi) // 2, width - 1)
        probe = np.take_along_axis(partner, mid, axis=-1)
        probe_pad = np.take_along_axis(partner_pad, mid, axis=-1)
        # Left element x asks "probe < x"; right element y asks "not y < probe".
        lhs_pad = np.where(is_left, probe_pad, pad)
        rhs_pad = np.where(is_left, pad, probe_pad)
        less = _less(comparator, values_at(np.where(is_left, probe, own)),
                     values_at(np.where(is_left, own, probe)), blocks.shape)
        less = np.where(lhs_pad | rhs_pad, ~lhs_pad & rhs_pad, less)
        goes_before = np.where(is_left, less, ~less)
        active = lo < hi
        lo = np.where(active & goes_before, mid + 1, lo)
        hi = np.where(active & ~goes_before, mid, hi)

    position = np.arange(width) + lo
    # argsort (rather than scattering to `position`) keeps a permutation even when a
    # broken comparator produces colliding positions.
    key = (position * 2 + (~is_left)).reshape(rows, runs, 2 * width)
    order = np.argsort(key, axis=-1, kind="stable")
    merged = np.take_along_axis(blocks.reshape(rows, runs, 2 * width), order, axis=-1)
    return merged.reshape(rows, size)


def _merge_sort_order(lanes: list[np.ndarray], comparator: Combiner) -> np.ndarray:
    """Sorted order of each lane (rows, n) by bottom-up merge sort."""
    rows, n = lanes[0].shape
    size = 1 << (n - 1).bit_length()
    perm = np.broadcast_to(np.arange(size), (rows, size)).copy()
    width = 1
    while width < size:
        perm = _merge_pass(lanes, perm, n, width, comparator)
        width *= 2
    return perm[:, :n]


# --------------------------------------------------------------------------- sort


def sort(operands: list[np.ndarray], dimension: int, comparator: Combiner,
         is_stable: bool = True) -> list[np.ndarray]:
    """HLO sort: sort every lane along `dimension`, permuting all operands together.

    comparator(lhs0, rhs0, lhs1, rhs1, ...) -> pred "lhs before rhs". Always stable.
    """
    operands = [np.asarray(o) for o in operands]
    if not operands:
        raise ValueError("sort needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise ValueError(f"sort operands must have identical dimensions, got "
                         f"{[o.shape for o in operands]}")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"sort dimension {dimension} out of range for rank {len(shape)}")
    n = shape[dimension]
    if n <= 1 or operands[0].size == 0:
        return [o.copy() for o in operands]
    moved = [np.moveaxis(o, dimension, -1) for o in operands]
    lanes = [m.reshape(-1, n) for m in moved]
    rows = lanes[0].shape[0]
    if rows * n * n <= _ALL_PAIRS_LIMIT:
        order = _all_pairs_order(lanes, comparator)
    else:
        order = _merge_sort_order(lanes, comparator)
    return [np.moveaxis(np.take_along_axis(lane, order, axis=1).reshape(m.shape), -1, dimension).copy()
            for lane, m in zip(lanes, moved)]


# --------------------------------------------------------------------------- topk


def total_order_key(x: np.ndarray) -> np.ndarray:
    """An integer array ordered like XLA's TOTALORDER comparison of `x`.

    Floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (via float64 bits, exact
    for every narrower float type). Integers and pred: their values.
    """
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    if x.dtype.kind == "c":
        raise ValueError(f"no total order for complex type {x.dtype}")
    if is_float_like(x.dtype):
        bits = x.astype(np.float64).view(np.int64)
        # Negative floats order backwards: flip their magnitude bits.
        return np.where(bits < 0, bits ^ np.int64(0x7FFF_FFFF_FFFF_FFFF), bits)
    if x.dtype.kind == "u":
        return x.astype(np.uint64)
    try:  # numpy signed and ml_dtypes sub-byte integers
        return x.astype(np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"no total order for type {x.dtype}") from None


def topk(operand: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """HLO topk on the last dimension: (values, s32 indices), best first.

    Order is XLA's total order (+NaN largest, -NaN smallest); equal keys keep the
    lower index first. Also the semantics of the "TopK" custom-call target.
    """
    operand = np.asarray(operand)
    if operand.ndim < 1:
        raise ValueError("topk needs an operand of rank >= 1")
    if not 0 <= k <= operand.shape[-1]:
        raise ValueError(f"topk k={k} out of range for last dimension {operand.shape[-1]}")
    key = total_order_key(operand)
    if largest:
        key = ~key  # reverses the order for signed and unsigned keys alike
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(operand, order, axis=-1)
    return values, order.astype(np.int32)


# --------------------------------------------------------------------------- handlers

@HANDLERS.register(Op.SORT, pure_if_callees_are=True)
def run_sort(ev, inst, ops):
    results = sort(list(ops), inst.attrs["dimensions"][0], ev.combiner(inst.attrs["to_apply"]),
                   inst.attrs.get("is_stable", False))
    return as_tuple_if(inst.shape, results)


@HANDLERS.register(Op.TOPK)
def run_topk(ev, inst, ops):
    return topk(ops[0], inst.attrs["k"], inst.attrs.get("largest", True))


def _topk_custom_call(ev, inst, ops):
    """XLA:CPU's "TopK" target: (values, s32 indices) of the k largest along the last dim."""
    if not inst.shape.is_tuple or len(inst.shape.tuple_shapes) != 2 or len(ops) != 1:
        raise ValueError("TopK takes one operand and returns a (values, indices) tuple")
    k = inst.shape.tuple_shapes[0].dims[-1]
    largest = True
    comps = inst.attrs.get("called_computations") or ()
    if comps and comps[0].root.opcode == Op.COMPARE:
        largest = comps[0].root.attrs.get("direction") in ("GT", "GE")
    return topk(ops[0], k, largest)


register_custom_call("TopK", _topk_custom_call)
