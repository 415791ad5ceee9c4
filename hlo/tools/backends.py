"""Running modules on a backend in a worker process, and comparing the outputs.

hlo-reduce --mismatch A,B runs thousands of candidates; starting a Python process per run
would cost more than the runs, and running the compiled backend in hlo-reduce's own
process would let a crash in generated code take the reducer down. So candidates go to
one long-lived worker process (restarted when it dies or hangs): the reducer learns
"ok" with the output arrays, "error" (a user error such as an unsupported opcode),
"crash" (the worker died, e.g. by a signal) or "timeout".

Inputs are random and deterministic: `random_value` of hlo.runtime.values_io with
numpy's generator seeded by `seed`, the same values `hlo-run --random-inputs --seed N`
gives.

Default tolerances depend on the element type (`default_tolerance`), as they will for
hlo-run --compare.
"""
from __future__ import annotations

import multiprocessing
import os
import traceback
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..analysis.loading import load_module
from ..diagnostics import HloError
from ..ir import Module
from ..opcodes import Op
from ..runtime import values_io

BACKENDS = ("interpreter", "cpu")
# A backend with a deliberately wrong kernel (exponential computed as exponential-minus-one),
# for the tests of hlo-reduce --mismatch; available only when this variable is set.
TEST_BACKEND = "planted-bug"
TEST_BACKEND_SWITCH = "HLO_TOOLS_TEST_BACKENDS"


def available_backends() -> tuple[str, ...]:
    return BACKENDS + ((TEST_BACKEND,) if os.environ.get(TEST_BACKEND_SWITCH) else ())


@dataclass
class Outcome:
    status: str                                  # ok, error, crash, timeout
    outputs: Optional[list[np.ndarray]] = None
    message: str = ""


# --------------------------------------------------------------------------- running (in the worker)

def random_arguments(module: Module, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [values_io.random_value(p.shape, rng) for p in module.entry.parameters]


def run_module(text: str, backend: str, seed: int = 0) -> list[np.ndarray]:
    """The output leaves of `text` on `backend` with random inputs (HloError for user errors)."""
    module = load_module(text, "<candidate>")
    args = random_arguments(module, seed)
    if backend == "cpu":
        from ..codegen import JitExecutable   # lazy: LLVM loads only for the compiled backend
        return [np.asarray(x) for x in JitExecutable(module, threads=1).run(*args)]
    if backend == TEST_BACKEND:
        _plant_bug(module)
    elif backend != "interpreter":
        raise HloError(f"unknown backend '{backend}'; backends: {', '.join(available_backends())}")
    from ..interpreter import run_devices   # lazy: the worker process imports the interpreter only when asked
    evaluators = run_devices(module, [args], replicas=1, partitions=1, seed=seed)
    return [np.asarray(x) for x in values_io.array_leaves(evaluators[0].result)]


def _plant_bug(module: Module) -> None:
    for inst in module.instructions():
        if inst.opcode == Op.EXPONENTIAL:
            inst.opcode = Op.EXPONENTIAL_MINUS_ONE


def _serve(conn) -> None:
    """The worker's loop: (text, backend, seed) in, Outcome out."""
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        text, backend, seed = request
        try:
            outcome = Outcome("ok", run_module(text, backend, seed))
        except HloError as err:
            outcome = Outcome("error", message=err.render())
        except Exception as exc:   # an internal error of the backend: what --crash would look for
            outcome = Outcome("crash", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
        conn.send(outcome)


class BackendWorker:
    """One worker process, started on first use and restarted after a crash or a timeout."""

    def __init__(self, timeout: Optional[float] = None):
        self.timeout = timeout      # seconds per run; None: no limit
        self._ctx = multiprocessing.get_context("spawn")
        self._process = None
        self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        self._conn = parent

    def run(self, text: str, backend: str, seed: int = 0, timeout: Optional[float] = None) -> Outcome:
        if self._process is None or not self._process.is_alive():
            self._start()
        timeout = self.timeout if timeout is None else timeout
        try:
            self._conn.send((text, backend, seed))
            if not self._conn.poll(timeout):
                self.close()
                return Outcome("timeout", message=f"no answer within {timeout:g} s")
            return self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._process.exitcode if self._process is not None else None
            self.close()
            return Outcome("crash", message=f"the {backend} worker died (exit code {code})")

    def close(self) -> None:
        if self._process is not None and self._process.pid is not None:    # (started)
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None


# --------------------------------------------------------------------------- comparing

def default_tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for values of a storage dtype: exact for integers and booleans,
    by precision for floats (8-bit, 16-bit, 32-bit, 64-bit)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return 0.0, 0.0
    bits = dtype.itemsize * 8 // (2 if dtype.kind == "c" else 1)
    return {8: (1e-1, 1e-1), 16: (1e-2, 1e-2), 32: (1e-4, 1e-5)}.get(bits, (1e-9, 1e-12))


def _as_numbers(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "biuc":
        return x
    return x.astype(np.float64)    # ml_dtypes floats (bf16, f8) too


def compare_outputs(xs: list[np.ndarray], ys: list[np.ndarray], rtol: Optional[float] = None,
                    atol: Optional[float] = None) -> Optional[str]:
    """None when the outputs agree within tolerances, else what differs first."""
    if len(xs) != len(ys):
        return f"{len(xs)} outputs against {len(ys)}"
    for i, (x, y) in enumerate(zip(xs, ys)):
        found = difference(x, y, rtol, atol)
        if found is not None:
            return f"output {i}: {found}"
    return None


def difference(x: np.ndarray, y: np.ndarray, rtol: Optional[float] = None,
               atol: Optional[float] = None) -> Optional[str]:
    """None when two arrays agree within tolerances (by default_tolerance of x's dtype unless
    given; NaN equals NaN), else how many elements differ, the first one, and the largest
    absolute and relative errors."""
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        return f"shape {x.shape} against {y.shape}"
    r, a = default_tolerance(x.dtype)
    r, a = (r if rtol is None else rtol), (a if atol is None else atol)
    xn, yn = _as_numbers(x), _as_numbers(y)
    if xn.dtype.kind in "biu":
        bad = xn != yn
    else:
        bad = ~np.isclose(xn, yn, rtol=r, atol=a, equal_nan=True)
    if not np.any(bad):
        return None
    index = tuple(int(j) for j in np.argwhere(bad)[0])
    wide = np.complex128 if xn.dtype.kind == "c" or yn.dtype.kind == "c" else np.float64
    error = np.abs(xn.astype(wide) - yn.astype(wide))[bad]
    scale = np.abs(xn.astype(wide))[bad]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(scale > 0, error / np.where(scale > 0, scale, 1), np.inf)
    worst = float(np.nanmax(error)) if np.any(~np.isnan(error)) else float("nan")
    worst_relative = float(np.nanmax(relative)) if np.any(~np.isnan(relative)) else float("nan")
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at {list(index)}: {xn[index].item()!r} against "
            f"{yn[index].item()!r}; max abs error {worst:.3g}, max rel error {worst_relative:.3g} (rtol {r:g}, atol {a:g})")
