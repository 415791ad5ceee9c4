"""What the per-target code-generation tests share: target options (AVX2 forced on an AVX-512
host, SSE only, aarch64 for cross-compiles), a private object cache, random inputs, and the
comparison of compiled results with the interpreter's."""
import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.interpreter import run

HOST = CodegenOptions()
RAW = CodegenOptions(run_pipeline=False)       # the module as written: no fusion decisions
AVX2 = CodegenOptions(features="-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd")
SSE = CodegenOptions(features="-avx512f,-avx2,-avx,-fma")
ARM = CodegenOptions(triple="aarch64-unknown-linux-gnu", cpu="generic", features="+neon")


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Import into a test module to give its compiles a cache of their own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def rand(dtype, *dims, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, dims).astype(dtype)


def check(text, *arrays, options, rtol=1e-4, atol=None, threads=1, exact=False):
    """Each of `options` compiles `text` and gives the interpreter's results (exactly, or within
    rtol/atol, atol defaulting to rtol)."""
    module = parse_module(text, "case.hlo")
    want = run(module, *arrays)
    for opts in options:
        got = JitExecutable(module, opts, threads=threads).run(*arrays)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                           atol=rtol if atol is None else atol)
