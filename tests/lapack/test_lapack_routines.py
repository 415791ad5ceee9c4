"""Each LAPACK family through the interpreter's executor: hand-computed answers, the defining
identities of each decomposition on batches of odd sizes for every element type, info codes,
the legacy ABI, and what LAPACK leaves untouched (zeros)."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lapack_cases import PREFIXES, ct, random_matrix, random_spd, run_target, tol

SQRT2 = math.sqrt(2.0)
RNG = np.random.default_rng(1234)
ALL = list(PREFIXES.items())


def real_of(dtype):
    return np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64


def complex_of(dtype):
    return np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128


def eye(n, batch=()):
    return np.broadcast_to(np.eye(n), tuple(batch) + (n, n))


# -------------------------------------------------------------------------- trsm, potrf

@pytest.mark.parametrize("side,uplo,trans,diag", list(itertools.product("LR", "LU", "NTC", "NU")))
def test_trsm_every_option(side, uplo, trans, diag):
    m, k = 3, 2
    rng = np.random.default_rng(3)
    clean = random_matrix(rng, (2, m, m), np.complex64) + 3 * np.eye(m, dtype=np.complex64)
    clean = np.tril(clean) if uplo == "L" else np.triu(clean)
    if diag == "U":
        clean[..., range(m), range(m)] = 1
    unused = ~(np.tri(m, dtype=bool) if uplo == "L" else np.tri(m, dtype=bool).T) | (np.eye(m, dtype=bool)
                                                                                      & (diag == "U"))
    a = np.where(unused, np.complex64(np.nan), clean)   # never read
    b = random_matrix(rng, (2, m, k) if side == "L" else (2, k, m), np.complex64)
    config = {"side": ord(side), "uplo": ord(uplo), "trans_x": ord(trans), "diag": ord(diag)}
    (x,) = run_target("lapack_ctrsm_ffi", [a, b], [(b.shape, np.complex64)], config)
    op = {"N": clean, "T": np.swapaxes(clean, -1, -2), "C": ct(clean)}[trans]
    np.testing.assert_allclose(op @ x if side == "L" else x @ op, b, atol=1e-5)


def test_trsm_alpha_operand_and_legacy_abi():
    a = np.array([[2, 0], [1, 1]], np.float64)
    b = np.array([[2], [3]], np.float64)
    cfg = "{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}"
    (x,) = run_target("lapack_dtrsm_ffi", [a, b, np.array(3.0)], [((2, 1), np.float64)], cfg)
    np.testing.assert_allclose(x, [[3], [6]])
    scalars = [np.int32(v) for v in (1, 1, 0, 0, 2, 1, 1)]
    (x,) = run_target("lapack_dtrsm", scalars + [np.array(1.0), a, b], [((2, 1), np.float64)], "",
                      scalars=[1, 1, 0, 0, 2, 1, 1])
    np.testing.assert_allclose(x, [[1], [2]])


def test_potrf_keeps_other_triangle_and_reports_info():
    cfg = {"uplo": ord("L")}
    f, info = run_target("lapack_dpotrf_ffi", [np.array([[4, 7], [2, 3]], np.float64)],
                         [((2, 2), np.float64), ((), np.int32)], cfg)
    np.testing.assert_allclose(f, [[2, 7], [1, SQRT2]])
    assert info == 0 and info.dtype == np.int32
    bad = np.array([[[1, 2], [2, 1]], [[-1, 0], [0, 1]], [[4, 2], [2, 3]]], np.float32)
    f, info = run_target("lapack_spotrf_ffi", [bad], [((3, 2, 2), np.float32), ((3,), np.int32)], cfg)
    assert info.tolist() == [2, 1, 0]
    np.testing.assert_allclose(f[2], [[2, 2], [1, SQRT2]], rtol=1e-6)


@pytest.mark.parametrize("prefix,dtype", ALL)
@pytest.mark.parametrize("uplo", "LU")
def test_potrf_reconstructs(prefix, dtype, uplo):
    a = random_spd(RNG, (2, 3), 5, dtype)
    f, info = run_target(f"lapack_{prefix}potrf_ffi", [a], [(a.shape, dtype), ((2, 3), np.int32)],
                         {"uplo": ord(uplo)})
    assert not info.any()
    t = np.tril(f) if uplo == "L" else np.triu(f)
    np.testing.assert_allclose(t @ ct(t) if uplo == "L" else ct(t) @ t, a, rtol=tol(dtype), atol=tol(dtype) * 10)


def test_legacy_potrf_reads_its_option_operand():
    a = np.array([[4, 2], [2, 3]], np.float32)
    out = run_target("lapack_spotrf", [np.int32(0), np.int32(1), np.int32(2), a],
                     [((2, 2), np.float32), ((), np.int32)], scalars=[0, 1, 2, None])
    np.testing.assert_allclose(out[0], [[2, 1], [2, SQRT2]], rtol=1e-6)


# -------------------------------------------------------------------------- getrf, geqrf, orgqr, ormqr, geqp3

def test_getrf_hand_computed_and_singular():
    lu, ipiv, info = run_target("lapack_dgetrf_ffi", [np.array([[1, 2], [3, 4]], np.float64)],
                                [((2, 2), np.float64), ((2,), np.int32), ((), np.int32)])
    np.testing.assert_allclose(lu, [[3, 4], [1 / 3, 2 - 4 / 3]])
    assert ipiv.tolist() == [2, 2] and info == 0 and ipiv.dtype == np.int32
    _, ipiv, info = run_target("lapack_sgetrf_ffi", [np.array([[0, 1], [0, 2]], np.float32)],
                               [((2, 2), np.float32), ((2,), np.int32), ((), np.int32)])
    assert info == 1


@pytest.mark.parametrize("prefix,dtype", ALL)
@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5, 3), (2, 3, 5), (1, 1)])
def test_getrf_reconstructs(prefix, dtype, shape):
    a = random_matrix(RNG, shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    lu, ipiv, info = run_target(f"lapack_{prefix}getrf_ffi", [a], [(shape, dtype), (shape[:-2] + (k,), np.int32),
                                                                   (shape[:-2], np.int32)])
    assert not info.any()
    low = np.tril(lu, -1)[..., :, :k] + np.eye(m, k)
    up = np.triu(lu)[..., :k, :]
    for idx in np.ndindex(shape[:-2]):
        p = a[idx].copy()
        for i, piv in enumerate(ipiv[idx]):
            p[[i, piv - 1]] = p[[piv - 1, i]]
        np.testing.assert_allclose(low[idx] @ up[idx], p, rtol=tol(dtype), atol=tol(dtype) * 10)


def test_geqrf_orgqr_hand_computed():
    a_out, tau = run_target("lapack_dgeqrf_ffi", [np.array([[3], [4]], np.float64)],
                            [((2, 1), np.float64), ((1,), np.float64)])
    # dlarfg: beta = -5, tau = (beta - alpha)/beta = 1.6, v = 4/(3 + 5) = 0.5
    np.testing.assert_allclose(a_out, [[-5], [0.5]])
    np.testing.assert_allclose(tau, [1.6])
    (q,) = run_target("lapack_dorgqr_ffi", [a_out, tau], [((2, 1), np.float64)])
    np.testing.assert_allclose(q, [[-0.6], [-0.8]])


@pytest.mark.parametrize("prefix,dtype", ALL)
@pytest.mark.parametrize("shape", [(2, 5, 3), (4, 4), (3, 2, 5)])
def test_geqrf_orgqr_reconstruct(prefix, dtype, shape):
    a = random_matrix(RNG, shape, dtype)
    k = min(shape[-2:])
    a_out, tau = run_target(f"lapack_{prefix}geqrf_ffi", [a], [(shape, dtype), (shape[:-2] + (k,), dtype)])
    orgqr = "ungqr" if prefix in "cz" else "orgqr"
    reflectors = np.ascontiguousarray(a_out[..., :k])
    (q,) = run_target(f"lapack_{prefix}{orgqr}_ffi", [reflectors, tau], [(reflectors.shape, dtype)])
    np.testing.assert_allclose(q @ np.triu(a_out)[..., :k, :], a, rtol=tol(dtype), atol=tol(dtype) * 10)
    np.testing.assert_allclose(ct(q) @ q, eye(k, shape[:-2]), atol=tol(dtype) * 10)
    # ormqr applies the same Q (and its adjoint) without forming it.
    c = random_matrix(RNG, shape[:-2] + (shape[-2], 2), dtype)
    unmqr = "unmqr" if prefix in "cz" else "ormqr"
    (qc,) = run_target(f"lapack_{prefix}{unmqr}_ffi", [reflectors, tau, c], [(c.shape, dtype)],
                       {"left": True, "transpose": True})
    full_q = run_target(f"lapack_{prefix}{orgqr}_ffi", [np.concatenate(
        [reflectors, np.zeros(shape[:-1] + (shape[-2] - k,), dtype)], -1), tau],
        [(shape[:-1] + (shape[-2],), dtype)])[0]
    np.testing.assert_allclose(qc, ct(full_q) @ c, rtol=tol(dtype), atol=tol(dtype) * 10)


@pytest.mark.parametrize("prefix,dtype", ALL)
def test_geqp3_pivots_decreasing_diagonal(prefix, dtype):
    a = (random_matrix(RNG, (2, 6, 4), dtype) * np.array([1, 10, 0.1, 3])).astype(dtype)
    jpvt = np.zeros((2, 4), np.int32)
    a_out, jpvt_out, tau = run_target(f"lapack_{prefix}geqp3_ffi", [a, jpvt],
                                      [(a.shape, dtype), ((2, 4), np.int32), ((2, 4), dtype)])
    assert sorted(jpvt_out[0]) == [1, 2, 3, 4] and jpvt_out[0][0] == 2
    diag = np.abs(np.diagonal(a_out, axis1=-2, axis2=-1))
    assert np.all(np.diff(diag, axis=-1) <= 1e-5)


# -------------------------------------------------------------------------- svd, eigh

@pytest.mark.parametrize("prefix,dtype", ALL)
@pytest.mark.parametrize("routine", ["gesdd", "gesvd"])
@pytest.mark.parametrize("mode,shape", [("A", (2, 5, 3)), ("S", (3, 6)), ("N", (2, 3, 4))])
def test_svd_reconstructs(prefix, dtype, routine, mode, shape):
    a = random_matrix(RNG, shape, dtype)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = min(m, n)
    u_dims, vt_dims = ((m, m), (n, n)) if mode == "A" else ((m, k), (k, n))
    out = run_target(f"lapack_{prefix}{routine}_ffi", [a],
                     [(shape, dtype), (batch + (k,), real_of(dtype)), (batch + u_dims, dtype),
                      (batch + vt_dims, dtype), (batch, np.int32)], {"mode": ord(mode)})
    _, s, u, vt, info = out
    assert not info.any() and s.dtype == real_of(dtype)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(complex_of(dtype)), compute_uv=False),
                               rtol=tol(dtype), atol=tol(dtype))
    if mode == "N":
        assert not u.any() and not vt.any()   # not computed: zero
        return
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vt[..., :k, :], a, rtol=tol(dtype),
                               atol=tol(dtype) * 10)


@pytest.mark.parametrize("prefix,dtype", ALL)
@pytest.mark.parametrize("uplo", "LU")
def test_syevd_heevd_read_one_triangle(prefix, dtype, uplo):
    h = random_matrix(RNG, (2, 5, 5), dtype)
    h = (h + ct(h)) / 2
    garbage = np.where(np.tri(5, k=-1, dtype=bool).T if uplo == "L" else np.tri(5, k=-1, dtype=bool),
                       np.array(99, dtype), h)
    routine = "heevd" if prefix in "cz" else "syevd"
    v, w, info = run_target(f"lapack_{prefix}{routine}_ffi", [garbage],
                            [(h.shape, dtype), ((2, 5), real_of(dtype)), ((2,), np.int32)],
                            {"uplo": ord(uplo), "mode": ord("V")})
    assert not info.any()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=tol(dtype), atol=tol(dtype) * 10)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], rtol=tol(dtype), atol=tol(dtype) * 10)
    _, w_only, _ = run_target(f"lapack_{prefix}{routine}_ffi", [garbage],
                              [(h.shape, dtype), ((2, 5), real_of(dtype)), ((2,), np.int32)],
                              {"uplo": ord(uplo), "mode": ord("N")})
    np.testing.assert_allclose(w_only, w, rtol=tol(dtype), atol=tol(dtype) * 10)


def test_legacy_syevd_and_gesdd():
    a = np.array([[2, 1], [1, 2]], np.float64)
    v, w, info, *_ = run_target("lapack_dsyevd", [np.int32(1), np.int32(1), np.int32(2), a],
                                [((2, 2), np.float64), ((2,), np.float64), ((), np.int32), ((7,), np.float64)],
                                scalars=[1, 1, 2, None])
    np.testing.assert_allclose(w, [1, 3])
    out = run_target("lapack_sgesdd", [np.int32(0), np.int32(1), np.int32(1), np.int32(2), np.int32(2),
                                       np.int32(9), np.array([[3, 0], [0, -4]], np.float32)],
                     [((2, 2), np.float32), ((2,), np.float32), ((2, 2), np.float32), ((2, 2), np.float32),
                      ((), np.int32), ((16,), np.int32)], scalars=[0, 1, 1, 2, 2, 9, None])
    np.testing.assert_allclose(out[1], [4, 3])
    assert not out[5].any()   # the legacy workspace results are zero


# -------------------------------------------------------------------------- geev, gees, gehrd, sytrd

@pytest.mark.parametrize("prefix,dtype", ALL)
def test_geev_eigenvectors(prefix, dtype):
    rotation = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 2]], dtype)   # eigenvalues ±i and 2
    a = np.stack([rotation, random_matrix(RNG, (3, 3), dtype)])
    cfg = {"compute_left": ord("V"), "compute_right": ord("V")}
    if np.dtype(dtype).kind == "c":
        w, vl, vr, info = run_target(f"lapack_{prefix}geev_ffi", [a], [((2, 3), dtype), (a.shape, dtype),
                                                                       (a.shape, dtype), ((2,), np.int32)], cfg)
    else:
        c = complex_of(dtype)
        wr, wi, vl, vr, info = run_target(f"lapack_{prefix}geev_ffi", [a], [
            ((2, 3), dtype), ((2, 3), dtype), (a.shape, c), (a.shape, c), ((2,), np.int32)], cfg)
        w = wr + 1j * wi
        assert sorted(wi[0].tolist()) == [-1, 0, 1]
    assert not info.any()
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=tol(dtype) * 10)
    np.testing.assert_allclose(ct(vl) @ a, w[..., :, None] * ct(vl), atol=tol(dtype) * 10)
    np.testing.assert_allclose(np.linalg.norm(vr, axis=-2), 1, rtol=tol(dtype))


def test_geev_non_finite_matrix_gives_info_minus_4_and_zero_vectors():
    a = np.array([[[1, np.inf], [0, 1]], [[1, 2], [3, 4]]], np.float32)
    c = np.complex64
    wr, wi, vl, vr, info = run_target("lapack_sgeev_ffi", [a], [((2, 2), np.float32), ((2, 2), np.float32),
                                                                 ((2, 2, 2), c), ((2, 2, 2), c), ((2,), np.int32)],
                                      {"compute_left": ord("N"), "compute_right": ord("V")})
    assert info.tolist() == [-4, 0]
    assert not vr[0].any() and not vl.any()   # not computed: zero
    np.testing.assert_allclose(sorted(wr[1]), sorted(np.linalg.eigvals(a[1].astype(np.float64)).real), rtol=1e-5)


@pytest.mark.parametrize("prefix,dtype", ALL)
def test_gees_schur_form(prefix, dtype):
    a = random_matrix(RNG, (2, 5, 5), dtype)
    n = 5
    cfg = {"mode": ord("V"), "sort": ord("N")}
    if np.dtype(dtype).kind == "c":
        t, z, w, sdim, info = run_target(f"lapack_{prefix}gees_ffi", [a], [
            (a.shape, dtype), (a.shape, dtype), ((2, n), dtype), ((2,), np.int32), ((2,), np.int32)], cfg)
        assert not np.tril(t, -1).any()
    else:
        t, z, wr, wi, sdim, info = run_target(f"lapack_{prefix}gees_ffi", [a], [
            (a.shape, dtype), (a.shape, dtype), ((2, n), dtype), ((2, n), dtype), ((2,), np.int32),
            ((2,), np.int32)], cfg)
        assert not np.tril(t, -2).any()
    assert not info.any() and not sdim.any()
    np.testing.assert_allclose(z @ t @ ct(z), a, atol=tol(dtype) * 20)
    np.testing.assert_allclose(ct(z) @ z, eye(n, (2,)), atol=tol(dtype) * 10)


@pytest.mark.parametrize("prefix,dtype", ALL)
def test_gehrd_then_orgqr(prefix, dtype):
    n = 6
    a = random_matrix(RNG, (n, n), dtype)
    h, tau, info = run_target(f"lapack_{prefix}gehrd_ffi", [a], [((n, n), dtype), ((n - 1,), dtype), ((), np.int32)],
                              "{high = 6 : i32, low = 1 : i32}")
    assert info == 0
    orgqr = "ungqr" if prefix in "cz" else "orgqr"
    (q_inner,) = run_target(f"lapack_{prefix}{orgqr}_ffi", [np.ascontiguousarray(h[1:, :-1]), tau],
                            [((n - 1, n - 1), dtype)])
    q = np.eye(n, dtype=dtype)
    q[1:, 1:] = q_inner
    upper = np.triu(h, -1)
    np.testing.assert_allclose(q @ upper @ ct(q), a, atol=tol(dtype) * 20)


@pytest.mark.parametrize("prefix,dtype", ALL)
def test_sytrd_tridiagonal_has_the_eigenvalues(prefix, dtype):
    h = random_matrix(RNG, (2, 5, 5), dtype)
    h = (h + ct(h)) / 2
    routine = "hetrd" if prefix in "cz" else "sytrd"
    r = real_of(dtype)
    _, d, e, tau, info = run_target(f"lapack_{prefix}{routine}_ffi", [h], [
        (h.shape, dtype), ((2, 5), r), ((2, 4), r), ((2, 4), dtype), ((2,), np.int32)], {"uplo": ord("U")})
    assert not info.any()
    tri = np.zeros((2, 5, 5), r)
    tri[:, range(5), range(5)] = d
    tri[:, range(4), range(1, 5)] = e
    tri[:, range(1, 5), range(4)] = e
    np.testing.assert_allclose(np.linalg.eigvalsh(tri), np.linalg.eigvalsh(h), rtol=tol(dtype), atol=tol(dtype) * 10)


# -------------------------------------------------------------------------- gtsv

@pytest.mark.parametrize("prefix,dtype", ALL)
def test_gtsv_solves_and_ignores_the_unused_corners(prefix, dtype):
    m = 6
    dl, du = random_matrix(RNG, (2, m), dtype), random_matrix(RNG, (2, m), dtype)
    d = (5 + random_matrix(RNG, (2, m), dtype)).astype(dtype)
    b = random_matrix(RNG, (2, m, 3), dtype)
    out = run_target(f"lapack_{prefix}gtsv_ffi", [dl, d, du, b],
                     [((2, m), dtype)] * 3 + [((2, m, 3), dtype), ((2,), np.int32)])
    x, info = out[3], out[4]
    assert not info.any()
    t = np.zeros((2, m, m), dtype)
    t[:, range(m), range(m)] = d
    t[:, range(1, m), range(m - 1)] = dl[:, 1:]    # dl[0] is not used
    t[:, range(m - 1), range(1, m)] = du[:, :-1]   # nor du[m-1]
    np.testing.assert_allclose(t @ x, b, atol=tol(dtype) * 10)


def test_gtsv_singular_reports_info():
    z = np.zeros(3, np.float64)
    out = run_target("lapack_dgtsv_ffi", [z, z, z, np.ones((3, 1))], [((3,), np.float64)] * 3 +
                     [((3, 1), np.float64), ((), np.int32)])
    assert out[4] == 1


# -------------------------------------------------------------------------- batches and empty shapes

def test_empty_batch_and_empty_matrices():
    out = run_target("lapack_sgetrf_ffi", [np.zeros((0, 3, 3), np.float32)],
                     [((0, 3, 3), np.float32), ((0, 3), np.int32), ((0,), np.int32)])
    assert [o.shape for o in out] == [(0, 3, 3), (0, 3), (0,)]
    f, info = run_target("lapack_spotrf_ffi", [np.zeros((2, 0, 0), np.float32)],
                         [((2, 0, 0), np.float32), ((2,), np.int32)], {"uplo": ord("L")})
    assert f.shape == (2, 0, 0) and info.tolist() == [0, 0]


# -------------------------------------------------------------------------- property tests

SHAPES = st.tuples(st.lists(st.integers(0, 3), max_size=2).map(tuple), st.integers(1, 7), st.integers(1, 7))


@settings(max_examples=40, deadline=None)
@given(shape=SHAPES, prefix=st.sampled_from("sdcz"), seed=st.integers(0, 2 ** 16))
def test_lu_qr_svd_identities_on_any_shape(shape, prefix, seed):
    batch, m, n = shape
    dtype = PREFIXES[prefix]
    rng = np.random.default_rng(seed)
    a = random_matrix(rng, batch + (m, n), dtype)
    k = min(m, n)
    lu, ipiv, info = run_target(f"lapack_{prefix}getrf_ffi", [a], [(a.shape, dtype), (batch + (k,), np.int32),
                                                                   (batch, np.int32)])
    assert np.all((ipiv >= 1) & (ipiv <= m))
    rebuilt = (np.tril(lu, -1)[..., :, :k] + np.eye(m, k)) @ np.triu(lu)[..., :k, :]
    for index in np.ndindex(batch):
        p = a[index].copy()
        for i, piv in enumerate(ipiv[index]):
            p[[i, piv - 1]] = p[[piv - 1, i]]
        np.testing.assert_allclose(rebuilt[index], p, rtol=tol(dtype) * 10, atol=tol(dtype) * 10)
    _, s, u, vt, info = run_target(f"lapack_{prefix}gesdd_ffi", [a], [
        (a.shape, dtype), (batch + (k,), real_of(dtype)), (batch + (m, k), dtype), (batch + (k, n), dtype),
        (batch, np.int32)], {"mode": ord("S")})
    assert not info.any() and np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    np.testing.assert_allclose((u * s[..., None, :]) @ vt, a, rtol=tol(dtype) * 10, atol=tol(dtype) * 10)
