"""The table of LAPACK targets (hlo/runtime/lapack_targets.py) against jaxlib's registrations,
and the plans it makes: routines, jaxlib's workspace sizes, LAPACK's query, the legacy ABI."""
import numpy as np
import pytest

from hlo.runtime.lapack_library import find_lapack
from hlo.runtime.lapack_plan import Char, Int, LapackTargetError
from hlo.runtime.lapack_targets import LEGACY, TARGETS, is_lapack_target, plan_call
from hlo.shapes import primitive_type

# jaxlib/cpu/cpu_kernels.cc registers these LAPACK handlers (jax 0.10), each for s, d, c, z.
JAXLIB_FAMILIES = {
    "trsm": ("trsm", "trsm"), "getrf": ("getrf", "getrf"), "geqrf": ("geqrf", "geqrf"), "geqp3": ("geqp3", "geqp3"),
    "orgqr": ("orgqr", "ungqr"), "ormqr": ("ormqr", "unmqr"), "potrf": ("potrf", "potrf"),
    "gesdd": ("gesdd", "gesdd"), "gesvd": ("gesvd", "gesvd"), "syevd": ("syevd", "heevd"), "geev": ("geev", "geev"),
    "sytrd": ("sytrd", "hetrd"), "gees": ("gees", "gees"), "gehrd": ("gehrd", "gehrd"), "gtsv": ("gtsv", "gtsv"),
}
F32, F64, C64, S32 = (primitive_type(n) for n in ("f32", "f64", "c64", "s32"))


def jaxlib_targets() -> set:
    return {f"lapack_{p}{routines[p in 'cz']}_ffi" for routines in JAXLIB_FAMILIES.values() for p in "sdcz"}


def test_every_jaxlib_lapack_target_is_known():
    assert jaxlib_targets() <= set(TARGETS)
    extra = set(TARGETS) - jaxlib_targets()
    legacy = {name for name, info in TARGETS.items() if info.legacy is not None}
    assert extra - legacy == {"lapack_corgqr_ffi", "lapack_zorgqr_ffi"}
    assert {info.family.name for info in TARGETS.values() if info.legacy} == set(LEGACY)
    assert is_lapack_target("lapack_zheevd") and not is_lapack_target("TopK")


def test_routines_and_element_types():
    assert TARGETS["lapack_zheevd_ffi"].type.name == "c128"
    call = plan_call("lapack_cungqr_ffi", [((6, 4), C64), ((4,), C64)], [((6, 4), C64)], "")
    assert call.routine == "cungqr" and call.batch_dims == ()
    call = plan_call("lapack_sgetrf_ffi", [((2, 3, 5, 4), F32)], [((2, 3, 5, 4), F32), ((2, 3, 4), S32),
                                                                   ((2, 3), S32)], "")
    assert call.routine == "sgetrf" and call.batch_dims == (2, 3) and call.batch_count == 6


def test_syevd_uses_jaxlibs_fixed_workspace_sizes():
    n = 7
    call = plan_call("lapack_dsyevd_ffi", [((n, n), F64)], [((n, n), F64), ((n,), F64), ((), S32)],
                     {"uplo": ord("L"), "mode": ord("V")})
    sizes = {w.name: w.size for w in call.works}
    assert sizes["work"] == 1 + 6 * n + 2 * n * n and sizes["iwork"] == 3 + 5 * n
    ints = [a.value for a in call.args if isinstance(a, Int)]
    assert 1 + 6 * n + 2 * n * n in ints and 3 + 5 * n in ints
    assert [a.value for a in call.args if isinstance(a, Char)] == ["V", "L"]


def test_workspace_comes_from_lapacks_query():
    call = plan_call("lapack_sgeqrf_ffi", [((300, 200), F32)], [((300, 200), F32), ((200,), F32)], "")
    lwork = call.work("work").size
    assert lwork >= 200 and Int(lwork) in call.args   # at least n, and what the call passes


def test_integers_have_the_librarys_width():
    call = plan_call("lapack_sgetrf_ffi", [((3, 3), F32)], [((3, 3), F32), ((3,), S32), ((), S32)], "")
    assert call.work("ipiv").type.bits == find_lapack().int_bits


def test_gtsv_passes_dl_from_its_second_element():
    call = plan_call("lapack_sgtsv_ffi", [((5,), F32)] * 3 + [((5, 2), F32)],
                     [((5,), F32)] * 3 + [((5, 2), F32), ((), S32)], "")
    refs = [a for a in call.args if hasattr(a, "array")]
    assert refs[0].array == "dl" and refs[0].offset == 1


def test_legacy_abi_reads_scalar_options():
    call = plan_call("lapack_sgesdd", [((), S32)] * 6 + [((4, 3), F32)],
                     [((4, 3), F32), ((3,), F32), ((4, 4), F32), ((3, 3), F32), ((), S32), ((9,), S32)], "",
                     scalars=(1, 1, 1, 4, 3, 99, None))
    assert [a.value for a in call.args if isinstance(a, Char)] == ["A"]
    with pytest.raises(LapackTargetError, match="option operand 1 must be a constant"):
        plan_call("lapack_sgesdd", [((), S32)] * 6 + [((4, 3), F32)], [((4, 3), F32)], "",
                  scalars=(1, None, 1, 4, 3, 99, None))


@pytest.mark.parametrize("target,operands,results,config,message", [
    ("lapack_xpotrf_ffi", [((2, 2), F32)], [], "", "not a LAPACK target"),
    ("lapack_sorgqr_ffi", [((4, 5), F32), ((4,), F32)], [((4, 5), F32)], "", "rows >= columns >= reflectors"),
    ("lapack_strsm_ffi", [((2, 3, 3), F32), ((3, 2), F32)], [((3, 2), F32)],
     {"side": 76, "uplo": 76, "trans_x": 78, "diag": 78}, "batch dimensions"),
    ("lapack_strsm_ffi", [((3, 3), F32), ((2, 2), F32)], [((2, 2), F32)],
     {"side": 76, "uplo": 76, "trans_x": 78, "diag": 78}, "a is 3x3 but b is 2x2"),
    ("lapack_sgehrd_ffi", [((4, 4), F32)], [((4, 4), F32), ((3,), F32), ((), S32)], {"low": 3, "high": 2},
     "low=3 and high=2"),
    ("lapack_sgtsv_ffi", [((4,), F32), ((5,), F32), ((4,), F32), ((4, 1), F32)],
     [((4,), F32)] * 3 + [((4, 1), F32), ((), S32)], "", "operand 1 has dimensions [5]"),
    ("lapack_sgesdd_ffi", [((3, 2), F32)], [((3, 2), F32)] * 5, {"mode": 79}, "mode=79"),
])
def test_calls_that_do_not_fit(target, operands, results, config, message):
    with pytest.raises(LapackTargetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        plan_call(target, operands, results, config)


def test_plans_are_cached_per_shape():
    args = ("lapack_dgeqrf_ffi", [((6, 4), F64)], [((6, 4), F64), ((4,), F64)], "")
    assert plan_call(*args) is plan_call(*args)
    assert plan_call("lapack_dgeqrf_ffi", [((7, 4), F64)], [((7, 4), F64), ((4,), F64)], "") is not plan_call(*args)


def test_zeroed_arrays_are_those_feeding_results_only():
    call = plan_call("lapack_sgeev_ffi", [((3, 3), F32)], [((3,), F32), ((3,), F32), ((3, 3), C64), ((3, 3), C64),
                                                           ((), S32)], {"compute_left": 78, "compute_right": 86})
    assert {w.name for w in call.zeroed()} == {"wr", "wi", "vl", "vr", "info"}
    assert call.finite_check == "x" and [u.result for u in call.unpack] == [2, 3]
    assert np.dtype(call.work("vl").type.dtype) == np.float32
