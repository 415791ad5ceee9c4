"""Every LAPACK target compiled against the interpreter, on raw results (eigenvectors, packed
factors, pivots, info) rather than invariants: both backends make the same LAPACK calls, so
they must agree to the last bits. The modules give operands and results JAX's column-major
layouts and other ones, batches and odd sizes; the legacy ABI reads constant options."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import JitExecutable
from hlo.interpreter import run
from hlo.runtime import values_io
from hlo.shapes import primitive_type

TYPES = {"s": ("f32", "f32", "c64"), "d": ("f64", "f64", "c128"), "c": ("c64", "f32", "c64"),
         "z": ("c128", "f64", "c128")}


def jax_layout(rank: int) -> str:
    """Column-major matrices, batch dimensions major (JAX's operand_layout_constraints)."""
    if rank < 2:
        return "{0}" if rank == 1 else ""
    return "{" + ",".join(map(str, [rank - 2, rank - 1, *range(rank - 3, -1, -1)])) + "}"


def spell(t: str, dims, layout=None) -> str:
    return f"{t}[{','.join(map(str, dims))}]" + (jax_layout(len(dims)) if layout is None else layout)


class ModuleText:
    def __init__(self, name: str):
        self.name, self.params, self.lines, self.values = name, [], [], []

    def param(self, t: str, dims, layout: str = "", kind: str = "random") -> str:
        name = f"p{len(self.params)}"
        self.lines.append(f"  {name} = {spell(t, dims, layout)} parameter({len(self.params)})")
        self.params.append((t, tuple(dims), kind))
        return name

    def call(self, target: str, operands, results, config: str = "") -> None:
        name = f"call{len(self.values)}"
        shape = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
        self.lines.append(f"  {name} = {shape} custom-call({', '.join(operands)}), custom_call_target=\"{target}\", "
                          f"api_version=API_VERSION_TYPED_FFI, backend_config={{{config}}}")
        self.values.append((name, shape))

    def constant(self, value: int) -> str:
        name = f"k{len(self.lines)}"
        self.lines.append(f"  {name} = s32[] constant({value})")
        return name

    def text(self) -> str:
        shapes, names = ", ".join(shape for _, shape in self.values), ", ".join(name for name, _ in self.values)
        root = f"  ROOT out = ({shapes}) tuple({names})"
        return "\n".join([f"HloModule {self.name}", "", "ENTRY main {", *self.lines, root, "}", ""])


def ffi_module(prefix: str) -> ModuleText:
    t, r, c = TYPES[prefix]
    cplx = prefix in "cz"
    m = ModuleText(f"lapack_{prefix}")
    v = lambda dims, layout=None: spell(t, dims, layout)  # noqa: E731
    s32 = lambda dims: spell("s32", dims)  # noqa: E731
    a = m.param(t, (2, 5, 5), kind="triangular")
    b = m.param(t, (2, 5, 3), "{2,1,0}")
    m.call(f"lapack_{prefix}trsm_ffi", [a, b], [v((2, 5, 3))], "side = 76 : ui8, uplo = 85 : ui8, "
           "trans_x = 78 : ui8, diag = 78 : ui8")
    b2 = m.param(t, (2, 3, 5))
    m.call(f"lapack_{prefix}trsm_ffi", [a, b2], [v((2, 3, 5), "{2,1,0}")],
           "side = 82 : ui8, uplo = 76 : ui8, trans_x = 67 : ui8, diag = 85 : ui8")
    alpha = m.param(t, ())
    m.call(f"lapack_{prefix}trsm_ffi", [a, b, alpha], [v((2, 5, 3))],
           "side = 76 : ui8, uplo = 76 : ui8, trans_x = 84 : ui8, diag = 78 : ui8")
    x = m.param(t, (3, 4, 6))
    m.call(f"lapack_{prefix}getrf_ffi", [x], [v((3, 4, 6)), s32((3, 4)), s32((3,))])
    tall = m.param(t, (2, 6, 4), "{1,2,0}")
    m.call(f"lapack_{prefix}geqrf_ffi", [tall], [v((2, 6, 4)), v((2, 4))])
    jpvt = m.param("s32", (3,), kind="zeros")
    small = m.param(t, (5, 3))
    m.call(f"lapack_{prefix}geqp3_ffi", [small, jpvt], [v((5, 3)), s32((3,)), v((3,))])
    tau = m.param(t, (2, 3))
    orgqr = "ungqr" if cplx else "orgqr"
    m.call(f"lapack_{prefix}{orgqr}_ffi", [tall, tau], [v((2, 6, 4))])
    c_left, c_right = m.param(t, (5, 2)), m.param(t, (2, 5))
    tau3 = m.param(t, (3,))
    ormqr = "unmqr" if cplx else "ormqr"
    m.call(f"lapack_{prefix}{ormqr}_ffi", [small, tau3, c_left], [v((5, 2))], "left = true, transpose = true")
    m.call(f"lapack_{prefix}{ormqr}_ffi", [small, tau3, c_right], [v((2, 5), "{1,0}")],
           "left = false, transpose = false")
    spd = m.param(t, (2, 4, 4), kind="spd")
    m.call(f"lapack_{prefix}potrf_ffi", [spd], [v((2, 4, 4)), s32((2,))], "uplo = 85 : ui8")
    rect = m.param(t, (2, 5, 3))
    for routine, mode, (ud, vd) in (("gesdd", "A", ((5, 5), (3, 3))), ("gesdd", "S", ((5, 3), (3, 3))),
                                    ("gesdd", "N", ((5, 3), (3, 3))), ("gesvd", "S", ((5, 3), (3, 3))),
                                    ("gesvd", "A", ((5, 5), (3, 3)))):
        m.call(f"lapack_{prefix}{routine}_ffi", [rect], [v((2, 5, 3)), spell(r, (2, 3)), v((2,) + ud),
                                                         v((2,) + vd), s32((2,))], f"mode = {ord(mode)} : ui8")
    wide = m.param(t, (3, 5))
    m.call(f"lapack_{prefix}gesdd_ffi", [wide], [v((3, 5)), spell(r, (3,)), v((3, 3)), v((3, 5)), s32(())],
           "mode = 83 : ui8")
    sq = m.param(t, (2, 4, 4))
    syevd = "heevd" if cplx else "syevd"
    for uplo, mode in (("U", "V"), ("L", "N")):
        m.call(f"lapack_{prefix}{syevd}_ffi", [sq], [v((2, 4, 4)), spell(r, (2, 4)), s32((2,))],
               f"uplo = {ord(uplo)} : ui8, mode = {ord(mode)} : ui8")
    nonfinite = m.param(t, (2, 4, 4), kind="one_inf")
    for operand, left in ((sq, "V"), (nonfinite, "N")):
        if cplx:
            results = [v((2, 4)), v((2, 4, 4)), v((2, 4, 4)), s32((2,))]
        else:
            results = [v((2, 4)), v((2, 4)), spell(c, (2, 4, 4)), spell(c, (2, 4, 4)), s32((2,))]
        m.call(f"lapack_{prefix}geev_ffi", [operand], results,
               f"compute_left = {ord(left)} : ui8, compute_right = 86 : ui8")
    five = m.param(t, (5, 5), "{1,0}")
    eig = [v((5,))] if cplx else [v((5,)), v((5,))]
    m.call(f"lapack_{prefix}gees_ffi", [five], [v((5, 5)), v((5, 5)), *eig, s32(()), s32(())],
           "mode = 86 : ui8, sort = 78 : ui8")
    m.call(f"lapack_{prefix}gehrd_ffi", [five], [v((5, 5)), v((4,)), s32(())], "low = 2 : i32, high = 4 : i32")
    sytrd = "hetrd" if cplx else "sytrd"
    m.call(f"lapack_{prefix}{sytrd}_ffi", [sq], [v((2, 4, 4)), spell(r, (2, 4)), spell(r, (2, 3)), v((2, 3)),
                                                 s32((2,))], "uplo = 85 : ui8")
    diagonals = [m.param(t, (2, 6), kind="dominant" if i == 1 else "random") for i in range(3)]
    rhs = m.param(t, (2, 6, 2), "{2,1,0}")
    m.call(f"lapack_{prefix}gtsv_ffi", [*diagonals, rhs], [v((2, 6))] * 3 + [v((2, 6, 2)), s32((2,))])
    return m


def legacy_module(prefix: str) -> ModuleText:
    t, r, _ = TYPES[prefix]
    cplx = prefix in "cz"
    m = ModuleText(f"legacy_{prefix}")
    v = lambda dims: spell(t, dims)  # noqa: E731
    s32 = lambda dims: spell("s32", dims)  # noqa: E731
    k = m.constant
    spd = m.param(t, (2, 3, 3), kind="spd")
    m.call(f"lapack_{prefix}potrf", [k(0), k(2), k(3), spd], [v((2, 3, 3)), s32((2,))])
    a, b = m.param(t, (3, 3), kind="triangular"), m.param(t, (3, 2))
    alpha = m.param(t, ())
    m.call(f"lapack_{prefix}trsm", [k(1), k(0), k(2), k(0), k(3), k(2), k(1), alpha, a, b], [v((3, 2))])
    x = m.param(t, (4, 3))
    m.call(f"lapack_{prefix}getrf", [k(1), k(4), k(3), x], [v((4, 3)), s32((3,)), s32(())])
    m.call(f"lapack_{prefix}geqrf", [k(1), k(4), k(3), k(64), x], [v((4, 3)), v((3,)), s32(()), v((64,))])
    tau = m.param(t, (2,))
    orgqr = "ungqr" if cplx else "orgqr"
    m.call(f"lapack_{prefix}{orgqr}", [k(1), k(4), k(3), k(2), k(64), x, tau], [v((4, 3)), s32(()), v((64,))])
    sym = m.param(t, (3, 3))
    syevd = "heevd" if cplx else "syevd"
    m.call(f"lapack_{prefix}{syevd}", [k(1), k(1), k(3), sym], [v((3, 3)), spell(r, (3,)), s32(())])
    m.call(f"lapack_{prefix}gesdd", [k(0), k(1), k(1), k(4), k(3), k(64), x],
           [v((4, 3)), spell(r, (3,)), v((4, 3)), v((3, 3)), s32(()), s32((24,))])
    return m


def argument(rng, t: str, dims, kind: str):
    dtype = primitive_type(t).dtype
    if kind == "zeros":
        return np.zeros(dims, dtype)
    x = rng.standard_normal(dims)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(dims)
    if kind == "spd":
        x = x @ np.conj(np.swapaxes(x, -1, -2)) + dims[-1] * np.eye(dims[-1])
    elif kind == "triangular":
        x = x + 4 * np.eye(dims[-1])
    elif kind == "dominant":
        x = x + 5
    elif kind == "one_inf":
        x[0, 1, 2] = np.inf
    return x.astype(dtype)


def compare(m: ModuleText, seed: int):
    """Compiled results against the interpreter's: integers exactly, floats to a few ulps."""
    module = parse_module(m.text(), f"{m.name}.hlo")
    rng = np.random.default_rng(seed)
    args = [argument(rng, t, dims, kind) for t, dims, kind in m.params]
    expected = run(module, *args)
    got = JitExecutable(module).run(*args)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        g = values_io.from_storage(np.asarray(g))
        assert g.shape == e.shape and g.dtype == e.dtype, f"result {i}"
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(g, e, err_msg=f"result {i}")
        else:
            scale = 1e-5 if e.dtype in (np.float32, np.complex64) else 1e-12
            np.testing.assert_allclose(g, e, rtol=scale, atol=scale, err_msg=f"result {i}")
    return expected


@pytest.mark.parametrize("prefix", "sdcz")
def test_every_ffi_target_compiled_matches_interpreter(prefix):
    results = compare(ffi_module(prefix), seed=ord(prefix))
    geev_infos = [r for r in results if r.dtype == np.int32 and r.shape == (2,)]
    assert any(info.tolist() == [-4, 0] for info in geev_infos)   # the non-finite geev operand


@pytest.mark.parametrize("prefix", "sdcz")
def test_every_legacy_target_compiled_matches_interpreter(prefix):
    compare(legacy_module(prefix), seed=100 + ord(prefix))


CSE_CASE = """HloModule cse_backend_config

ENTRY main {
  a = f32[3,3]{0,1} parameter(0)
  b = f32[3,2]{0,1} parameter(1)
  lower = f32[3,2]{0,1} custom-call(a, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}
  upper = f32[3,2]{0,1} custom-call(a, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}
  ROOT r = (f32[3,2]{0,1}, f32[3,2]{0,1}) tuple(lower, upper)
}
"""


def test_calls_differing_only_in_backend_config_are_not_merged():
    module = parse_module(CSE_CASE, "cse.hlo")
    a = (np.arange(9, dtype=np.float32).reshape(3, 3) + 4 * np.eye(3)).astype(np.float32)
    b = np.ones((3, 2), np.float32)
    lower, upper = JitExecutable(module).run(a, b)
    np.testing.assert_allclose(np.tril(a) @ lower, b, rtol=1e-5)
    np.testing.assert_allclose(np.triu(a) @ upper, b, rtol=1e-5)


@pytest.mark.parametrize("t", ["f32", "f64", "c64", "c128"])
def test_perturbed_tridiagonal_solve_compiled_matches_interpreter(t):
    """jaxlib's tridiagonal_solve_perturbed_ffi on singular systems (zero and tiny pivots), n = 1 too."""
    m = ModuleText(f"tsolve_{t}")
    for n, batch in ((6, 4), (1, 2), (2, 3)):
        operands = [m.param(t, (batch, n), "{1,0}", kind=kind) for kind in ("random", "random", "random")]
        rhs = m.param(t, (batch, n, 3), "{1,2,0}" if n > 1 else "{2,1,0}")
        m.call("tridiagonal_solve_perturbed_ffi", [*operands, rhs], [spell(t, (batch, n, 3))])
    module = parse_module(m.text(), "tsolve.hlo")
    rng = np.random.default_rng(5)
    args = [argument(rng, pt, dims, kind) for pt, dims, kind in m.params]
    args[1][0, 2] = 0        # exactly zero pivots,
    args[0][1] = 0
    args[1][1, 3] = 1e-30    # a tiny one,
    args[1][2] = 0           # a zero diagonal
    args[5][1] = 0           # and a zero 1x1 system
    expected = run(module, *args)
    got = JitExecutable(module).run(*args)
    scale = 1e-5 if t in ("f32", "c64") else 1e-12
    for g, e in zip(got, expected):
        assert np.isfinite(e).all()
        np.testing.assert_allclose(g, e, rtol=scale, atol=scale)
