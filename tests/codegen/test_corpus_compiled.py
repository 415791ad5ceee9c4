"""The project's corpus copies (tests/data/corpus) through the compiled cpu backend.

Each module is compiled with JitExecutable and its outputs compared with XLA's
expected outputs under the case's tolerances (as hlo-conformance --backend cpu
does). NOT_YET lists the cases the backend cannot compile yet, with the reason
(currently none).
"""
import numpy as np
import pytest

from corpus_cases import MODULES, assert_matches_expected, case_arguments, load_module
from hlo.codegen import JitExecutable
from hlo.runtime import values_io

NOT_YET: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize("filename", [m for m in MODULES if m not in NOT_YET])
def test_compiled_corpus_module_matches_xla(filename):
    module = load_module(filename)
    args = case_arguments(module, filename)
    leaves = JitExecutable(module).run(*args)
    got = {f"out{i}": values_io.from_storage(np.asarray(leaf)) for i, leaf in enumerate(leaves)}
    assert_matches_expected(filename, got)


