"""algsimp: one test per rule (expected text after `algsimp,dce` and interpreter equivalence
on random inputs, special float values included), plus pass-level properties."""
import math

import ml_dtypes
import numpy as np
import pytest

import hlo
from hlo import format_module, parse_module
from hlo.checker import check_module
from hlo.passes.algsimp_rules import cast_preserves_values, map_dims_through_reshape, ones_inserted_or_deleted
from hlo.passes.pass_manager import available_passes, run_pipeline
from hlo.shapes import PRIMITIVE_TYPES

SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0]


def entry_text(module) -> str:
    """The printed entry computation, without the module header and other computations."""
    text = format_module(module)
    return text[text.index("ENTRY"):]


def random_array(shape, rng):
    t = shape.element_type
    dims = shape.dims
    if t.is_pred:
        return rng.random(dims) < 0.5
    if t.is_integral:
        low = 0 if t.is_unsigned_int else -6
        return rng.integers(low, 7, size=dims).astype(t.dtype)
    if t.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(t.dtype)
    values = rng.standard_normal(dims) * 3
    flat = values.reshape(-1)
    for i, special in enumerate(SPECIAL_FLOATS[: flat.size // 3]):
        flat[rng.integers(flat.size)] = special
    return values.astype(t.dtype)


def assert_same_results(before, after, seed=0, rtol=1e-5):
    rng = np.random.default_rng(seed)
    args = [random_array(p.shape, rng) for p in before.entry.parameters]
    expected = hlo.run(before, *args)
    got = hlo.run(after, *args)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        if e.dtype.kind in "biu" or e.dtype.name.startswith(("int", "uint")):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g.astype(np.complex128), e.astype(np.complex128), rtol=rtol, atol=1e-6,
                                       equal_nan=True)


def simplify(text: str, pipeline: str = "algsimp,dce"):
    before = parse_module(text)
    after = parse_module(text)
    run_pipeline(after, pipeline)
    check_module(after)
    return before, after


def check(text: str, expected: str):
    before, after = simplify(text)
    assert entry_text(after) == expected
    assert_same_results(before, after)
    assert_same_results(before, after, seed=1)
    return after


def module(params: str, body: str, extra: str = "") -> str:
    return f"HloModule m\n{extra}\nENTRY main {{\n{params}\n{body}\n}}\n"


ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


