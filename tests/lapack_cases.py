"""Helpers of the LAPACK tests (tests/lapack, tests/aot): one target on arrays, HLO modules
calling targets, and the JAX cases of tests/data/lapack (written by its generate.py)."""
import json
from pathlib import Path

import numpy as np

from hlo.interpreter.lapack import execute
from hlo.runtime.lapack_library import find_lapack
from hlo.runtime.lapack_targets import plan_call
from hlo.shapes import type_of_dtype

DATA = Path(__file__).resolve().parent / "data" / "lapack"
MANIFEST = {case["name"]: case for case in json.loads((DATA / "MANIFEST.json").read_text())}
PREFIXES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


def run_target(target: str, operands, results, config="", scalars=()):
    """Run one LAPACK target on arrays: results as (dims, numpy dtype) pairs."""
    operands = [np.asarray(o) for o in operands]
    call = plan_call(target, [(o.shape, type_of_dtype(o.dtype)) for o in operands],
                     [(tuple(dims), type_of_dtype(dtype)) for dims, dtype in results], config, tuple(scalars))
    return execute(call, operands, find_lapack())


def random_matrix(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def random_spd(rng, batch, n, dtype):
    m = random_matrix(rng, tuple(batch) + (n, n), dtype)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


def tol(dtype) -> float:
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def case_tolerance(case: dict, array: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) of one output of a JAX case: double-precision outputs get the tight pair."""
    if array.dtype in (np.float64, np.complex128):
        return case["double_rtol"], case["double_atol"]
    return case["rtol"], case["atol"]


def check_output(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float, exact: bool, what: str):
    assert got.shape == expected.shape and got.dtype == expected.dtype, \
        f"{what}: {got.dtype}{got.shape} != {expected.dtype}{expected.shape}"
    if exact:
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)
