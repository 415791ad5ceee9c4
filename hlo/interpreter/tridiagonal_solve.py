"""`tridiagonal_solve_perturbed_ffi`: jaxlib's tridiagonal solve that perturbs tiny pivots.

JAX emits it on CPU for `lax.linalg.tridiagonal_solve(..., perturb_singular=True)`, which
`jax.scipy.linalg.eigh_tridiagonal` uses for its eigenvectors (inverse iteration on the
singular systems (T - λI)x = r). It is not a LAPACK routine but jaxlib's own
(jaxlib/tridiagonal_solve_perturbed.h, after LAPACK's xLAGTF and xLAGTS): Gaussian
elimination with partial pivoting that keeps the three diagonals of U, solves L·z = P·b on
the way, then back-substitutes, nudging each pivot p with |p| < 1 that would overflow
rhs/p by multiples of eps·max|U| (or scaling the row up when p is tiny). Operands
dl, d, du [..., n] (dl[0] and du[n-1] unused) and b [..., n, k]; result x [..., n, k].

The compiled backend emits the same steps (hlo/codegen/tridiagonal_solve.py), in the same
order and element type, so both backends agree.
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import error, written_name
from .control import register_custom_call

TARGET = "tridiagonal_solve_perturbed_ffi"
_TYPES = (np.float32, np.float64, np.complex64, np.complex128)


def check_operands(dl, d, du, b) -> None:
    """ValueError unless the four operands fit the target."""
    types = {np.dtype(x.dtype) for x in (dl, d, du, b)}
    if len(types) != 1 or next(iter(types)).type not in _TYPES:
        raise ValueError(f"{TARGET}: the operands must have one element type among f32, f64, c64, c128, got "
                         f"{', '.join(str(np.dtype(x.dtype)) for x in (dl, d, du, b))}")
    if b.ndim < 2 or not (dl.shape == d.shape == du.shape == b.shape[:-1]):
        raise ValueError(f"{TARGET}: dl, d and du must be [..., n] and b [..., n, k], got "
                         f"{', '.join(str(list(x.shape)) for x in (dl, d, du, b))}")


def _limits(dtype):
    """(eps, safemin, bignum) of the real type, as xLAMCH computes them."""
    info = np.finfo(np.dtype(dtype))
    one = info.dtype.type(1)
    small = one / info.max
    safemin = info.tiny if small < info.tiny else small * (one + info.eps)
    return info.eps, safemin, one / safemin


def maybe_perturb(perturb, pivot, row: np.ndarray, limits):
    """The pivot to divide `row` (scaled in place when tiny) by: a pivot below 1 that would
    overflow row/pivot is moved away from zero by growing multiples of `perturb`."""
    _, safemin, bignum = limits
    abs_pivot = np.abs(pivot)
    if abs_pivot >= 1:
        return pivot
    magnitude = np.abs(perturb)
    perturb = np.copysign(safemin if magnitude < safemin else magnitude, np.real(pivot))   # std::max
    max_factor = np.abs(perturb) * 0
    if row.size:   # folded with std::max from the first element, as the compiled code does
        max_factor = np.abs(row[0])
        for value in np.abs(row):
            max_factor = _larger(max_factor, value)
    while abs_pivot < 1:
        if abs_pivot < safemin:
            if abs_pivot == 0 or max_factor * safemin > abs_pivot:
                pivot, perturb = pivot + perturb, perturb * 2
            else:
                pivot = pivot * bignum
                row *= bignum
                return pivot
        elif max_factor > abs_pivot * bignum:
            pivot, perturb = pivot + perturb, perturb * 2
        else:
            return pivot
        abs_pivot = np.abs(pivot)
    return pivot


def _larger(a, b):
    return b if a < b else a   # std::max


def solve_one(dl, d, du, rhs) -> np.ndarray:
    """x for one system (d [n], rhs [n, k]), in the element type."""
    n, dtype = d.shape[0], d.dtype
    x = np.zeros(rhs.shape, dtype)
    if n == 0:
        return x
    limits = _limits(np.real(d).dtype)
    eps = limits[0]
    if n == 1:
        row = rhs[0].copy()
        pivot = maybe_perturb(eps * np.abs(d[0]), d[0], row, limits)
        x[0] = row / pivot
        return x
    u = np.zeros((n, 3), dtype)
    u[0, 0], u[0, 1] = d[0], du[0]
    max_abs_u = _larger(np.abs(u[0, 0]), np.abs(u[0, 1]))
    scale1 = np.abs(u[0, 0]) + np.abs(u[0, 1])
    x[0] = rhs[0]
    for k in range(n - 1):
        u[k + 1, 0] = d[k + 1]
        scale2 = np.abs(dl[k + 1]) + np.abs(u[k + 1, 0])
        if k < n - 2:
            scale2 = scale2 + np.abs(du[k + 1])
        if dl[k + 1] == 0:
            scale1 = scale2
            u[k + 1, 1], u[k, 2] = du[k + 1], 0
            x[k + 1] = rhs[k + 1]
        else:
            piv1 = np.abs(u[k, 0]) / scale1 if u[k, 0] != 0 else np.abs(u[k, 0]) * 0
            piv2 = np.abs(dl[k + 1]) / scale2
            if piv2 <= piv1:   # no row exchange
                scale1 = scale2
                factor = dl[k + 1] / u[k, 0]
                u[k + 1, 0] = u[k + 1, 0] - factor * u[k, 1]
                u[k + 1, 1], u[k, 2] = du[k + 1], 0
                x[k + 1] = rhs[k + 1] - factor * x[k]
            else:              # exchange rows k and k + 1
                factor = u[k, 0] / dl[k + 1]
                upper = u[k, 1]
                u[k, 0] = dl[k + 1]
                u[k + 1, 0] = upper - factor * d[k + 1]
                u[k, 1] = d[k + 1]
                if k < n - 2:
                    u[k, 2] = du[k + 1]
                    u[k + 1, 1] = -factor * du[k + 1]
                x[k + 1] = x[k] - factor * rhs[k + 1]
                x[k] = rhs[k + 1]
                scale1 = np.abs(u[k + 1, 0]) + np.abs(u[k + 1, 1])
        if k < n - 2:
            for i in range(3):
                max_abs_u = _larger(max_abs_u, np.abs(u[k, i]))
    max_abs_u = _larger(max_abs_u, np.abs(u[n - 1, 0]))
    perturb = eps * max_abs_u
    one = dtype.type(1)
    for k in range(n - 1, -1, -1):
        row = x[k].copy()
        if k + 1 < n:
            row = row - u[k, 1] * x[k + 1]
        if k + 2 < n:
            row = row - u[k, 2] * x[k + 2]
        signed = perturb if k == n - 1 else np.copysign(perturb, np.real(u[k, 0]))
        pivot = maybe_perturb(signed, u[k, 0], row, limits)
        x[k] = row * (one / pivot)
    return x


def solve(dl, d, du, b) -> np.ndarray:
    """x [..., n, k] for every system of the batch."""
    check_operands(dl, d, du, b)
    n, k = b.shape[-2:]
    count = int(np.prod(b.shape[:-2], dtype=np.int64))
    flat = [np.asarray(v).reshape((count,) + v.shape[len(b.shape) - 2:]) for v in (dl, d, du, b)]
    out = np.zeros((count, n, k), b.dtype)
    with np.errstate(all="ignore"):
        for i in range(count):
            out[i] = solve_one(flat[0][i], flat[1][i], flat[2][i], flat[3][i])
    return out.reshape(b.shape)


def run_tridiagonal_solve_perturbed(ev, inst, ops):
    try:
        if len(ops) != 4:
            raise ValueError(f"{TARGET}: expects 4 operands (dl, d, du, b), got {len(ops)}")
        b = inst.operands[3].shape
        if inst.shape.is_tuple or inst.shape.dims != b.dims or inst.shape.element_type != b.element_type:
            raise ValueError(f"{TARGET}: the result must have b's shape {b.element_type.name}{list(b.dims)}")
        return solve(*[np.asarray(o) for o in ops])
    except ValueError as exc:
        raise error(f"custom-call %{written_name(inst.loc, inst.name)}: {exc}", inst.loc) from None


register_custom_call(TARGET, run_tridiagonal_solve_perturbed)
