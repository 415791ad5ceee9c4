#!/usr/bin/env python3
"""Regenerate tests/data/lapack: JAX programs calling every LAPACK family, with XLA:CPU's outputs.

Run by hand with jax installed (the tests only read what this writes):

    python tests/data/lapack/generate.py

Each case NAME is one LAPACK family (trsm, getrf, ..., gtsv) applied to f32, f64, c64 and
c128 inputs (batches, odd sizes, n = 1), lowered by JAX for CPU: NAME.hlo (JAX's text),
NAME.inputs.npz (arg0..), NAME.expected.npz (out0.., XLA:CPU's results) and a MANIFEST.json
in the corpus format (hlo-conformance --corpus tests/data/lapack runs it) with tolerances for
single precision (rtol/atol) and double precision (double_rtol/double_atol, per output dtype).
Where a decomposition is unique only up to signs, phases or order (eigenvectors, singular
vectors, Schur and Hessenberg forms) the program returns what is invariant, as XLA's own
tests compare: reconstructions, orthogonality, residuals, sorted eigenvalues.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax import lax  # noqa: E402

HERE = Path(__file__).resolve().parent
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SINGLE_TOL, DOUBLE_TOL = (2e-4, 2e-4), (1e-9, 1e-9)


def conj_t(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def well_conditioned(rng, shape, dtype, shift=4.0):
    return (random(rng, shape, dtype) + shift * np.eye(shape[-1])).astype(dtype)


def hermitian_pd(rng, shape, dtype):
    x = random(rng, shape, dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def hermitian(rng, shape, dtype):
    x = random(rng, shape, dtype)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)


# -------------------------------------------------------------------------- the families
# Each: (inputs for one dtype, function of those inputs returning a tuple of arrays).

def trsm(rng, dtype):
    a = np.tril(well_conditioned(rng, (2, 5, 5), dtype))
    b = random(rng, (2, 5, 3), dtype)
    c = random(rng, (2, 4, 5), dtype)

    def f(a, b, c):
        upper = conj_t(a)
        return (jsl.solve_triangular(a, b, lower=True),
                jsl.solve_triangular(upper, b, lower=False, trans=1, unit_diagonal=True),
                jsl.solve_triangular(a, b, lower=True, trans=2),
                lax.linalg.triangular_solve(a, c, left_side=False, lower=True, transpose_a=True, conjugate_a=True))
    return (a, b, c), f


def getrf(rng, dtype):
    square = well_conditioned(rng, (3, 6, 6), dtype, shift=0.5)
    wide, one = random(rng, (2, 5, 7), dtype), random(rng, (1, 1), dtype)
    rhs = random(rng, (3, 6, 2), dtype)

    def f(square, wide, one, rhs):
        lu, pivots, perm = lax.linalg.lu(wide)
        lu1, piv1, _ = lax.linalg.lu(one)
        sign, logdet = jnp.linalg.slogdet(square)
        return (lu, pivots, perm, lu1, piv1, jnp.linalg.solve(square, rhs), jnp.linalg.inv(square),
                jnp.linalg.det(square), sign, logdet)
    return (square, wide, one, rhs), f


def geqrf(rng, dtype):
    tall, wide, square = random(rng, (2, 7, 5), dtype), random(rng, (4, 6), dtype), random(rng, (3, 3), dtype)

    def f(tall, wide, square):
        q, r = jnp.linalg.qr(tall)
        qc, rc = jnp.linalg.qr(wide, mode="complete")
        q3, r3 = jnp.linalg.qr(square)
        return q, r, qc, rc, q3, r3, jnp.linalg.qr(tall, mode="r")
    return (tall, wide, square), f


def geqp3(rng, dtype):
    a, b = random(rng, (6, 5), dtype), random(rng, (2, 4, 6), dtype)

    def f(a, b):
        q, r, p = jsl.qr(a, pivoting=True, mode="economic")
        rb, pb = jsl.qr(b, pivoting=True, mode="r")
        return q @ r, conj_t(q) @ q, jnp.abs(r), p, jnp.abs(rb[0]), pb
    return (a, b), f


def orgqr(rng, dtype):
    a = random(rng, (2, 7, 4), dtype)

    def f(a):
        q = jnp.linalg.qr(a, mode="complete")[0]
        return q, conj_t(q) @ q
    return (a,), f


def ormqr(rng, dtype):
    a, c_left, c_right = random(rng, (7, 4), dtype), random(rng, (4, 3), dtype), random(rng, (2, 7), dtype)

    def f(a, c_left, c_right):
        left, r = jsl.qr_multiply(a, c_left, mode="left")
        right, _ = jsl.qr_multiply(a, c_right, mode="right", conjugate=True)
        return left, right, r
    return (a, c_left, c_right), f


def potrf(rng, dtype):
    a, b = hermitian_pd(rng, (3, 5, 5), dtype), random(rng, (5, 2), dtype)
    not_pd = -np.eye(3, dtype=dtype)

    def f(a, b, not_pd):
        lower = jnp.linalg.cholesky(a)
        upper = jsl.cholesky(a[0], lower=False)
        x = jsl.cho_solve(jsl.cho_factor(a[1]), b)
        return lower, upper, x, jnp.linalg.cholesky(not_pd)
    return (a, b, not_pd), f


def _svd_invariants(a, u, s, vt):
    k = s.shape[-1]
    rebuilt = (u[..., :, :k] * s[..., None, :].astype(u.dtype)) @ vt[..., :k, :]
    return s, rebuilt, conj_t(u) @ u, vt @ conj_t(vt)


def gesdd(rng, dtype):
    tall, wide = random(rng, (2, 6, 4), dtype), random(rng, (3, 5), dtype)

    def f(tall, wide):
        u, s, vt = jnp.linalg.svd(tall, full_matrices=True)
        u2, s2, vt2 = jnp.linalg.svd(wide, full_matrices=False)
        return (*_svd_invariants(tall, u, s, vt), *_svd_invariants(wide, u2, s2, vt2),
                jnp.linalg.svd(tall, compute_uv=False), jnp.linalg.matrix_rank(tall), jnp.linalg.pinv(wide))
    return (tall, wide), f


def gesvd(rng, dtype):
    a = random(rng, (2, 5, 3), dtype)

    def f(a):
        u, s, vt = lax.linalg.svd(a, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR)
        full = lax.linalg.svd(a[0], full_matrices=True, algorithm=lax.linalg.SvdAlgorithm.QR)
        values = lax.linalg.svd(a, compute_uv=False, algorithm=lax.linalg.SvdAlgorithm.QR)
        return (*_svd_invariants(a, u, s, vt), *_svd_invariants(a[0], *full), values)
    return (a,), f


def syevd(rng, dtype):
    a, one = hermitian(rng, (3, 5, 5), dtype), hermitian(rng, (1, 1), dtype)

    def f(a, one):
        w, v = jnp.linalg.eigh(a)
        wu, vu = jnp.linalg.eigh(a, UPLO="U")
        rebuilt = (v * w[..., None, :].astype(v.dtype)) @ conj_t(v)
        return w, rebuilt, conj_t(v) @ v, wu, conj_t(vu) @ a @ vu, jnp.linalg.eigvalsh(a), jnp.linalg.eigh(one)[0]
    return (a, one), f


def _sorted(w):
    return jnp.sort(w, axis=-1)


def geev(rng, dtype):
    a = random(rng, (2, 5, 5), dtype)

    def f(a):
        w, vl, vr = lax.linalg.eig(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
        ac = a.astype(w.dtype)
        right_residual = ac @ vr - vr * w[..., None, :]
        left_residual = conj_t(vl) @ ac - w[..., :, None] * conj_t(vl)
        rebuilt = (vr * w[..., None, :]) @ jnp.linalg.inv(vr)
        return (_sorted(w), right_residual, left_residual, rebuilt, jnp.linalg.norm(vr, axis=-2),
                _sorted(jnp.linalg.eigvals(a)))
    return (a,), f


def gees(rng, dtype):
    a = random(rng, (6, 6), dtype)

    def f(a):
        t, z = jsl.schur(a)
        lower = jnp.tril(t, -2) if not jnp.iscomplexobj(t) else jnp.tril(t, -1)
        return z @ t @ conj_t(z), conj_t(z) @ z, lower, jnp.sort(jnp.abs(jnp.diagonal(t)))
    return (a,), f


def gehrd(rng, dtype):
    a = random(rng, (7, 7), dtype)

    def f(a):
        h, q = jsl.hessenberg(a, calc_q=True)
        return q @ h @ conj_t(q), conj_t(q) @ q, jnp.tril(h, -2), jnp.abs(jnp.diagonal(h, -1))
    return (a,), f


def sytrd(rng, dtype):
    a = hermitian(rng, (2, 6, 6), dtype)

    def f(a):
        _, d, e, _ = lax.linalg.tridiagonal(a, lower=True)
        _, du, eu, _ = lax.linalg.tridiagonal(a, lower=False)
        return d, jnp.abs(e), du, jnp.abs(eu)
    return (a,), f


def gtsv(rng, dtype):
    d = (4 + random(rng, (2, 7), dtype)).astype(dtype)
    dl, du, b = random(rng, (2, 7), dtype), random(rng, (2, 7), dtype), random(rng, (2, 7, 3), dtype)

    def f(dl, d, du, b):
        dl = dl.at[..., 0].set(0)
        du = du.at[..., -1].set(0)
        return (lax.linalg.tridiagonal_solve(dl, d, du, b),)
    return (dl, d, du, b), f


def tridiagonal_solve_perturbed(rng, dtype):
    """jaxlib's perturbed solve (not LAPACK): singular systems, and eigh_tridiagonal's eigenvectors."""
    dl, d, du = (random(rng, (3, 6), dtype) for _ in range(3))
    d[0, 2] = 0
    dl[1] = 0
    d[1, 4] = 0                                   # exactly singular pivots
    d[2] = (4 + d[2]).astype(dtype)
    b = random(rng, (3, 6, 2), dtype)
    one = random(rng, (1,), dtype)
    real = np.real(np.ones(1, dtype)).dtype
    diagonal, offdiagonal = random(rng, (7,), real), random(rng, (6,), real)

    def f(dl, d, du, b, one, diagonal, offdiagonal):
        x = lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
        x1 = lax.linalg.tridiagonal_solve(one * 0, one, one * 0, one[:, None] + 1, perturb_singular=True)
        out = [jnp.isfinite(x).all(axis=(-2, -1)), x[2], x1]
        if dtype in (np.float32, np.float64):   # eigh_tridiagonal: real symmetric matrices
            w, v = jsl.eigh_tridiagonal(diagonal, offdiagonal, eigvals_only=False)
            t = jnp.diag(diagonal) + jnp.diag(offdiagonal, 1) + jnp.diag(offdiagonal, -1)
            out += [w, t @ v - v * w[None, :], jnp.abs(jnp.sum(v * v, axis=0))]
        return tuple(out)
    return (dl, d, du, b, one, diagonal, offdiagonal), f


FAMILIES = [trsm, getrf, geqrf, geqp3, orgqr, ormqr, potrf, gesdd, gesvd, syevd, geev, gees, gehrd, sytrd, gtsv,
            tridiagonal_solve_perturbed]


# -------------------------------------------------------------------------- writing

def hlo_type(x) -> str:
    names = {"float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128", "int32": "s32",
             "int64": "s64", "bool": "pred"}
    return f"{names[np.dtype(x.dtype).name]}[{','.join(map(str, x.shape))}]"


def build(family, seed: int):
    rng = np.random.default_rng(seed)
    inputs, functions = [], []
    for dtype in DTYPES:
        args, f = family(rng, dtype)
        inputs.append(args)
        functions.append(f)

    def program(*flat):
        out, i = [], 0
        for args, f in zip(inputs, functions):
            out.extend(f(*flat[i:i + len(args)]))
            i += len(args)
        return tuple(out)

    flat = [a for args in inputs for a in args]
    return program, flat


def write_npz(path: Path, arrays: dict) -> None:
    np.savez(path, **arrays)


def main() -> int:
    manifest = []
    for seed, family in enumerate(FAMILIES):
        name = family.__name__
        program, flat = build(family, 1000 + seed)
        jitted = jax.jit(program, keep_unused=True)
        text = jitted.lower(*flat).as_text(dialect="hlo")
        results = [np.asarray(r) for r in jitted(*flat)]
        (HERE / f"{name}.hlo").write_text(text)
        write_npz(HERE / f"{name}.inputs.npz", {f"arg{i}": a for i, a in enumerate(flat)})
        write_npz(HERE / f"{name}.expected.npz", {f"out{i}": r for i, r in enumerate(results)})
        targets = sorted({t.split('"')[0] for t in text.split('custom_call_target="')[1:]
                          if t.startswith(("lapack", "tridiagonal"))})
        manifest.append({
            "name": name, "inputs": [hlo_type(a) for a in flat], "outputs": [hlo_type(r) for r in results],
            "rtol": SINGLE_TOL[0], "atol": SINGLE_TOL[1], "double_rtol": DOUBLE_TOL[0], "double_atol": DOUBLE_TOL[1],
            "exact_outputs": [i for i, r in enumerate(results) if r.dtype.kind in "biu"],
            "custom_calls": targets, "jax": jax.__version__,
        })
        print(f"{name}: {len(flat)} inputs, {len(results)} outputs, {', '.join(targets)}")
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
