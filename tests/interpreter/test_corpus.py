"""Representative corpus cases (copied to tests/data/corpus) against XLA:CPU's outputs.

Each case runs NAME.hlo (and NAME.opt.hlo, XLA's optimised dump, where present)
on NAME.inputs.npz and compares with NAME.expected.npz using the MANIFEST's
tolerances, exactly as the hlo-conformance tool does: integer and pred outputs
exactly, floats within atol + rtol*|expected| with NaN where NaN is expected.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from hlo import parse_module
from hlo.interpreter import run_devices
from hlo.interpreter import values_io

DATA = Path(__file__).resolve().parents[1] / "data" / "corpus"
MANIFEST = {case["name"]: case for case in json.loads((DATA / "MANIFEST.json").read_text())}
MODULES = sorted(p.name for p in DATA.glob("*.hlo"))


def decode(array: np.ndarray, hlo_type: str) -> np.ndarray:
    """Arrays as float64/complex128/int for comparison; bf16 raw bits decoded."""
    if hlo_type.startswith("bf16"):
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if array.dtype.kind == "c":
        return array.astype(np.complex128)
    if array.dtype.kind == "f":
        return array.astype(np.float64)
    return array


def check_close(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float, exact: bool, key: str):
    assert got.shape == expected.shape, f"{key}: shape {got.shape} != {expected.shape}"
    if exact or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, err_msg=key)
        return
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{key}: NaN positions")
    with np.errstate(invalid="ignore", over="ignore"):
        ok = nan | (np.abs(got - expected) <= atol + rtol * np.abs(expected)) | (got == expected)
    assert ok.all(), f"{key}: {np.count_nonzero(~ok)} elements off; first at {np.argwhere(~ok)[0]}"


@pytest.mark.parametrize("filename", MODULES)
def test_corpus_case(filename):
    name = filename.split(".")[0]
    case = MANIFEST[name]
    module = parse_module((DATA / filename).read_text(), filename)
    inputs = values_io.load_arrays(str(DATA / f"{name}.inputs.npz"))
    shapes = [p.shape for p in module.entry.parameters]
    args = values_io.assemble(shapes, [inputs[f"arg{i}"] for i in range(len(inputs))])
    result = run_devices(module, [args])[0].result
    got = values_io.output_arrays(result)
    expected = values_io.load_arrays(str(DATA / f"{name}.expected.npz"))
    assert sorted(got) == sorted(expected)
    exact = set(case.get("exact_outputs", []))
    for i, hlo_type in enumerate(case["outputs"]):
        key = f"out{i}"
        check_close(decode(got[key], hlo_type), decode(expected[key], hlo_type), case["rtol"], case["atol"],
                    i in exact, f"{filename} {key}")


def test_the_selection_covers_the_intended_features():
    names = {m.split(".")[0] for m in MODULES}
    assert {"mlp_forward", "cnn_forward", "causal_attention", "fori_loop_newton", "sort_argsort",
            "gather_scatter", "integer_bit_ops", "bf16_matmul", "complex_fft", "cholesky_lapack_customcall",
            "rng_bit_generator_algos", "cond_switch"} <= names
    assert len([m for m in MODULES if m.endswith(".opt.hlo")]) >= 3
