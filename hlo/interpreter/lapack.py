"""The LAPACK custom calls JAX emits on CPU, run through the real LAPACK (ctypes).

Every target of hlo.runtime.lapack_targets (`lapack_sgetrf_ffi`, the legacy `lapack_sgetrf`
...) is registered as a custom-call target (control.register_custom_call). A call is
planned once per shape (plan_call) and executed here: each matrix of the batch is copied
into column-major working arrays, the routine is called on them through ctypes with the
library's integer width, and the working arrays are copied to the results, exactly as the
compiled backend's generated code does (hlo/codegen/lapack_calls.py), so that both give
LAPACK's answer, as XLA:CPU does. `potrf` and `trsm` also serve the HLO ops `cholesky`
and `triangular-solve` (linalg.py).
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import HloError, error, written_name
from ..runtime.lapack_library import LapackLibrary, LapackUnavailable, find_lapack
from ..runtime.lapack_plan import LapackCall, LapackTargetError, Work, ctypes_arguments
from ..runtime.lapack_targets import TARGETS, ShapeSpec, plan_call
from ..shapes import primitive_type, type_of_dtype
from .control import register_custom_call
from .values import as_tuple_if


def execute(call: LapackCall, operands, library: LapackLibrary) -> list[np.ndarray]:
    """The call's results (every declared result, in order) for these operand arrays."""
    results = [np.zeros(dims, type_.dtype) for dims, type_ in call.results]
    count = call.batch_count
    if count == 0:
        return results
    arrays = {w.name: np.zeros(max(w.size, 1), w.type.dtype) for w in call.works}
    inputs = [(w, _per_matrix(operands[w.operand], w, count)) for w in call.works if w.operand is not None]
    outputs = [(w, results[w.result].reshape((count,) + w.dims)) for w in call.works if w.result is not None]
    unpacked = [(u, results[u.result].reshape((count,) + call.work(u.packed).dims)) for u in call.unpack]
    zeroed = [arrays[w.name] for w in call.zeroed()]
    routine = library.function(call.routine)

    def address_of(ref) -> int:
        array = arrays[ref.array]
        return array.ctypes.data + ref.offset * array.itemsize

    cargs = ctypes_arguments(library, call.args, call.type.dtype, address_of)
    for b in range(count):
        for w, source in inputs:
            arrays[w.name][:w.size] = source[b].ravel(order="F")
        for array in zeroed:
            array[:] = 0
        if not call.skip:
            if call.finite_check and not np.isfinite(arrays[call.finite_check]).all():
                arrays[call.info][0] = -4
            else:
                routine(*cargs)
        for w, out in outputs:
            out[b] = _matrix(arrays[w.name], w)
        if call.unpack and arrays[call.info][0] == 0:
            for u, out in unpacked:
                out[b] = unpack_eigenvectors(_matrix(arrays[u.packed], call.work(u.packed)), arrays[u.imag])
    return results


def _per_matrix(operand, work: Work, count: int) -> np.ndarray:
    """The operand as [count, *work.dims] (an operand without batch dimensions repeats)."""
    array = np.asarray(operand)
    if not work.batched:
        return np.broadcast_to(array.reshape(work.dims), (count,) + work.dims)
    return array.reshape((count,) + work.dims)


def _matrix(array: np.ndarray, work: Work) -> np.ndarray:
    return array[:work.size].reshape(work.dims, order="F")


def unpack_eigenvectors(packed: np.ndarray, imag: np.ndarray) -> np.ndarray:
    """Real geev's eigenvector columns as complex vectors: a pair with wi[j] != 0 is
    v_j = col_j + i col_{j+1} and v_{j+1} = conj(v_j) (NaN wi counts as real, as in jaxlib)."""
    out = packed.astype(np.result_type(packed.dtype, np.complex64))
    n, j = packed.shape[-1], 0
    while j < n:
        if imag[j] == 0 or np.isnan(imag[j]) or j + 1 >= n:
            j += 1
            continue
        out[:, j] = packed[:, j] + 1j * packed[:, j + 1]
        out[:, j + 1] = packed[:, j] - 1j * packed[:, j + 1]
        j += 2
    return out


# -------------------------------------------------------------------------- as custom calls

def _specs(shapes) -> list[ShapeSpec]:
    return [(tuple(s.dims), s.element_type) for s in shapes]


def _scalars(inst, ops) -> tuple:
    """The values of rank-0 integer operands (the legacy ABI's options)."""
    return tuple(int(np.asarray(v)) if o.shape.rank == 0 and o.shape.element_type.is_integral else None
                 for o, v in zip(inst.operands, ops))


def lapack_error(inst, exc: Exception) -> HloError:
    """The located error of a LAPACK custom call that does not fit its target."""
    return error(f"custom-call %{written_name(inst.loc, inst.name)}: {exc}", inst.loc)


def run_lapack_custom_call(ev, inst, ops):
    target = inst.attrs["custom_call_target"]
    results = [leaf for _, leaf in inst.shape.leaves()]
    try:
        library = find_lapack()
        call = plan_call(target, _specs(o.shape for o in inst.operands), _specs(results), inst.backend_config,
                         _scalars(inst, ops), library)
    except (LapackTargetError, LapackUnavailable) as exc:
        raise lapack_error(inst, exc) from None
    return as_tuple_if(inst.shape, execute(call, ops, library))


for _target in TARGETS:
    register_custom_call(_target, run_lapack_custom_call)


# -------------------------------------------------------------------------- for the HLO ops

def _typed_call(family: str, a: np.ndarray, operands: list[np.ndarray], results: list[tuple],
                config: dict) -> list[np.ndarray]:
    """Run one FFI target of `family` for a's element type on plain arrays."""
    type_ = type_of_dtype(a.dtype)
    prefix = "sdcz"[["f32", "f64", "c64", "c128"].index(type_.name)]
    library = find_lapack()
    call = plan_call(f"lapack_{prefix}{family}_ffi", [(x.shape, type_) for x in operands],
                     [(dims, t or type_) for dims, t in results], config, (), library)
    return execute(call, operands, library)


def potrf(a: np.ndarray, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK potrf of every matrix: (a with its `lower` or upper triangle factored, info)."""
    info_type = primitive_type("s32")
    return tuple(_typed_call("potrf", a, [a], [(a.shape, None), (a.shape[:-2], info_type)],
                             {"uplo": ord("L" if lower else "U")}))


def trsm(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool, unit_diagonal: bool,
         transpose: str) -> np.ndarray:
    """LAPACK trsm: x with op(a)·x = b (left) or x·op(a) = b; transpose is N, T or C."""
    config = {"side": ord("L" if left_side else "R"), "uplo": ord("L" if lower else "U"),
              "trans_x": ord(transpose), "diag": ord("U" if unit_diagonal else "N")}
    return _typed_call("trsm", a, [a, b], [(b.shape, None)], config)[0]
