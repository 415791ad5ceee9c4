"""Where LAPACK comes from: $HLO_LAPACK_LIBRARY with its symbol spelling found by looking, and
both backends on another build than numpy's (scipy's LP64 OpenBLAS: 32-bit integers), the JIT
cache not reusing objects compiled against another library."""
import glob
import os
import subprocess
import sys

import pytest

from hlo.runtime.lapack_library import _from_environment, find_lapack
from lapack_cases import DATA


def scipy_openblas():
    try:
        import scipy
    except ImportError:
        return None
    found = sorted(glob.glob(os.path.join(os.path.dirname(scipy.__file__), "..", "scipy.libs", "libscipy_openblas-*.so")))
    return os.path.realpath(found[0]) if found else None


def test_default_library_exports_its_routines():
    library = find_lapack()
    assert library.function("dgetrf") is not None and library.int_bits in (32, 64)


def test_environment_library_spelling_is_detected(monkeypatch):
    path = scipy_openblas()
    if path is None:
        pytest.skip("scipy's OpenBLAS is not installed")
    monkeypatch.setenv("HLO_LAPACK_LIBRARY", path)
    monkeypatch.delenv("HLO_LAPACK_INT_BITS", raising=False)
    library = _from_environment()
    assert (library.prefix, library.suffix, library.int_bits) == ("scipy_", "_", 32)


RUN = """
import sys
import numpy as np
from hlo import parse_module
from hlo.codegen import JitExecutable
from hlo.interpreter import run
from hlo.runtime import values_io
from hlo.runtime.lapack_library import find_lapack
name, data = sys.argv[1], sys.argv[2]
module = parse_module(open(f"{data}/{name}.hlo").read(), name)
inputs = values_io.load_arrays(f"{data}/{name}.inputs.npz")
expected = values_io.load_arrays(f"{data}/{name}.expected.npz")
args = [inputs[f"arg{i}"] for i in range(len(inputs))]
compiled = JitExecutable(module)
for results in (run(module, *args), compiled.run(*args)):
    for i, got in enumerate(results):
        want = expected[f"out{i}"]
        if want.dtype.kind in "iub":
            assert np.array_equal(got, want), i
        else:
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
print(find_lapack().int_bits, compiled.lowered.libraries == [find_lapack().path])
"""


@pytest.mark.parametrize("name", ["getrf", "geev"])
def test_both_backends_on_a_32_bit_build(tmp_path, name):
    path = scipy_openblas()
    if path is None:
        pytest.skip("scipy's OpenBLAS is not installed")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    for library, bits in ((path, "32"), (None, str(find_lapack().int_bits))):   # then numpy's: no stale object
        env.pop("HLO_LAPACK_LIBRARY", None)
        if library:
            env["HLO_LAPACK_LIBRARY"] = library
        done = subprocess.run([sys.executable, "-c", RUN, name, str(DATA)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [bits, "True"]
