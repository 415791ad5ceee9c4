"""Comparing the outputs of two implementations of one program.

Exact outputs (builder.py: every implementation computes them bit for bit alike) must be
equal, NaNs anywhere a NaN is and +0 equal to -0; the others must agree within the tolerance
of the narrowest float they were computed in, with NaNs and infinities in the same places. A dynamic output from XLA is
its whole buffer: only its leading part, of the interpreter's runtime size, is compared.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..runtime.values_io import to_storage
from ..shapes import Shape

def _floats(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a.astype(np.float64)


def _as_storage(a, shape: Shape) -> np.ndarray:
    """An array in the storage dtype of `shape`: file dtypes converted, raw bits of a float
    type (as XLA's runner hands back every ml_dtypes float) viewed as it."""
    a = to_storage(np.asarray(a), shape)
    t = shape.element_type
    if a.dtype != t.dtype and a.dtype.kind == "u" and a.dtype.itemsize == t.dtype.itemsize and t.is_float:
        a = a.view(t.dtype)
    return a


def leaf_difference(want: np.ndarray, got: np.ndarray, tolerance: float, shape: Shape) -> Optional[str]:
    """Why `got` is not `want` (None if it is), both values of the array `shape` in storage or
    file dtypes: shapes, types, then values (equal, or within the relative `tolerance`)."""
    want, got = _as_storage(want, shape), _as_storage(got, shape)
    if got.shape != want.shape and got.ndim == want.ndim and all(g >= w for g, w in zip(got.shape, want.shape)):
        got = got[tuple(slice(0, n) for n in want.shape)]   # XLA's padded buffer of a dynamic result
    if got.shape != want.shape:
        return f"shape {got.shape} instead of {want.shape}"
    if got.dtype != want.dtype:
        return f"type {got.dtype} instead of {want.dtype}"
    t = shape.element_type
    if not (t.is_float or t.is_complex):
        bad = got != want
    else:
        w, g = _floats(want), _floats(got)
        both_nan = np.isnan(w) & np.isnan(g)
        if not tolerance:
            bad = (w != g) & ~both_nan
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                close = np.abs(g - w) <= tolerance * (1 + np.abs(w))
            bad = ~(close | (w == g) | both_nan)
    bad = np.asarray(bad)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (f"{int(bad.sum())} of {bad.size} elements differ; at {list(where)}: "
            f"{got[where] if where or got.ndim == 0 else got} instead of {want[where] if want.ndim else want}")


def difference(want: Sequence[np.ndarray], got: Sequence[np.ndarray], tolerances: Sequence[float],
               shapes: Sequence[Shape]) -> Optional[str]:
    """Why the output leaves `got` are not `want` (None if they agree); `shapes`: the leaves' shapes,
    `tolerances`: theirs (0: exactly equal)."""
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        why = leaf_difference(w, g, tolerances[i], shapes[i])
        if why is not None:
            return f"output {i}: {why}"
    return None
