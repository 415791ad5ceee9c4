"""hlo-run --compare: run a module on two backends and name the first instruction whose value differs.

Both sides run the same module (observe.py: when a side compiles, the module as compiled),
and each reports every instruction's value under a `ValueKey` (instruction, result leaf,
call sites, while-loop iterations). One side is recorded first, the compiled one when
there is one, up to a memory limit (`RECORD_BYTES`; later values are not recorded and so not
compared); the other side, the interpreter when there is one, then runs with a comparer that
stops it at the first value differing from the recorded one beyond the tolerances: the
first instruction *in its execution order* whose value differs.

A compiled fusion is one value (its computation's instructions are not materialised).
When the first difference is a fusion of several instructions, the module is compiled
again with that fusion replaced by its instructions (`unfuse`) and compared again, which
names the fused instruction that goes wrong; if the unfused instructions agree, the report
says that only the fused kernel differs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..ir import Module
from .backends import compare_outputs, difference
from .observe import Locator, Stop, ValueKey, fused_names, module_to_run, run_observed, several_fused, source_name, unfuse

# Values recorded from the first side at most (bytes); later ones are not compared.
RECORD_BYTES = 1 << 30


@dataclass
class Mismatch:
    key: ValueKey
    values: tuple                 # (first backend's array, second backend's array)
    summary: str                  # count, first differing index, max abs/rel error
    module: Module                # the module the key refers to
    source: Optional[str] = None  # the user's file (observe.source_name)
    inside: Optional["Mismatch"] = None   # the fused instruction that differs, when a fusion did
    fused_only: bool = False      # the fusion differs but its instructions computed one by one agree


@dataclass
class Comparison:
    backends: tuple
    outputs: Optional[str]        # how the outputs differ, None when they agree
    first: Optional[Mismatch]     # the first instruction whose value differs
    compared: int = 0             # values compared
    truncated: bool = False       # the recording reached RECORD_BYTES
    notes: list = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return self.outputs is None


class _Recording:
    """Values of one run by key; a key seen twice with different values is not compared."""

    def __init__(self, limit: int):
        self.values: dict[ValueKey, Optional[np.ndarray]] = {}
        self.limit, self.bytes, self.truncated = limit, 0, False

    def __call__(self, key: ValueKey, array: np.ndarray) -> None:
        known = self.values.get(key, False)
        if known is not False:
            if known is not None and not np.array_equal(known, array, equal_nan=True):
                self.values[key] = None    # (an instruction run twice under one key: ambiguous)
            return
        if self.bytes + array.nbytes > self.limit:
            self.truncated = True
            return
        self.bytes += array.nbytes
        self.values[key] = np.array(array, copy=True)


class _Comparer:
    def __init__(self, recording: _Recording, rtol: Optional[float], atol: Optional[float]):
        self.recording, self.rtol, self.atol = recording, rtol, atol
        self.compared = 0
        self.found: Optional[tuple] = None

    def __call__(self, key: ValueKey, array: np.ndarray) -> None:
        recorded = self.recording.values.get(key)
        if recorded is None:
            return
        self.compared += 1
        if difference(recorded, array, self.rtol, self.atol) is not None:
            self.found = (key, (recorded, np.array(array, copy=True)))
            raise Stop()


def compare(module: Module, args: list, backends: Sequence[str], rtol: Optional[float] = None,
            atol: Optional[float] = None, seed: int = 0, record_bytes: int = RECORD_BYTES) -> Comparison:
    """Run module on both backends (the inputs args, one value per parameter) and compare."""
    backends = tuple(backends)
    run_module = module_to_run(module, backends)
    result = _compare_run(run_module, args, backends, rtol, atol, seed, record_bytes)
    first = result.first
    if first is not None:
        first.source = source_name(module)
    if first is not None and "cpu" in backends and several_fused(run_module, first.key.name):
        _look_inside(result, run_module, args, backends, rtol, atol, seed, record_bytes)
    return result


def _compare_run(module: Module, args: list, backends: tuple, rtol, atol, seed: int,
                 record_bytes: int) -> Comparison:
    """One comparison of module (already as compiled) on the two backends."""
    recorded_side = 0 if backends[0] == "cpu" or backends[1] != "cpu" else 1
    streamed_side = 1 - recorded_side
    recording = _Recording(record_bytes)
    outputs = [None, None]
    outputs[recorded_side] = run_observed(backends[recorded_side], module, args, recording, seed)
    comparer = _Comparer(recording, rtol, atol)
    outputs[streamed_side] = run_observed(backends[streamed_side], module, args, comparer, seed)
    if comparer.found is not None and not outputs[streamed_side]:   # stopped early: the outputs too
        outputs[streamed_side] = run_observed(backends[streamed_side], module, args, None, seed)
    first = None
    if comparer.found is not None:
        key, values = comparer.found
        if recorded_side == 1:
            values = values[::-1]
        first = Mismatch(key, values, difference(values[0], values[1], rtol, atol), module)
    return Comparison(backends, compare_outputs(outputs[0], outputs[1], rtol, atol), first,
                      comparer.compared, recording.truncated)


# --------------------------------------------------------------------------- inside a fusion

def _look_inside(result: Comparison, module: Module, args: list, backends: tuple, rtol, atol, seed: int,
                 record_bytes: int) -> None:
    """Compare again with the first differing fusion unfused, to name its instruction that differs."""
    first = result.first
    unfused = unfuse(module, first.key.name)
    again = _compare_run(unfused, args, backends, rtol, atol, seed, record_bytes)
    if again.first is not None and again.first.key.name in fused_names(module, first.key.name):
        first.inside = again.first
        again.first.source = first.source
    else:
        first.fused_only = True
        result.notes.append(f"with %{first.key.name} unfused, its instructions agree: the fused kernel differs")


# --------------------------------------------------------------------------- the report

def format_comparison(result: Comparison) -> str:
    a, b = result.backends
    lines = []
    if result.agree:
        lines.append(f"compare: {a} and {b} agree ({result.compared} instruction values compared)")
    else:
        lines.append(f"compare: {a} and {b} disagree: {result.outputs}")
    first = result.first
    if first is None:
        if not result.agree:
            lines.append(f"no instruction value differs before the outputs ({result.compared} compared)")
    else:
        heading = "first instruction whose value differs" if not result.agree else \
            "the outputs agree, but an instruction's value differs"
        lines.append(f"{heading} ({result.compared} values compared before it):")
        lines.extend(_mismatch_lines(first, result.backends))
        if first.inside is not None:
            lines.append(f"inside %{first.key.name}, compiled unfused, the first instruction that differs:")
            lines.extend(_mismatch_lines(first.inside, result.backends))
    if result.truncated:
        lines.append(f"note: only the first {RECORD_BYTES >> 20} MiB of values were recorded; later ones were "
                     f"not compared")
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def _mismatch_lines(m: Mismatch, backends: tuple) -> list[str]:
    where = Locator(m.module, m.source).describe(m.key)
    lines = [f"  {where[0]}"] + [f"    {line}" for line in where[1:]]
    for backend, value in zip(backends, m.values):
        lines.append(f"    {backend + ':':<12} {_summary(value)}")
    lines.append(f"    {m.summary}")
    return lines


def _summary(value: np.ndarray) -> str:
    flat = value.reshape(-1)
    head = np.array2string(flat[:6], precision=6, separator=", ", threshold=8)
    more = f" ... ({flat.size} elements)" if flat.size > 6 else ""
    return f"{value.dtype}{list(value.shape)} {head}{more}"
