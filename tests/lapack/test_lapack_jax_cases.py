"""The JAX programs of tests/data/lapack (every LAPACK family, and jaxlib's perturbed
tridiagonal solve, for f32, f64, c64 and c128, as jax lowers them) against XLA:CPU's outputs: on the interpreter, and compiled, where the
compiled results must also agree with the interpreter's (both call the same LAPACK)."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import JitExecutable
from hlo.interpreter import run
from hlo.runtime import values_io
from lapack_cases import DATA, MANIFEST, case_tolerance, check_output

CASES = sorted(MANIFEST)


def load(name: str):
    module = parse_module((DATA / f"{name}.hlo").read_text(), f"{name}.hlo")
    inputs = values_io.load_arrays(str(DATA / f"{name}.inputs.npz"))
    expected = values_io.load_arrays(str(DATA / f"{name}.expected.npz"))
    return module, [inputs[f"arg{i}"] for i in range(len(inputs))], [expected[f"out{i}"] for i in range(len(expected))]


def check_all(name: str, got, expected, what: str) -> None:
    case = MANIFEST[name]
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        rtol, atol = case_tolerance(case, e)
        check_output(np.asarray(g), e, rtol, atol, i in case["exact_outputs"], f"{name} out{i} ({what})")


def test_every_family_and_element_type_is_covered():
    from hlo.runtime.lapack_targets import FAMILIES, TARGETS
    covered = {t for case in MANIFEST.values() for t in case["custom_calls"]}
    ffi = {name for name, info in TARGETS.items() if info.legacy is None}
    # every FFI target but the real spelling of complex orgqr (older programs only)
    assert ffi - covered == {"lapack_corgqr_ffi", "lapack_zorgqr_ffi"}
    assert {f.name for f in FAMILIES} | {"tridiagonal_solve_perturbed"} == set(CASES)
    assert "tridiagonal_solve_perturbed_ffi" in covered   # jaxlib's (not LAPACK's) solve beside gtsv


@pytest.mark.parametrize("name", CASES)
def test_interpreter_matches_xla(name):
    module, args, expected = load(name)
    check_all(name, run(module, *args), expected, "interpreter")


@pytest.mark.parametrize("name", CASES)
def test_compiled_matches_xla_and_interpreter(name):
    module, args, expected = load(name)
    got = JitExecutable(module).run(*args)
    check_all(name, got, expected, "compiled")
    check_all(name, got, run(module, *args), "compiled vs interpreter")
