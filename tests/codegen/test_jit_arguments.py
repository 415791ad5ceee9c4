"""JitExecutable.run keeps the parameter pointers of the previous run for the very same arrays
(jit._ArgumentPointers): whatever the caller does to those arrays between runs, every run reads
what the arrays hold then."""
import gc

import numpy as np
import pytest

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable

TEXT = """HloModule m
ENTRY e {
  a = f32[4,8]{1,0} parameter(0)
  b = f32[4,8]{1,0} parameter(1)
  ROOT s = f32[4,8]{1,0} add(a, b)
}
"""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def executable():
    return JitExecutable(parse_module(TEXT, "t.hlo"), CodegenOptions())


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2)]


@pytest.mark.parametrize("reuse", [False, True])
def test_the_same_arrays_changed_in_place_are_read_again(executable, reuse):
    a, b = _inputs(0)
    np.testing.assert_array_equal(executable.run(a, b, reuse_results=reuse)[0], a + b)
    a[...] = 7.0
    b[1, 2] = -3.0
    np.testing.assert_array_equal(executable.run(a, b, reuse_results=reuse)[0], a + b)


def test_new_arrays_views_and_converted_values_each_give_their_own_data(executable):
    a, b = _inputs(1)
    executable.run(a, b, reuse_results=True)
    c, d = _inputs(2)
    np.testing.assert_array_equal(executable.run(c, d, reuse_results=True)[0], c + d)
    wide = np.arange(64, dtype=np.float32).reshape(4, 16)
    view = wide[:, ::2]                       # not contiguous: copied, never kept
    np.testing.assert_array_equal(executable.run(view, d, reuse_results=True)[0], view + d)
    nested = a.tolist()                       # a list becomes an array: not kept either
    np.testing.assert_array_equal(executable.run(nested, d)[0], a + d)
    np.testing.assert_array_equal(executable.run(a, b, reuse_results=True)[0], a + b)


def test_an_array_whose_shape_or_dtype_changed_in_place_is_checked_again(executable):
    a, b = _inputs(3)
    executable.run(a, b)
    a.shape = (8, 4)
    with pytest.raises(ValueError, match="argument leaf 0"):
        executable.run(a, b)
    a.shape = (4, 8)
    np.testing.assert_array_equal(executable.run(a, b)[0], a + b)
    b.dtype = np.int32
    with pytest.raises(ValueError, match="argument leaf 1"):
        executable.run(a, b)


def test_a_freed_array_is_not_mistaken_for_a_new_one_at_its_address(executable):
    for seed in range(20):   # new arrays often reuse the memory and the id of freed ones
        a, b = _inputs(seed)
        np.testing.assert_array_equal(executable.run(a, b, reuse_results=True)[0], a + b)
        del a, b
        gc.collect()


def test_the_executable_keeps_no_input_alive(executable):
    import weakref
    a, b = _inputs(4)
    executable.run(a, b)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None
