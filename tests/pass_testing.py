"""What every pass test does: run a pipeline on HLO text, check the result and compare it with
the original in the interpreter on random inputs.

`optimised` runs a pipeline and checks what a pass must never break (a valid module, the entry
program shape, printed text that parses back to itself); `assert_same_outputs` runs the module
before and after on random inputs of every element type; `PassTester` holds one pass's defaults
(pipeline, seeds, tolerances, input ranges) so that a test file states them once.
"""
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

import hlo
from hlo import format_module, parse_module
from hlo.analysis.checker import check_module
from hlo.passes.pass_manager import run_pipeline

# Values random float inputs may include when asked for, where rewrites often go wrong.
SPECIAL_FLOATS = (np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0)


def body(module) -> str:
    """The printed module (or module text) without its header line, for compact expectations."""
    if isinstance(module, str):
        module = parse_module(module)
    return format_module(module).split("\n", 2)[2]


def entry_text(module) -> str:
    """The printed entry computation, without the module header and other computations."""
    text = format_module(module)
    return text[text.index("ENTRY"):]


def random_array(shape, rng, ints=(-5, 6), special_floats=False) -> np.ndarray:
    """Random values of `shape`: floats normal, integers in [ints) (unsigned from 0), pred half true."""
    t, dims = shape.element_type, shape.dims
    if t.is_pred:
        return np.asarray(rng.random(dims) < 0.5)
    if t.is_integral:
        low, high = ints
        return rng.integers(max(low, 0) if t.is_unsigned_int else low, high, size=dims).astype(t.dtype)
    if t.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(t.dtype)
    values = rng.standard_normal(dims)
    if special_floats:
        flat = values.reshape(-1)
        for special in SPECIAL_FLOATS[: flat.size // 3]:
            flat[rng.integers(flat.size)] = special
    return values.astype(t.dtype)


def random_inputs(module, seed=0, ints=(-5, 6), special_floats=False,
                  positive: Optional[Callable] = None) -> list:
    """One random argument per entry parameter; parameters `positive(param)` picks get values >= 0.5."""
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry.parameters:
        x = random_array(p.shape, rng, ints, special_floats)
        if positive is not None and positive(p):
            x = (np.abs(x.astype(np.float64)) + 0.5).astype(x.dtype)
        out.append(x)
    return out


def assert_outputs_close(got: list, want: list, rtol=1e-6, atol=1e-6, exact=False) -> None:
    """Same number, shapes and types of outputs; integers and pred equal, floats close (NaN where NaN)."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"output {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        else:
            wide = np.complex128 if w.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"output {i}")


def assert_same_outputs(before, after, seeds=(0, 1, 2), rtol=1e-6, atol=1e-6, exact=False, **inputs) -> None:
    """`after` computes what `before` does on random inputs (one set per seed; see random_inputs)."""
    for seed in seeds:
        args = random_inputs(before, seed, **inputs)
        assert_outputs_close(hlo.run(after, *args), hlo.run(before, *args), rtol, atol, exact)


def run_checked(module, pipeline: str) -> bool:
    """Run `pipeline` on `module`; it stays valid, keeps its program shape and prints as a fixed point."""
    program_shape = str(module.entry_program_shape())
    changed = run_pipeline(module, pipeline)
    check_module(module)
    assert str(module.entry_program_shape()) == program_shape
    text = format_module(module)
    assert format_module(parse_module(text, "printed")) == text, "printed module is not a fixed point"
    return changed


def optimised(text: str, pipeline: str):
    """(module after `pipeline`, whether it changed), checked by run_checked."""
    module = parse_module(text)
    return module, run_checked(module, pipeline)


@dataclass(frozen=True)
class PassTester:
    """One pass's test defaults: the pipeline, how many random input sets, tolerances, input ranges."""
    pipeline: str
    seeds: tuple = (0, 1, 2)
    rtol: float = 1e-6
    atol: float = 1e-6
    exact: bool = False
    ints: tuple = (-5, 6)
    special_floats: bool = False
    positive: Optional[Callable] = None

    def optimised(self, text: str, pipeline: Optional[str] = None):
        """(module, changed) after the pipeline, checked but not run."""
        return optimised(text, pipeline or self.pipeline)

    def optimise(self, text: str, pipeline: Optional[str] = None, seeds=None):
        """(module, changed) after the pipeline, checked, and computing what `text` does."""
        after, changed = self.optimised(text, pipeline)
        # Run the printed module: what hlo-opt emits is the text, not the objects.
        assert_same_outputs(parse_module(text), parse_module(format_module(after)),
                            self.seeds if seeds is None else seeds, self.rtol, self.atol, self.exact,
                            ints=self.ints, special_floats=self.special_floats, positive=self.positive)
        return after, changed

    def assert_same_outputs(self, text: str, pipeline: Optional[str] = None, seeds=None) -> None:
        self.optimise(text, pipeline, seeds)
