"""The interface through which numpy kernels call an HLO computation.

Ops such as reduce, reduce-window, scatter, select-and-scatter, sort and map take a
called computation (`to_apply=`, `comparator`, ...). The evaluator hands kernels a
`Combiner`: the computation made callable on whole numpy arrays. Because these
computations take scalars and are applied independently per element, the evaluator
runs them *vectorised*: every argument is an array of the same shape (a batch of
scalars) and every result has that shape too. A computation that is a single binary op
of its parameters also names its numpy ufunc (`binary_ufunc`), for the kernels' fast paths.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from ..ir import Computation
from ..opcodes import Op


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


# The numpy ufunc of each op that may be a computation's single binary op (see binary_ufunc).
_UFUNC_OF_ROOT = {Op.ADD: np.add, Op.MULTIPLY: np.multiply, Op.MAXIMUM: np.maximum, Op.MINIMUM: np.minimum,
                  Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor}
_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor)


def binary_ufunc(comp: Computation) -> Optional[np.ufunc]:
    """The numpy ufunc a computation amounts to: a single binary op of its two
    parameters, in order (e.g. add(p0, p1) -> np.add); else None.

    Note: np.maximum/np.minimum order -0 and +0 as equal, where XLA has -0 < +0.
    """
    params = comp.parameters
    root = comp.root
    ufunc = _UFUNC_OF_ROOT.get(root.opcode)
    if len(params) != 2 or ufunc is None or root.operands != params:
        return None
    shapes = [p.shape for p in params] + [root.shape]
    if any(s.is_tuple or s.rank != 0 for s in shapes):
        return None
    t = root.shape.element_type
    if any(s.element_type is not t for s in shapes):
        return None
    if ufunc in _BITWISE and not (t.is_integral or t.is_pred):
        return None
    if (ufunc is np.maximum or ufunc is np.minimum) and t.is_complex:
        return None
    return ufunc
