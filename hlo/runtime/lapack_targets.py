"""Every LAPACK custom-call target JAX emits on CPU, and how each becomes a LapackCall.

JAX lowers jnp.linalg, jax.scipy.linalg and lax.linalg on CPU to typed-FFI custom calls
that jaxlib answers with LAPACK (jaxlib/cpu/lapack_kernels.cc), one name per routine and
element type (s f32, d f64, c c64, z c128):

| family | operands | results | backend_config |
|---|---|---|---|
| trsm | a, b (an older ABI adds alpha) | b_out | side, uplo, trans_x, diag |
| getrf | a | a_out, ipiv s32, info s32 | |
| geqrf | a | a_out, tau | |
| geqp3 | a, jpvt s32 | a_out, jpvt_out, tau | |
| orgqr / ungqr | a, tau | a_out | |
| ormqr / unmqr | a, tau, c | c_out | left, transpose (bool) |
| potrf | a | a_out, info | uplo |
| gesdd, gesvd | a | a_out, s (real), u, vt, info | mode (A, S or N) |
| syevd / heevd | a | a_out, w (real), info | uplo, mode (V or N) |
| geev | a | wr, wi, vl, vr (complex), info; complex types: w, vl, vr, info | compute_left, compute_right |
| gees | a | t, vs, wr, wi, sdim, info; complex types: t, vs, w, sdim, info | mode, sort (N only) |
| gehrd | a | a_out, tau, info | low, high (i32) |
| sytrd / hetrd | a | a_out, d (real), e (real), tau, info | uplo |
| gtsv | dl, d, du, b | dl_out, d_out, du_out, b_out, info | |

Character options are ASCII codes (`uplo = 76 : ui8` is 'L'). Older programs use the
legacy ABI (`lapack_spotrf`, ...: potrf, trsm, getrf, geqrf, orgqr, syevd, gesdd) whose
options are leading s32 scalar operands; their extra results (workspaces) are zero.

`plan_call` checks a call against its target and returns the LapackCall (lapack_plan.py)
both backends execute; `TARGETS` names every target.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ..shapes import S32, PrimitiveType, complex_type_of, primitive_type, real_type_of
from .ffi_attributes import backend_config_dict
from .lapack_library import LapackLibrary, find_lapack
from .lapack_plan import (Arg, Char, Int, LapackCall, LapackTargetError, Null, One, Ref, Unpack, Work,
                          query_workspace)

ShapeSpec = tuple[tuple[int, ...], PrimitiveType]   # (dims, element type) of one operand or result

_TYPES = {"s": primitive_type("f32"), "d": primitive_type("f64"), "c": primitive_type("c64"),
          "z": primitive_type("c128")}


def _ld(n: int) -> int:
    """A leading dimension: LAPACK wants at least 1 even for empty matrices."""
    return max(1, n)


# -------------------------------------------------------------------------- the request

class _Request:
    """One custom call as a family reads it: operands and options by role, declared results."""

    def __init__(self, target: str, type_: PrimitiveType, operands: Sequence[ShapeSpec],
                 results: Sequence[ShapeSpec], config, library: LapackLibrary):
        self.target, self.type, self.library = target, type_, library
        self.operands, self.results = list(operands), list(results)
        self._config = config
        self.int_type = primitive_type("s64" if library.int_bits == 64 else "s32")

    # -- names
    @property
    def prefix(self) -> str:
        return next(p for p, t in _TYPES.items() if t == self.type)

    @property
    def is_complex(self) -> bool:
        return self.type.is_complex

    @property
    def real(self) -> PrimitiveType:
        return real_type_of(self.type)

    def fail(self, message: str) -> LapackTargetError:
        return LapackTargetError(f"{self.target}: {message}")

    # -- operands by role (the legacy ABI maps roles to other positions)
    def operand_index(self, role: int) -> int:
        return role

    def expected_operand_counts(self) -> tuple[int, ...]:
        raise NotImplementedError

    def has_operand(self, role: int) -> bool:
        return self.operand_index(role) < len(self.operands)

    def operand(self, role: int, type_: Optional[PrimitiveType] = None) -> tuple[int, ...]:
        dims, t = self.operands[self.operand_index(role)]
        want = type_ or self.type
        if t != want:
            raise self.fail(f"operand {self.operand_index(role)} has element type {t.name}, expected {want.name}")
        return tuple(dims)

    def matrix(self, role: int, square: bool = False) -> tuple[tuple[int, ...], int, int]:
        """(batch dims, rows, columns) of a matrix operand."""
        dims = self.operand(role)
        if len(dims) < 2:
            raise self.fail(f"operand {self.operand_index(role)} must be a (batch of) matrix, got rank {len(dims)}")
        if square and dims[-1] != dims[-2]:
            raise self.fail(f"operand {self.operand_index(role)} must be square, got {list(dims[-2:])}")
        return dims[:-2], dims[-2], dims[-1]

    def batched(self, role: int, batch: tuple[int, ...], dims: tuple[int, ...],
                type_: Optional[PrimitiveType] = None) -> None:
        """Check an operand is batch + dims."""
        got = self.operand(role, type_)
        if got != batch + dims:
            raise self.fail(f"operand {self.operand_index(role)} has dimensions {list(got)}, expected "
                            f"{list(batch + dims)}")

    def result_dims(self, index: int) -> Optional[tuple[int, ...]]:
        return tuple(self.results[index][0]) if index < len(self.results) else None

    # -- options
    def option(self, name: str) -> object:
        config = self._config
        if name not in config:
            raise self.fail(f"backend_config lacks attribute {name!r}")
        return config[name]

    def char(self, name: str, allowed: str, default: Optional[str] = None) -> str:
        if default is not None and name not in self._config:
            return default
        value = self.option(name)
        char = chr(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)
        if char not in allowed:
            raise self.fail(f"attribute {name}={value!r} is not one of {list(allowed)}")
        return char

    def integer(self, name: str) -> int:
        value = self.option(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"attribute {name}={value!r} is not an integer")
        return value

    def flag(self, name: str) -> bool:
        value = self.option(name)
        if not isinstance(value, (bool, int)):
            raise self.fail(f"attribute {name}={value!r} is not a boolean")
        return bool(value)

    # -- results the legacy ABI adds
    def info_result(self, ffi_index: Optional[int]) -> Optional[int]:
        return ffi_index


class _FfiRequest(_Request):
    def __init__(self, target, type_, operands, results, config: dict, library, counts: tuple[int, ...]):
        super().__init__(target, type_, operands, results, config, library)
        if len(operands) not in counts:
            raise self.fail(f"expects {' or '.join(map(str, counts))} operands, got {len(operands)}")


# -------------------------------------------------------------------------- building a plan

class _Builder:
    def __init__(self, req: _Request, routine: str):
        self.req = req
        self.routine = req.prefix + routine
        self.works: list[Work] = []
        self.unpacks: list[Unpack] = []
        self.args: tuple[Arg, ...] = ()
        self.batch: tuple[int, ...] = ()
        self.info: Optional[str] = None
        self.finite_check: Optional[str] = None
        self.skip = False

    def work(self, name: str, type_: PrimitiveType, dims: tuple[int, ...], operand: Optional[int] = None,
             result: Optional[int] = None, batched: bool = True) -> Ref:
        index = self.req.operand_index(operand) if operand is not None else None
        self.works.append(Work(name, type_, tuple(int(d) for d in dims), index, result, batched))
        return Ref(name)

    def value(self, name, dims, operand=None, result=None, batched=True) -> Ref:
        return self.work(name, self.req.type, dims, operand, result, batched)

    def real(self, name, dims, operand=None, result=None) -> Ref:
        return self.work(name, self.req.real, dims, operand, result)

    def ints(self, name, dims, operand=None, result=None) -> Ref:
        return self.work(name, self.req.int_type, dims, operand, result)

    def info_work(self, result: Optional[int]) -> Ref:
        self.info = "info"
        return self.ints("info", (), result=self.req.info_result(result))

    def query(self, *args: Arg) -> int:
        """LAPACK's workspace size for this call (args hold Int(-1) as lwork)."""
        if self.skip:
            return 1
        return query_workspace(self.req.library, self.routine, self.req.type.dtype, args, self.req.target)

    def with_workspace(self, head: tuple, tail: tuple) -> tuple:
        """head, work, lwork, tail: the arguments with the workspace LAPACK's query asks for."""
        lwork = self.query(*head, Ref("work"), Int(-1), *tail)
        return (*head, self.value("work", (lwork,)), Int(lwork), *tail)

    def general_matrix(self, role: int = 0) -> tuple[int, int, Ref]:
        """(m, n, its working array) of the matrix operand factored in place into result 0."""
        self.batch, m, n = self.req.matrix(role)
        self.skip = m * n == 0
        return m, n, self.value("a", (m, n), operand=role, result=0)

    def finish(self, *args: Arg, results: int) -> LapackCall:
        req = self.req
        self._check_results(results)
        return LapackCall(req.target, self.routine, req.type, tuple(self.batch), tuple(self.works), tuple(args),
                          tuple((tuple(d), t) for d, t in req.results), self.info, self.finite_check,
                          tuple(self.unpacks), self.skip)

    def _check_results(self, count: int) -> None:
        req = self.req
        if isinstance(req, _FfiRequest) and len(req.results) != count:
            raise req.fail(f"declares {len(req.results)} results, the target gives {count}")
        if len(req.results) < count:
            raise req.fail(f"declares {len(req.results)} results, the target gives at least {count}")
        expected = {w.result: (w.dims, S32 if w.type == req.int_type else w.type)
                    for w in self.works if w.result is not None}
        for u in self.unpacks:
            expected[u.result] = (self._work(u.packed).dims, complex_type_of(self._work(u.packed).type))
        for index, (dims, type_) in sorted(expected.items()):
            got_dims, got_type = req.results[index]
            want = tuple(self.batch) + dims
            if tuple(got_dims) != want or got_type != type_:
                raise req.fail(f"result {index} is {_spell(got_dims, got_type)}, the target gives "
                               f"{_spell(want, type_)}")

    def _work(self, name: str) -> Work:
        return next(w for w in self.works if w.name == name)


def _spell(dims, type_: PrimitiveType) -> str:
    return f"{type_.name}[{','.join(str(d) for d in dims)}]"


# -------------------------------------------------------------------------- the families

def _trsm(req: _Request) -> LapackCall:
    p = _Builder(req, "trsm")
    a_batch, k, _ = req.matrix(0, square=True)
    batch, m, n = req.matrix(1)
    side, uplo = req.char("side", "LR"), req.char("uplo", "LU")
    trans, diag = req.char("trans_x", "NTC"), req.char("diag", "NU")
    if a_batch != batch:
        raise req.fail(f"the batch dimensions of a {list(a_batch)} and b {list(batch)} differ")
    if k != (m if side == "L" else n):
        raise req.fail(f"a is {k}x{k} but b is {m}x{n} with side={side}")
    p.batch, p.skip = batch, m * n == 0
    a = p.value("a", (k, k), operand=0)
    b = p.value("b", (m, n), operand=1, result=0)
    alpha: Arg = One()
    if req.has_operand(2):
        req.batched(2, (), ())
        alpha = p.value("alpha", (), operand=2, batched=False)
    return p.finish(Char(side), Char(uplo), Char(trans), Char(diag), Int(m), Int(n), alpha, a, Int(_ld(k)), b,
                    Int(_ld(m)), results=1)


def _getrf(req: _Request) -> LapackCall:
    p = _Builder(req, "getrf")
    m, n, a = p.general_matrix()
    ipiv = p.ints("ipiv", (min(m, n),), result=1)
    return p.finish(Int(m), Int(n), a, Int(_ld(m)), ipiv, p.info_work(2), results=3)


def _geqrf(req: _Request) -> LapackCall:
    p = _Builder(req, "geqrf")
    m, n, a = p.general_matrix()
    tau = p.value("tau", (min(m, n),), result=1)
    return p.finish(*p.with_workspace((Int(m), Int(n), a, Int(_ld(m)), tau), (p.info_work(None),)), results=2)


def _geqp3(req: _Request) -> LapackCall:
    p = _Builder(req, "geqp3")
    m, n, a = p.general_matrix()
    req.batched(1, p.batch, (n,), S32)
    jpvt = p.ints("jpvt", (n,), operand=1, result=1)
    tau = p.value("tau", (min(m, n),), result=2)
    rwork: tuple[Arg, ...] = (p.real("rwork", (2 * n,)),) if req.is_complex else ()
    head = (Int(m), Int(n), a, Int(_ld(m)), jpvt, tau)
    return p.finish(*p.with_workspace(head, (*rwork, p.info_work(None))), results=3)


def _orgqr(req: _Request) -> LapackCall:
    p = _Builder(req, "ungqr" if req.is_complex else "orgqr")
    p.batch, m, n = req.matrix(0)
    tau_dims = req.operand(1)
    if len(tau_dims) < 1 or tau_dims[:-1] != p.batch:
        raise req.fail(f"tau has dimensions {list(tau_dims)}, expected {list(p.batch)} and one more")
    k = tau_dims[-1]
    if not m >= n >= k:
        raise req.fail(f"needs rows >= columns >= reflectors, got a {m}x{n} and {k} reflectors")
    p.skip = m * n == 0
    a = p.value("a", (m, n), operand=0, result=0)
    tau = p.value("tau", (k,), operand=1)
    head = (Int(m), Int(n), Int(k), a, Int(_ld(m)), tau)
    return p.finish(*p.with_workspace(head, (p.info_work(None),)), results=1)


def _ormqr(req: _Request) -> LapackCall:
    p = _Builder(req, "unmqr" if req.is_complex else "ormqr")
    left, transpose = req.flag("left"), req.flag("transpose")
    p.batch, m, n = req.matrix(2)
    a_batch, a_rows, a_cols = req.matrix(0)
    tau_dims = req.operand(1)
    k = tau_dims[-1] if tau_dims else 0
    if a_batch != p.batch or tau_dims[:-1] != p.batch:
        raise req.fail("a, tau and c must have the same batch dimensions")
    if a_rows != (m if left else n) or not k <= min(a_rows, a_cols):
        raise req.fail(f"a is {a_rows}x{a_cols} with {k} reflectors, c is {m}x{n} (left={left})")
    side, trans = "L" if left else "R", ("C" if req.is_complex else "T") if transpose else "N"
    p.skip = m * n == 0
    a = p.value("a", (a_rows, a_cols), operand=0)
    tau = p.value("tau", (k,), operand=1)
    c = p.value("c", (m, n), operand=2, result=0)
    head = (Char(side), Char(trans), Int(m), Int(n), Int(k), a, Int(_ld(a_rows)), tau, c, Int(_ld(m)))
    return p.finish(*p.with_workspace(head, (p.info_work(None),)), results=1)


def _potrf(req: _Request) -> LapackCall:
    p = _Builder(req, "potrf")
    p.batch, n, _ = req.matrix(0, square=True)
    uplo = req.char("uplo", "LU")
    p.skip = n == 0
    a = p.value("a", (n, n), operand=0, result=0)
    return p.finish(Char(uplo), Int(n), a, Int(_ld(n)), p.info_work(1), results=2)


def _svd_shapes(req: _Request, mode: str, m: int, n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """u's and vt's per-matrix dims: what the mode computes, or (mode N) what the call declares."""
    k = min(m, n)
    full, reduced = ((m, m), (n, n)), ((m, k), (k, n))
    if mode == "A":
        return full
    if mode == "S":
        return reduced
    declared = (req.result_dims(2) or ())[-2:], (req.result_dims(3) or ())[-2:]
    return full if declared == full else reduced


def _svd(req: _Request, divide_and_conquer: bool) -> LapackCall:
    p = _Builder(req, "gesdd" if divide_and_conquer else "gesvd")
    m, n, a = p.general_matrix()
    mode = req.char("mode", "ASN")
    k = min(m, n)
    (u_rows, u_cols), (vt_rows, vt_cols) = _svd_shapes(req, mode, m, n)
    s = p.real("s", (k,), result=1)
    u = p.value("u", (u_rows, u_cols), result=2)
    vt = p.value("vt", (vt_rows, vt_cols), result=3)
    info = p.info_work(4)
    jobs = (Char(mode),) if divide_and_conquer else (Char(mode), Char(mode))
    query_ldvt = n if mode == "A" else k   # jaxlib's query, whatever vt's declared rows
    rwork: tuple[Arg, ...] = ()
    if req.is_complex:
        rwork = (p.real("rwork", (_svd_real_workspace(m, n, mode) if divide_and_conquer else 5 * k,)),)
    iwork: tuple[Arg, ...] = (p.ints("iwork", (8 * k,)),) if divide_and_conquer else ()

    def call(ldvt: int, work: Arg, lwork: int) -> tuple[Arg, ...]:
        return (*jobs, Int(m), Int(n), a, Int(_ld(m)), s, u, Int(_ld(m)), vt, Int(_ld(ldvt)), work, Int(lwork),
                *rwork, *iwork, info)

    lwork = p.query(*call(query_ldvt, Ref("work"), -1))
    return p.finish(*call(vt_rows, p.value("work", (lwork,)), lwork), results=5)


def _svd_real_workspace(m: int, n: int, mode: str) -> int:
    """jaxlib's rwork size for complex gesdd."""
    k, big = min(m, n), max(m, n)
    if mode == "N":
        return 7 * k
    return max(5 * k * k + 5 * k, 2 * big * k + 2 * k * k + k)


def _syevd(req: _Request) -> LapackCall:
    """syevd/heevd with jaxlib's fixed workspace sizes (its calls use them, not the query)."""
    p = _Builder(req, "heevd" if req.is_complex else "syevd")
    p.batch, n, _ = req.matrix(0, square=True)
    uplo, mode = req.char("uplo", "LU"), req.char("mode", "VN", default="V")
    vectors = mode == "V"
    p.skip = n == 0
    a = p.value("a", (n, n), operand=0, result=0)
    w = p.real("w", (n,), result=1)
    info = p.info_work(2)
    liwork = 3 + 5 * n if vectors else 1
    iwork = p.ints("iwork", (liwork,))
    if req.is_complex:
        lwork = 2 * n + n * n if vectors else n + 1
        lrwork = 1 + 5 * n + 2 * n * n if vectors else max(n, 1)
        work, rwork = p.value("work", (lwork,)), p.real("rwork", (lrwork,))
        return p.finish(Char(mode), Char(uplo), Int(n), a, Int(_ld(n)), w, work, Int(lwork), rwork, Int(lrwork),
                        iwork, Int(liwork), info, results=3)
    lwork = 1 + 6 * n + 2 * n * n if vectors else 2 * n + 1
    work = p.value("work", (lwork,))
    return p.finish(Char(mode), Char(uplo), Int(n), a, Int(_ld(n)), w, work, Int(lwork), iwork, Int(liwork), info,
                    results=3)


def _geev(req: _Request) -> LapackCall:
    """geev on a copy of the matrix; a matrix with a non-finite entry gives info -4 (jaxlib)."""
    p = _Builder(req, "geev")
    p.batch, n, _ = req.matrix(0, square=True)
    left, right = req.char("compute_left", "NV"), req.char("compute_right", "NV")
    p.skip = n == 0
    x = p.value("x", (n, n), operand=0)
    p.finite_check = "x"
    if req.is_complex:
        w = p.value("w", (n,), result=0)
        vl, vr = p.value("vl", (n, n), result=1), p.value("vr", (n, n), result=2)
        head = (Char(left), Char(right), Int(n), x, Int(_ld(n)), w, vl, Int(_ld(n)), vr, Int(_ld(n)))
        return p.finish(*p.with_workspace(head, (p.real("rwork", (2 * n,)), p.info_work(3))), results=4)
    wr, wi = p.value("wr", (n,), result=0), p.value("wi", (n,), result=1)
    vl, vr = p.value("vl", (n, n)), p.value("vr", (n, n))
    p.unpacks = [Unpack("vl", "wi", 2), Unpack("vr", "wi", 3)]
    head = (Char(left), Char(right), Int(n), x, Int(_ld(n)), wr, wi, vl, Int(_ld(n)), vr, Int(_ld(n)))
    return p.finish(*p.with_workspace(head, (p.info_work(4),)), results=5)


def _gees(req: _Request) -> LapackCall:
    p = _Builder(req, "gees")
    p.batch, n, _ = req.matrix(0, square=True)
    mode, sort = req.char("mode", "NV"), req.char("sort", "NS")
    if sort != "N":
        raise req.fail("ordering the eigenvalues (sort = 'S') is not implemented, as in jaxlib")
    p.skip = n == 0
    a = p.value("a", (n, n), operand=0, result=0)
    vs = p.value("vs", (n, n), result=1)
    if req.is_complex:
        eigenvalues: tuple[Arg, ...] = (p.value("w", (n,), result=2),)
        sdim, info = p.ints("sdim", (), result=3), p.info_work(4)
        rwork: tuple[Arg, ...] = (p.real("rwork", (n,)),)
    else:
        eigenvalues = (p.value("wr", (n,), result=2), p.value("wi", (n,), result=3))
        sdim, info = p.ints("sdim", (), result=4), p.info_work(5)
        rwork = ()
    head = (Char(mode), Char(sort), Null(), Int(n), a, Int(_ld(n)), sdim, *eigenvalues, vs, Int(_ld(n)))
    return p.finish(*p.with_workspace(head, (*rwork, Null(), info)), results=5 if req.is_complex else 6)


def _gehrd(req: _Request) -> LapackCall:
    p = _Builder(req, "gehrd")
    p.batch, m, n = req.matrix(0, square=True)
    low, high = req.integer("low"), req.integer("high")
    if not (1 <= low <= max(1, n) and min(low, n) <= high <= n):
        raise req.fail(f"low={low} and high={high} must satisfy 1 <= low <= high <= {n}")
    p.skip = n == 0
    a = p.value("a", (m, n), operand=0, result=0)
    tau = p.value("tau", (max(n - 1, 0),), result=1)
    head = (Int(n), Int(low), Int(high), a, Int(_ld(m)), tau)
    return p.finish(*p.with_workspace(head, (p.info_work(2),)), results=3)


def _sytrd(req: _Request) -> LapackCall:
    p = _Builder(req, "hetrd" if req.is_complex else "sytrd")
    p.batch, n, _ = req.matrix(0, square=True)
    uplo = req.char("uplo", "LU")
    p.skip = n == 0
    a = p.value("a", (n, n), operand=0, result=0)
    d, e = p.real("d", (n,), result=1), p.real("e", (max(n - 1, 0),), result=2)
    tau = p.value("tau", (max(n - 1, 0),), result=3)
    info = p.info_work(4)
    lwork = p.query(Char("L"), Int(n), a, Int(_ld(n)), d, e, tau, Ref("work"), Int(-1), info)  # jaxlib queries 'L'
    return p.finish(Char(uplo), Int(n), a, Int(_ld(n)), d, e, tau, p.value("work", (lwork,)), Int(lwork), info,
                    results=5)


def _gtsv(req: _Request) -> LapackCall:
    """gtsv on JAX's diagonals: dl[0] and du[m-1] are unused (LAPACK's dl starts at dl[1])."""
    p = _Builder(req, "gtsv")
    p.batch, m, nrhs = req.matrix(3)
    for role in range(3):
        req.batched(role, p.batch, (m,))
    p.skip = m * nrhs == 0
    dl = p.value("dl", (m,), operand=0, result=0)
    d = p.value("d", (m,), operand=1, result=1)
    du = p.value("du", (m,), operand=2, result=2)
    b = p.value("b", (m, nrhs), operand=3, result=3)
    return p.finish(Int(m), Int(nrhs), Ref(dl.array, 1 if m else 0), d, du, b, Int(_ld(m)), p.info_work(4),
                    results=5)


@dataclass(frozen=True)
class Family:
    name: str                                   # 'getrf'
    routines: tuple[str, str]                   # its real and complex LAPACK names
    plan: Callable[[_Request], LapackCall]
    operand_counts: tuple[int, ...]


FAMILIES = (
    Family("trsm", ("trsm", "trsm"), _trsm, (2, 3)),
    Family("getrf", ("getrf", "getrf"), _getrf, (1,)),
    Family("geqrf", ("geqrf", "geqrf"), _geqrf, (1,)),
    Family("geqp3", ("geqp3", "geqp3"), _geqp3, (2,)),
    Family("orgqr", ("orgqr", "ungqr"), _orgqr, (2,)),
    Family("ormqr", ("ormqr", "unmqr"), _ormqr, (3,)),
    Family("potrf", ("potrf", "potrf"), _potrf, (1,)),
    Family("gesdd", ("gesdd", "gesdd"), functools.partial(_svd, divide_and_conquer=True), (1,)),
    Family("gesvd", ("gesvd", "gesvd"), functools.partial(_svd, divide_and_conquer=False), (1,)),
    Family("syevd", ("syevd", "heevd"), _syevd, (1,)),
    Family("geev", ("geev", "geev"), _geev, (1,)),
    Family("gees", ("gees", "gees"), _gees, (1,)),
    Family("gehrd", ("gehrd", "gehrd"), _gehrd, (1,)),
    Family("sytrd", ("sytrd", "hetrd"), _sytrd, (1,)),
    Family("gtsv", ("gtsv", "gtsv"), _gtsv, (4,)),
)


# -------------------------------------------------------------------------- the legacy ABI

@dataclass(frozen=True)
class LegacyAbi:
    """A pre-FFI target: leading s32 scalar operands carry the options."""
    operand_count: int
    roles: dict                                   # role -> operand position
    options: Callable[[Callable[[int], int]], dict] = lambda scalar: {}
    info_result: Optional[int] = None             # where geqrf/orgqr report info (the FFI has none)


def _legacy_trsm_options(scalar) -> dict:
    trans = scalar(2)
    if trans not in (0, 1, 2):
        raise ValueError(f"trans_a must be 0, 1 or 2, got {trans}")
    return {"side": "L" if scalar(0) else "R", "uplo": "L" if scalar(1) else "U", "trans_x": "NTC"[trans],
            "diag": "U" if scalar(3) else "N"}


def _legacy_gesdd_options(scalar) -> dict:
    full, compute_uv = scalar(0), scalar(1)
    return {"mode": ("A" if full else "S") if compute_uv else "N"}


LEGACY = {
    "potrf": LegacyAbi(4, {0: 3}, lambda scalar: {"uplo": "L" if scalar(0) else "U"}),
    "trsm": LegacyAbi(10, {0: 8, 1: 9, 2: 7}, _legacy_trsm_options),
    "getrf": LegacyAbi(4, {0: 3}),
    "geqrf": LegacyAbi(5, {0: 4}, info_result=2),
    "orgqr": LegacyAbi(7, {0: 5, 1: 6}, info_result=1),
    "syevd": LegacyAbi(4, {0: 3}, lambda scalar: {"uplo": "L" if scalar(0) else "U", "mode": "V"}),
    "gesdd": LegacyAbi(7, {0: 6}, _legacy_gesdd_options),
}


class _LegacyRequest(_Request):
    def __init__(self, target, type_, operands, results, scalars: Sequence[Optional[int]], library,
                 abi: LegacyAbi):
        if len(operands) != abi.operand_count:
            raise LapackTargetError(f"{target}: expects {abi.operand_count} operands, got {len(operands)}")
        self.abi = abi

        def scalar(index: int) -> int:
            value = scalars[index] if index < len(scalars) else None
            if value is None:
                raise LapackTargetError(f"{target}: option operand {index} must be a constant s32 scalar")
            return value

        try:
            config = abi.options(scalar)
        except LapackTargetError:
            raise
        except ValueError as exc:
            raise LapackTargetError(f"{target}: {exc}") from None
        super().__init__(target, type_, operands, results, config, library)

    def operand_index(self, role: int) -> int:
        return self.abi.roles.get(role, self.abi.operand_count)

    def char(self, name: str, allowed: str, default: Optional[str] = None) -> str:
        return self._config.get(name, default)

    def info_result(self, ffi_index: Optional[int]) -> Optional[int]:
        return ffi_index if ffi_index is not None else self.abi.info_result


# -------------------------------------------------------------------------- the table

@dataclass(frozen=True)
class TargetInfo:
    name: str
    family: Family
    type: PrimitiveType
    legacy: Optional[LegacyAbi] = None


def _build_targets() -> dict[str, TargetInfo]:
    targets: dict[str, TargetInfo] = {}
    for prefix, type_ in _TYPES.items():
        for family in FAMILIES:
            routine = family.routines[1 if type_.is_complex else 0]
            targets[f"lapack_{prefix}{routine}_ffi"] = TargetInfo(f"lapack_{prefix}{routine}_ffi", family, type_)
            if family.name in LEGACY:
                name = f"lapack_{prefix}{routine}"
                targets[name] = TargetInfo(name, family, type_, LEGACY[family.name])
        if type_.is_complex:   # the real spelling of complex Q, which older programs used
            targets[f"lapack_{prefix}orgqr_ffi"] = TargetInfo(f"lapack_{prefix}orgqr_ffi", FAMILIES[4], type_)
    return targets


TARGETS: dict[str, TargetInfo] = _build_targets()


def is_lapack_target(name: str) -> bool:
    return name in TARGETS


def plan_call(target: str, operands: Sequence[ShapeSpec], results: Sequence[ShapeSpec], backend_config,
              scalars: Sequence[Optional[int]] = (), library: Optional[LapackLibrary] = None) -> LapackCall:
    """The LapackCall for one custom call: operands and results as (dims, element type),
    backend_config its text (or decoded dict), scalars the values of rank-0 integer operands
    where known (the legacy ABI's options). Raises LapackTargetError (a ValueError) when the
    call does not fit its target, LapackUnavailable when no library is found."""
    try:
        config = backend_config_dict(backend_config)
    except ValueError as exc:
        raise LapackTargetError(f"{target}: {exc}") from None
    key = (target, _frozen(operands), _frozen(results), _freeze(config), tuple(scalars), library)
    return _plan_cached(key)


def _frozen(specs: Sequence[ShapeSpec]) -> tuple:
    return tuple((tuple(int(d) for d in dims), t) for dims, t in specs)


def _freeze(value):
    """A hashable copy of a decoded backend_config (dicts become sorted item tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@functools.lru_cache(maxsize=512)
def _plan_cached(key) -> LapackCall:
    target, operands, results, config, scalars, library = key
    info = TARGETS.get(target)
    if info is None:
        raise LapackTargetError(f"{target!r} is not a LAPACK target")
    library = library or find_lapack()
    if info.legacy is not None:
        req: _Request = _LegacyRequest(target, info.type, operands, results, scalars, library, info.legacy)
    else:
        req = _FfiRequest(target, info.type, operands, results, dict(config), library, info.family.operand_counts)
    return info.family.plan(req)
