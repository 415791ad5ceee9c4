"""The project's own copies of corpus cases (tests/data/corpus) and how to judge results.

A case is NAME.hlo (and NAME.opt.hlo where present) with NAME.inputs.npz and XLA:CPU's
outputs NAME.expected.npz; MANIFEST.json gives each case's tolerances. Results are
compared as the hlo-conformance tool does: integers and pred exactly, floats within
atol + rtol*|expected| with NaN exactly where expected.
"""
import json
from pathlib import Path

import numpy as np

from hlo import parse_module
from hlo.interpreter import run_devices
from hlo.runtime import values_io

DATA = Path(__file__).resolve().parent / "data" / "corpus"
# The full shared corpus, beside the project, when this checkout has it (CI does).
SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
MODULES = sorted(p.name for p in DATA.glob("*.hlo"))
SHARED_MODULES = sorted(p.name for p in SHARED.glob("*.hlo")) if SHARED.is_dir() else []


def _manifest(data: Path) -> dict:
    return {case["name"]: case for case in json.loads((data / "MANIFEST.json").read_text())}


MANIFEST = _manifest(DATA)


def case_name(filename: str) -> str:
    return filename.split(".")[0]


def load_module(filename: str, data: Path = DATA):
    return parse_module((data / filename).read_text(), filename)


def case_arguments(module, filename: str, data: Path = DATA) -> list:
    inputs = values_io.load_arrays(str(data / f"{case_name(filename)}.inputs.npz"))
    shapes = [p.shape for p in module.entry.parameters]
    return values_io.assemble(shapes, [inputs[f"arg{i}"] for i in range(len(inputs))])


def outputs(module, args) -> dict:
    """out0..outM of one run, as the hlo-run CLI writes them."""
    return values_io.output_arrays(run_devices(module, [args])[0].result)


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


def assert_matches_expected(filename: str, got: dict, data: Path = DATA) -> None:
    """`got` (out0..outM) agrees with XLA's expected outputs within the case's tolerance."""
    case = (MANIFEST if data == DATA else _manifest(data))[case_name(filename)]
    expected = values_io.load_arrays(str(data / f"{case_name(filename)}.expected.npz"))
    assert sorted(got) == sorted(expected)
    exact = set(case.get("exact_outputs", []))
    for i, hlo_type in enumerate(case["outputs"]):
        key = f"out{i}"
        check_close(decode(got[key], hlo_type), decode(expected[key], hlo_type), case["rtol"], case["atol"],
                    i in exact, f"{filename} {key}")
