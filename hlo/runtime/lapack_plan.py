"""One LAPACK custom call as a plan both backends execute: `LapackCall` and its parts.

A plan describes what happens for every matrix of the batch (the batch dimensions lead,
each matrix is column-major, as JAX's `operand_layout_constraints` and jaxlib's kernels
have it):

1. each working array (`Work`) bound to an operand is filled with that operand's batch
   element, in column-major order; those bound to results (directly or through `Unpack`)
   are zeroed, so that what LAPACK leaves untouched reads as zero on every backend;
2. unless `finite_check` names an array holding a non-finite value (then `info` = -4 and
   LAPACK is not called, as jaxlib does for geev), the routine is called with `args`
   (every argument by address, Fortran style, then one hidden length 1 per character
   argument as gfortran passes them);
3. each working array bound to a result is copied there (integers narrowed to s32), and
   each `Unpack` turns geev's packed real eigenvectors into complex ones when `info` is 0.

Results no working array fills are zero. Workspace sizes are fixed when the plan is made
(static shapes): by LAPACK's own query (lwork = -1, `query_workspace`) or by jaxlib's
formulas, so both backends make identical calls.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from ..shapes import PrimitiveType
from .lapack_library import LapackLibrary


class LapackTargetError(ValueError):
    """A custom call that does not fit its LAPACK target (operands, results, options)."""


# -------------------------------------------------------------------------- call arguments

@dataclass(frozen=True)
class Char:
    """A CHARACTER*1 option ('L', 'N' ...)."""
    value: str


@dataclass(frozen=True)
class Int:
    """An INTEGER (of the library's width)."""
    value: int


@dataclass(frozen=True)
class One:
    """The scalar 1 of the target's element type (trsm's alpha)."""


@dataclass(frozen=True)
class Ref:
    """A working array, from element `offset` on."""
    array: str
    offset: int = 0


@dataclass(frozen=True)
class Null:
    """A null pointer (gees's select function and bwork when it does not sort)."""


Arg = Union[Char, Int, One, Ref, Null]


# -------------------------------------------------------------------------- the plan

@dataclass(frozen=True)
class Work:
    """A working array for one matrix of the batch, stored column-major."""
    name: str
    type: PrimitiveType
    dims: tuple[int, ...]
    operand: Optional[int] = None   # filled from this operand before each call
    result: Optional[int] = None    # copied to this result after each call
    batched: bool = True            # the operand has the batch dimensions (trsm's alpha has not)

    @property
    def size(self) -> int:
        return math.prod(self.dims)


@dataclass(frozen=True)
class Unpack:
    """Real geev's eigenvectors: a complex pair (wi[j] != 0) is packed as the real parts in
    column j and the imaginary parts in column j + 1; the result gets v_j and conj(v_j)."""
    packed: str
    imag: str
    result: int


@dataclass(frozen=True)
class LapackCall:
    target: str
    routine: str                      # 'sgetrf': the library adds its prefix and suffix
    type: PrimitiveType               # the target's element type
    batch_dims: tuple[int, ...]
    works: tuple[Work, ...]
    args: tuple[Arg, ...]
    results: tuple[tuple[tuple[int, ...], PrimitiveType], ...]   # every declared result (dims, type)
    info: Optional[str] = None        # the working array LAPACK reports `info` in
    finite_check: Optional[str] = None
    unpack: tuple[Unpack, ...] = ()
    skip: bool = False                # an empty matrix: no call (results keep their copies or zeros)

    @property
    def batch_count(self) -> int:
        return math.prod(self.batch_dims)

    def work(self, name: str) -> Work:
        return next(w for w in self.works if w.name == name)

    def zeroed(self) -> tuple[Work, ...]:
        """Working arrays cleared before each call: they feed results and no operand fills them."""
        unpacked = {u.packed for u in self.unpack}
        return tuple(w for w in self.works if w.operand is None and (w.result is not None or w.name in unpacked))

    def char_count(self) -> int:
        return sum(isinstance(a, Char) for a in self.args)


# -------------------------------------------------------------------------- ctypes calls

_SCRATCH_ELEMENTS = 32   # the buffer standing for every array in a workspace query (bytes / 16)


def ctypes_arguments(library: LapackLibrary, args: Sequence[Arg], value_dtype: np.dtype, address_of) -> list:
    """The ctypes argument list of a call: every argument by address, then the hidden length
    (1) of each character argument. address_of(Ref) gives a working array's address.
    The returned list keeps the scalars it points to alive."""
    int_type = library.int_type
    out: list = []
    for arg in args:
        if isinstance(arg, Char):
            out.append(ctypes.c_char_p(arg.value.encode("ascii")))
        elif isinstance(arg, Int):
            out.append(ctypes.byref(int_type(arg.value)))
        elif isinstance(arg, One):
            one = np.ones(1, dtype=value_dtype)
            out.append(_Pinned(one))
        elif isinstance(arg, Ref):
            out.append(ctypes.c_void_p(address_of(arg)))
        else:
            out.append(ctypes.c_void_p(None))
    out += [ctypes.c_size_t(1)] * sum(isinstance(a, Char) for a in args)
    return out


class _Pinned(ctypes.c_void_p):
    """The address of a numpy array, keeping the array alive as long as the argument."""

    def __init__(self, array: np.ndarray):
        super().__init__(array.ctypes.data)
        self.array = array


def query_workspace(library: LapackLibrary, routine: str, value_dtype: np.dtype, args: Sequence[Arg],
                    target: str) -> int:
    """LAPACK's optimal workspace for `args` (lwork = -1 among them, the array named 'work'
    receiving the answer); every array stands for a small scratch buffer."""
    buffers: dict[str, np.ndarray] = {}

    def address_of(ref: Ref) -> int:
        buffer = buffers.setdefault(ref.array, np.zeros(_SCRATCH_ELEMENTS, dtype=np.complex128))
        return buffer.ctypes.data

    cargs = ctypes_arguments(library, args, value_dtype, address_of)
    library.function(routine)(*cargs)
    info = int(buffers["info"].view(library.int_dtype)[0]) if "info" in buffers else 0
    if info != 0:
        raise LapackTargetError(f"{target}: LAPACK's workspace query ({routine}) failed with info {info}")
    optimal = buffers["work"].view(value_dtype)[0]
    return max(1, math.ceil(float(np.real(optimal))))
