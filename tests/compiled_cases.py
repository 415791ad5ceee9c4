"""What the compiled-backend tests share: a private compile cache and the comparison with the
interpreter (integers and pred exactly, floats and complex numbers within tolerances)."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.interpreter import run

RAW = CodegenOptions(run_pipeline=False)      # the module as written: its own fusions
BOTH = (RAW, CodegenOptions())                # and through the default pipeline


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Compiled objects go to a cache of the test session, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def compiled(text: str, *arrays, options=RAW) -> list:
    return JitExecutable(parse_module(text, "test.hlo"), options).run(*arrays)


def check_against_interpreter(text: str, *arrays, rtol=1e-6, atol=1e-6, options=BOTH) -> list:
    """Compile text with each of `options`, run it on arrays, compare every result leaf with
    the interpreter's; the interpreter's leaves are returned."""
    module = parse_module(text, "test.hlo")
    want = run(module, *arrays)
    for opts in options:
        got = JitExecutable(module, opts).run(*arrays)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype
            if w.dtype.kind in "biu":
                np.testing.assert_array_equal(g, w)
            else:
                wide = np.complex128 if w.dtype.kind == "c" else np.float64
                np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
    return want
