"""hlo-aot objects that call LAPACK: the header says what to link, a C driver links the object
with exactly that (NAME_LINK_FLAGS) and its results match the interpreter's.

Cases: the corpus's cholesky_lapack_customcall (potrf + trsm, a result with the non-default
layout {1,2,0}) and JAX programs of tests/data/lapack (eigenvectors unpacked to complex,
SVD, tridiagonal solve), each for f32, f64, c64 and c128.
"""
import os
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest

from corpus_cases import DATA as CORPUS, MANIFEST as CORPUS_MANIFEST, case_arguments, load_module
from hlo import parse_module
from hlo.runtime import values_io
from lapack_cases import DATA, MANIFEST, case_tolerance, check_output
from test_aot import CC, buffer_specs, decode_results, encode, leaves, run_cli

pytestmark = pytest.mark.skipif(CC is None, reason="no system C compiler")
HERE = Path(__file__).resolve().parent
LAPACK_CASES = ["geev", "gesdd", "gtsv"]


def case(name: str):
    """(module path, module, arguments, per-output (rtol, atol), exact output indices)."""
    if name in MANIFEST:
        path = DATA / f"{name}.hlo"
        module = parse_module(path.read_text(), path.name)
        inputs = values_io.load_arrays(str(DATA / f"{name}.inputs.npz"))
        args = [inputs[f"arg{i}"] for i in range(len(inputs))]
        entry = MANIFEST[name]
        return path, module, args, lambda e: case_tolerance(entry, e), set(entry["exact_outputs"])
    module = load_module(f"{name}.hlo")
    entry = CORPUS_MANIFEST[name]
    return CORPUS / f"{name}.hlo", module, case_arguments(module, f"{name}.hlo"), \
        lambda e: (entry["rtol"], entry["atol"]), set(entry.get("exact_outputs", []))


def build(tmp_path: Path, path: Path, name: str) -> tuple[Path, str]:
    prefix = tmp_path / name
    result = run_cli([str(path), "-o", str(prefix), "--name", name])
    assert result.exit_code == 0, result.output
    header = Path(f"{prefix}.h").read_text()
    flags = re.search(rf'#define {name}_LINK_FLAGS "([^"]*)"', header)
    assert flags, "a header of an object calling LAPACK says what to link"
    source = tmp_path / f"{name}_driver.c"
    source.write_text((HERE / "driver.c.in").read_text().replace("@NAME@", name).replace("@HEADER@", f"{name}.h"))
    exe = tmp_path / f"{name}_driver"
    cmd = [CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-I", str(tmp_path), str(source), f"{prefix}.o",
           *shlex.split(flags.group(1)), "-lm", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return exe, header


@pytest.mark.parametrize("name", ["cholesky_lapack_customcall"] + LAPACK_CASES)
def test_c_driver_linking_lapack_matches_interpreter(tmp_path, name):
    from hlo.interpreter import run
    path, module, args, tolerance, exact = case(name)
    exe, header = build(tmp_path, path, name)
    arg_specs, result_specs = buffer_specs(header, name, "arg"), buffer_specs(header, name, "result")
    flat = leaves(args)
    inputs, out = tmp_path / "in.bin", tmp_path / "out.bin"
    inputs.write_bytes(b"".join(encode(a, s) for a, s in zip(flat, arg_specs)))
    done = subprocess.run([str(exe), str(inputs), str(out)], capture_output=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    got = decode_results(out.read_bytes(), result_specs)
    expected = run(module, *args)
    assert len(got) == len(expected)
    for j, e in enumerate(expected):
        e = np.asarray(e)
        rtol, atol = tolerance(e)
        check_output(got[f"out{j}"], e, rtol, atol, j in exact, f"{name} out{j}")


def test_objects_reference_lapack_by_the_librarys_names(tmp_path):
    from hlo.runtime.lapack_library import find_lapack
    path, *_ = case("gtsv")
    build(tmp_path, path, "gtsv")
    listing = subprocess.run(["nm", "-u", str(tmp_path / "gtsv.o")], capture_output=True, text=True)
    if listing.returncode:
        pytest.skip("no nm")
    undefined = {line.split()[-1] for line in listing.stdout.splitlines() if line.strip()}
    library = find_lapack()
    assert {library.symbol(f"{p}gtsv") for p in "sdcz"} <= undefined
