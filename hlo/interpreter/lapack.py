"""The LAPACK custom calls that JAX emits on CPU, as custom-call targets of the interpreter.

potrf, trsm, getrf, geqrf, orgqr/ungqr, syevd/heevd and gesdd, by their typed-FFI
names (`lapack_spotrf_ffi`) and the legacy ones (`lapack_spotrf`), are gathered in
`LAPACK_TARGETS`, built on the batched routines `potrf`, `lu_decomposition`,
`qr_householder`, `householder_product`, `symmetric_eigh` and `svd_gesdd`, and
registered as custom-call targets (control.register_custom_call). The evaluator hands
them *logical* arrays: LAPACK's column-major `operand_layout_constraints` only say
where data sits in memory, which numpy abstracts away, so every routine here works on
logical matrices. Contents that LAPACK leaves unspecified (workspaces, the destroyed
input of an SVD, the factor of a failed Cholesky) are documented where they are produced.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from ..runtime.ffi_attributes import backend_config_dict, lapack_char_option
from .control import register_custom_call
from .linalg import (check_matrices, cholesky_lower_with_info, conj_t, flat_batch, hermitian_from_triangle,
                     real_dtype, triangle_mask, triangular_solve, work_dtype)
from .values import as_tuple_if, scalar_int

# --------------------------------------------------------------------------------------
# LAPACK routines on logical, batched matrices
# --------------------------------------------------------------------------------------

def _pivot_magnitude(col: np.ndarray) -> np.ndarray:
    """|x| as BLAS i?amax measures it (|re|+|im| for complex); NaN never wins."""
    mag = np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)
    return np.where(np.isnan(mag), -np.inf, mag)


def lu_decomposition(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK getrf: LU with partial pivoting of batched m×n matrices.

    Returns (lu, ipiv, info): unit-lower L below the diagonal and U on and above it;
    ipiv s32[..., min(m,n)] 1-based (row i was swapped with row ipiv[i]); info s32[...]
    is the 1-based index of the first exactly-zero pivot, else 0.
    """
    check_matrices(a, "getrf", square=False)
    work = work_dtype(a.dtype, "getrf")
    *batch, m, n = a.shape
    lu = flat_batch(a.astype(work)).copy()
    count, k = lu.shape[0], min(m, n)
    ipiv = np.zeros((count, k), dtype=np.int32)
    info = np.zeros(count, dtype=np.int32)
    rows = np.arange(count)
    tiny = np.finfo(work).tiny
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j in range(k):
            p = j + np.argmax(_pivot_magnitude(lu[:, j:, j]), axis=1)
            ipiv[:, j] = p + 1
            lu[rows, j], lu[rows, p] = lu[rows, p].copy(), lu[rows, j].copy()
            pivot = lu[:, j, j]
            nonzero = pivot != 0
            info = np.where((info == 0) & ~nonzero, j + 1, info).astype(np.int32)
            # Like dgetf2: multiply by the reciprocal unless that would overflow.
            safe = np.where(nonzero, pivot, 1)
            scaled = np.where((np.abs(safe) >= tiny)[:, None],
                              lu[:, j + 1:, j] * (1 / safe)[:, None],
                              lu[:, j + 1:, j] / safe[:, None])
            lu[:, j + 1:, j] = np.where(nonzero[:, None], scaled, lu[:, j + 1:, j])
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return (lu.reshape(a.shape).astype(a.dtype), ipiv.reshape((*batch, k)),
            info.reshape(batch))


def _householder(alpha: np.ndarray, x: np.ndarray):
    """Vectorised LAPACK ?larfg: (beta, tau, scale for x) per batch element.

    H = I - tau·v·vᴴ with v = [1, x·scale] maps [alpha, x] to [beta, 0]; tau = 0
    (H = I) when x is zero and alpha is real.
    """
    if x.shape[-1]:
        xnorm = np.linalg.norm(x, axis=-1)
    else:
        xnorm = np.zeros(alpha.shape, real_dtype(x.dtype))
    alpha_im = alpha.imag if np.iscomplexobj(alpha) else np.zeros_like(xnorm)
    active = (xnorm != 0) | (alpha_im != 0)
    norm = np.sqrt(np.square(np.abs(alpha)) + np.square(xnorm)) if np.iscomplexobj(alpha) \
        else np.hypot(alpha, xnorm)
    beta = -np.copysign(norm, alpha.real)
    safe_beta = np.where(active, beta, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.iscomplexobj(alpha):
            tau = (safe_beta - alpha.real) / safe_beta - 1j * (alpha_im / safe_beta)
        else:
            tau = (safe_beta - alpha) / safe_beta
        scale = 1 / np.where(active, alpha - beta, 1)
    tau = np.where(active, tau, 0).astype(alpha.dtype)
    beta = np.where(active, beta, alpha).astype(alpha.dtype)
    return beta, tau, np.where(active, scale, 1).astype(alpha.dtype)


def qr_householder(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK geqrf: (a_out, tau) with R on and above the diagonal of a_out and the
    Householder vectors (implicit leading 1) below it; a = Q·R, Q = H(1)…H(k)."""
    check_matrices(a, "geqrf", square=False)
    work = work_dtype(a.dtype, "geqrf")
    *batch, m, n = a.shape
    r = flat_batch(a.astype(work)).copy()
    k = min(m, n)
    tau = np.zeros((r.shape[0], k), dtype=work)
    for i in range(k):
        beta, tau_i, scale = _householder(r[:, i, i], r[:, i + 1:, i])
        r[:, i + 1:, i] *= scale[:, None]
        r[:, i, i] = beta
        tau[:, i] = tau_i
        v = np.concatenate([np.ones((r.shape[0], 1), work), r[:, i + 1:, i]], axis=1)
        trailing = r[:, i:, i + 1:]
        w = np.einsum("bi,bij->bj", np.conj(v), trailing)
        # Apply H(i)ᴴ = I - conj(tau)·v·vᴴ from the left.
        trailing -= np.conj(tau_i)[:, None, None] * v[:, :, None] * w[:, None, :]
    return r.reshape(a.shape).astype(a.dtype), tau.reshape((*batch, k)).astype(a.dtype)


def householder_product(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """LAPACK orgqr/ungqr: the first n columns of Q = H(1)…H(k) from geqrf's output."""
    check_matrices(a, "orgqr", square=False)
    work = work_dtype(a.dtype, "orgqr")
    *batch, m, n = a.shape
    k = tau.shape[-1]
    if not m >= n >= k or tau.shape[:-1] != tuple(batch):
        raise ValueError(f"orgqr: needs m >= n >= k and matching batch dims, got a {a.shape}, "
                         f"tau {tau.shape}")
    vs = flat_batch(a.astype(work))
    taus = tau.astype(work).reshape((vs.shape[0], k))
    q = np.broadcast_to(np.eye(m, n, dtype=work), vs.shape).copy()
    for i in reversed(range(k)):
        v = np.concatenate([np.ones((vs.shape[0], 1), work), vs[:, i + 1:, i]], axis=1)
        block = q[:, i:, :]
        w = np.einsum("bi,bij->bj", np.conj(v), block)
        block -= taus[:, i, None, None] * v[:, :, None] * w[:, None, :]
    return q.reshape(a.shape).astype(a.dtype)


def _batched_or_each(fn: Callable, flat: np.ndarray) -> tuple[list, np.ndarray]:
    """Run numpy `fn` on a batch; if numpy rejects the batch, run each element alone.

    Returns (per-output arrays, ok flags); outputs of failed elements are NaN.
    """
    ok = np.ones(flat.shape[0], dtype=bool)
    try:
        return [np.asarray(o) for o in _as_tuple(fn(flat))], ok
    except np.linalg.LinAlgError:
        pass
    template = [np.asarray(o) for o in _as_tuple(fn(np.eye(*flat.shape[-2:], dtype=flat.dtype)))]
    outs = [np.full((flat.shape[0],) + t.shape, np.nan, dtype=t.dtype) for t in template]
    for i, matrix in enumerate(flat):
        try:
            for out, value in zip(outs, _as_tuple(fn(matrix))):
                out[i] = value
        except np.linalg.LinAlgError:
            ok[i] = False
    return outs, ok


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, tuple) else (value,)


def symmetric_eigh(a: np.ndarray, lower: bool, vectors: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK syevd/heevd: (eigenvectors as columns, ascending real eigenvalues, info).

    Only the `lower` (or upper) triangle is read. Without vectors the first output
    is the input unchanged (LAPACK leaves it unspecified). Non-convergence gives NaN
    and info = 1.
    """
    check_matrices(a, "syevd")
    flat = flat_batch(a.astype(work_dtype(a.dtype, "syevd")))
    uplo = "L" if lower else "U"
    if vectors:
        (w, v), ok = _batched_or_each(lambda x: tuple(np.linalg.eigh(x, UPLO=uplo)), flat)
    else:
        (w,), ok = _batched_or_each(lambda x: np.linalg.eigvalsh(x, UPLO=uplo), flat)
        v = flat
    info = np.where(ok, 0, 1).astype(np.int32).reshape(a.shape[:-2])
    return (np.asarray(v).reshape(a.shape).astype(a.dtype),
            w.reshape(a.shape[:-1]).astype(real_dtype(a.dtype)), info)


def svd_gesdd(a: np.ndarray, mode: str) -> tuple[np.ndarray, ...]:
    """LAPACK gesdd: (s, u, vt, info) for mode 'A' (full), 'S' (reduced) or 'N' (no u/vt;
    then u and vt are None). numpy's svd calls gesdd too. Non-convergence: NaN, info 1."""
    check_matrices(a, "gesdd", square=False)
    if mode not in ("A", "S", "N"):
        raise ValueError(f"gesdd: unsupported computation mode {mode!r}")
    *batch, m, n = a.shape
    flat = flat_batch(a.astype(work_dtype(a.dtype, "gesdd")))
    if mode == "N":
        (s,), ok = _batched_or_each(lambda x: np.linalg.svd(x, compute_uv=False), flat)
        u = vt = None
    else:
        full = mode == "A"
        (u, s, vt), ok = _batched_or_each(
            lambda x: tuple(np.linalg.svd(x, full_matrices=full)), flat)
        u = u.reshape((*batch, *u.shape[-2:])).astype(a.dtype)
        vt = vt.reshape((*batch, *vt.shape[-2:])).astype(a.dtype)
    info = np.where(ok, 0, 1).astype(np.int32).reshape(batch)
    return s.reshape((*batch, s.shape[-1])).astype(real_dtype(a.dtype)), u, vt, info


def potrf(a: np.ndarray, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK potrf: (factor, info). The factor replaces the `lower` (or upper) triangle;
    the other triangle keeps the input, as in LAPACK. Failed elements: info > 0 (order
    of the first non-PD leading minor) and NaN in the factor's triangle (LAPACK leaves
    a partial factor there, which callers such as JAX discard)."""
    check_matrices(a, "potrf")
    h = hermitian_from_triangle(a.astype(work_dtype(a.dtype, "potrf")), lower)
    factor, info = cholesky_lower_with_info(h)
    if not lower:
        factor = conj_t(factor)
    mask = triangle_mask(a.shape[-1], lower)
    return np.where(mask, factor, a).astype(a.dtype), info


# --------------------------------------------------------------------------------------
# LAPACK custom-call targets
# --------------------------------------------------------------------------------------

_PREFIX_DTYPES = {"s": np.dtype(np.float32), "d": np.dtype(np.float64),
                  "c": np.dtype(np.complex64), "z": np.dtype(np.complex128)}


def _result_spec(spec) -> tuple[tuple[int, ...], np.dtype]:
    """(dims, dtype) of a result leaf given as a hlo.shapes.Shape or a (dims, dtype) pair."""
    if hasattr(spec, "element_type") and hasattr(spec, "dims"):
        return tuple(spec.dims), np.dtype(spec.element_type.dtype)
    dims, dtype = spec
    return tuple(dims), np.dtype(dtype)


def _fit_results(target: str, computed: Sequence[np.ndarray], result_specs) -> list[np.ndarray]:
    """Match computed outputs to the call's result leaves.

    Older ABIs declare extra results (info, workspaces) after the computed ones:
    these are filled with zeros. Each output is cast to its declared dtype and its
    shape checked. result_specs None returns `computed` unchanged.
    """
    if result_specs is None:
        return list(computed)
    specs = [_result_spec(s) for s in result_specs]
    if len(specs) < 1:
        raise ValueError(f"{target}: custom call declares no results")
    out = []
    for i, (dims, dtype) in enumerate(specs):
        if i < len(computed) and computed[i] is not None:
            value = np.asarray(computed[i])
            if value.shape != dims:
                raise ValueError(f"{target}: result {i} has shape {value.shape}, the call "
                                 f"declares {dims}")
            out.append(value.astype(dtype, copy=False))
        else:
            out.append(np.zeros(dims, dtype=dtype))
    return out


def _check_operands(target: str, operands: Sequence[np.ndarray], counts: tuple[int, ...],
                    dtype: np.dtype, matrix_positions: Sequence[int]) -> None:
    if len(operands) not in counts:
        raise ValueError(f"{target}: expected {' or '.join(map(str, counts))} operands, "
                         f"got {len(operands)}")
    for pos in matrix_positions:
        if np.asarray(operands[pos]).dtype != dtype:
            raise ValueError(f"{target}: operand {pos} has element type "
                             f"{np.asarray(operands[pos]).dtype}, expected {dtype}")


def _potrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    uplo = lapack_char_option(backend_config_dict(backend_config), "uplo", "LU", target)
    return _fit_results(target, potrf(np.asarray(operands[0]), uplo == "L"), result_specs)


def _trsm(target, a, b, alpha, side, uplo, trans, diag, result_specs):
    transpose = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[trans]
    x = triangular_solve(a, b, left_side=side == "L", lower=uplo == "L",
                         unit_diagonal=diag == "U", transpose_a=transpose)
    if alpha is not None:  # trsm solves op(a)·x = alpha·b
        x = (x * np.asarray(alpha).reshape(())).astype(b.dtype)
    return _fit_results(target, [x], result_specs)


def _trsm_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Newer jaxlib passes (a, b); older FFI versions add a scalar alpha operand.
    _check_operands(target, operands, (2, 3), dtype, (0, 1))
    config = backend_config_dict(backend_config)
    alpha = operands[2] if len(operands) == 3 else None
    return _trsm(target, np.asarray(operands[0]), np.asarray(operands[1]), alpha,
                 lapack_char_option(config, "side", "LR", target), lapack_char_option(config, "uplo", "LU", target),
                 lapack_char_option(config, "trans_x", "NTC", target),
                 lapack_char_option(config, "diag", "NU", target), result_specs)


def _getrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    return _fit_results(target, lu_decomposition(np.asarray(operands[0])), result_specs)


def _geqrf_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Current ABI: (a_out, tau); older ones add (info, workspace).
    _check_operands(target, operands, (1,), dtype, (0,))
    a_out, tau = qr_householder(np.asarray(operands[0]))
    info = np.zeros(a_out.shape[:-2], dtype=np.int32)
    return _fit_results(target, [a_out, tau, info], result_specs)


def _orgqr_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    # Current ABI: (a_out); older ones add (info, workspace).
    _check_operands(target, operands, (2,), dtype, (0, 1))
    q = householder_product(np.asarray(operands[0]), np.asarray(operands[1]))
    return _fit_results(target, [q, np.zeros(q.shape[:-2], dtype=np.int32)], result_specs)


def _syevd_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    config = backend_config_dict(backend_config)
    uplo = lapack_char_option(config, "uplo", "LU", target)
    mode = lapack_char_option(config, "mode", "VN", target, default="V")
    return _fit_results(target, symmetric_eigh(np.asarray(operands[0]), uplo == "L", mode == "V"),
                        result_specs)


def _gesdd_ffi(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (1,), dtype, (0,))
    mode = lapack_char_option(backend_config_dict(backend_config), "mode", "ASN", target)
    a = np.asarray(operands[0])
    s, u, vt, info = svd_gesdd(a, mode)
    # LAPACK destroys the input; we return it unchanged. Without u/vt they stay zero.
    return _fit_results(target, [a, s, u, vt, info], result_specs)


# Legacy (pre-FFI) kernels: the options travel as leading s32 scalar operands.

def _legacy_potrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, potrf(np.asarray(operands[3]), bool(scalar_int(operands[0]))),
                        result_specs)


def _legacy_trsm(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (10,), dtype, (8, 9))
    left, lower, trans, unit = (scalar_int(operands[i]) for i in range(4))
    if trans not in (0, 1, 2):
        raise ValueError(f"{target}: trans_a must be 0, 1 or 2, got {trans}")
    return _trsm(target, np.asarray(operands[8]), np.asarray(operands[9]), operands[7],
                 "L" if left else "R", "L" if lower else "U", "NTC"[trans], "U" if unit else "N",
                 result_specs)


def _legacy_getrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, lu_decomposition(np.asarray(operands[3])), result_specs)


def _legacy_geqrf(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (5,), dtype, (4,))
    a_out, tau = qr_householder(np.asarray(operands[4]))
    return _fit_results(target, [a_out, tau, np.zeros(a_out.shape[:-2], np.int32)], result_specs)


def _legacy_orgqr(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (7,), dtype, (5, 6))
    q = householder_product(np.asarray(operands[5]), np.asarray(operands[6]))
    return _fit_results(target, [q, np.zeros(q.shape[:-2], np.int32)], result_specs)


def _legacy_syevd(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (4,), dtype, (3,))
    return _fit_results(target, symmetric_eigh(np.asarray(operands[3]), bool(scalar_int(operands[0]))),
                        result_specs)


def _legacy_gesdd(operands, result_specs, backend_config, frontend_attributes, *, dtype, target):
    _check_operands(target, operands, (7,), dtype, (6,))
    full, compute_uv = bool(scalar_int(operands[0])), bool(scalar_int(operands[1]))
    a = np.asarray(operands[6])
    s, u, vt, info = svd_gesdd(a, ("A" if full else "S") if compute_uv else "N")
    return _fit_results(target, [a, s, u, vt, info], result_specs)


def _build_lapack_targets() -> dict[str, Callable]:
    """Target name -> handler for every routine and precision prefix (s, d, c, z)."""
    targets: dict[str, Callable] = {}

    def add(name: str, handler: Callable, dtype: np.dtype) -> None:
        targets[name] = functools.partial(handler, dtype=dtype, target=name)

    for p, dtype in _PREFIX_DTYPES.items():
        complex_ = p in "cz"
        orgqr = "ungqr" if complex_ else "orgqr"
        syevd = "heevd" if complex_ else "syevd"
        for suffix, ffi, legacy in (("potrf", _potrf_ffi, _legacy_potrf),
                                    ("trsm", _trsm_ffi, _legacy_trsm),
                                    ("getrf", _getrf_ffi, _legacy_getrf),
                                    ("geqrf", _geqrf_ffi, _legacy_geqrf),
                                    (orgqr, _orgqr_ffi, _legacy_orgqr),
                                    (syevd, _syevd_ffi, _legacy_syevd),
                                    ("gesdd", _gesdd_ffi, _legacy_gesdd)):
            add(f"lapack_{p}{suffix}_ffi", ffi, dtype)
            add(f"lapack_{p}{suffix}", legacy, dtype)
        if complex_:  # accept the real-type spelling for complex Q too
            add(f"lapack_{p}orgqr_ffi", _orgqr_ffi, dtype)
    return targets


LAPACK_TARGETS: dict[str, Callable] = _build_lapack_targets()


def _custom_call(kernel: Callable) -> Callable:
    """A LAPACK_TARGETS kernel as a custom-call handler (ev, inst, ops) -> value."""
    def handler(ev, inst, ops):
        specs = [leaf for _, leaf in inst.shape.leaves()]
        results = kernel(ops, specs, inst.backend_config, inst.frontend_attributes)
        return as_tuple_if(inst.shape, results)
    return handler


for _target, _kernel in LAPACK_TARGETS.items():
    register_custom_call(_target, _custom_call(_kernel))
