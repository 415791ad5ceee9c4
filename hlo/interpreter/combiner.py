"""The interface through which numpy kernels call an HLO computation.

Ops such as reduce, reduce-window, scatter, select-and-scatter, sort and map take a
called computation (`to_apply=`, `comparator`, ...). The evaluator hands kernels a
`Combiner`: the computation made callable on whole numpy arrays. Because these
computations take scalars and are applied independently per element, the evaluator
runs them *vectorised*: every argument is an array of the same shape (a batch of
scalars) and every result has that shape too.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np


class Combiner:
    """A called computation usable by numpy kernels.

    fn:     the vectorised computation: fn(*arrays) -> tuple of arrays (one per
            element of the computation's result; a non-tuple root gives a 1-tuple).
    ufunc:  the numpy ufunc equivalent to the computation when it is a single
            binary op over its two parameters (np.add, np.maximum, ...), else None;
            kernels may use it for a fast path (ufunc.reduce, ufunc.at, ...).
    num_params: number of parameters of the computation.
    """

    def __init__(self, fn: Callable[..., Sequence[np.ndarray]], num_params: int,
                 ufunc: Optional[np.ufunc] = None, name: str = "<computation>"):
        self.fn = fn
        self.num_params = num_params
        self.ufunc = ufunc
        self.name = name

    def __call__(self, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        out = self.fn(*args)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    def __repr__(self) -> str:
        return f"Combiner({self.name})"
