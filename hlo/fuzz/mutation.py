"""Damaged module texts through the tools: every answer must be a result or a located error.

`mutate(text, rng)` damages a module text the way files get damaged and the way people
mistype: a span deleted, repeated or moved, a number made huge, negative or zero, a name,
type or opcode swapped for another, brackets added or dropped, odd characters (a BOM, NUL,
CR, non-ASCII) put in, the text cut short, two texts spliced. `exercise(text)` then does
what the tools do with it: parse and check (hlo-opt, hlo-run, hlo-fmt), format, run the
language server's analysis, run the default pipeline, and interpret the module on random
inputs when it is small and has no loop that could run on forever. Anything but an HloError
is a traceback (a bug), and a tool taking longer than its time limit a hang.
"""
from __future__ import annotations

import re
import signal
import traceback
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..analysis.loading import load_module
from ..diagnostics import HloError
from ..interpreter import run_devices
from ..lsp.analysis import analyse
from ..opcodes import OPCODES, Op
from ..passes.pass_manager import run_pipeline
from ..passes.pipelines import pipeline_text
from ..runtime.values_io import random_value
from ..shapes import PRIMITIVE_TYPES
from ..text.printer import format_module

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")
WORD = re.compile(r"[A-Za-z_][\w.-]*")
ODD = ["\ufeff", "\x00", "\r", "\r\n", "é", "\u2028", "\t", "%", "{", "}", "(", ")", "[", "]", "<=", "?", ",", "=",
       "/*", "*/", "//", "\"", "'", "\\", "{...}", "0x1p4", "nan", "-inf", "T(1,0)", "<=[4]", "mesh['x'=2]"]
NUMBERS = ["0", "-1", "1", "2147483648", "-9223372036854775809", "18446744073709551616", "99999999999", "1e309",
           "65536", "3", "1000000", "4294967295", "0.5", "-0"]
OPCODE_NAMES = sorted(OPCODES)
TYPE_NAMES = sorted(PRIMITIVE_TYPES)


def mutate(text: str, rng: np.random.Generator, donor: Optional[str] = None) -> str:
    """One to three damages of `text` (donor: another text to splice from)."""
    for _ in range(1 if rng.random() < 0.6 else int(rng.integers(2, 4))):
        text = MUTATORS[int(rng.integers(0, len(MUTATORS)))](text, rng, donor or text)
    return text


def _span(text: str, rng) -> tuple[int, int]:
    if not text:
        return 0, 0
    start = int(rng.integers(0, len(text)))
    return start, min(len(text), start + int(rng.integers(1, 40)))


def _delete(text, rng, donor):
    a, b = _span(text, rng)
    return text[:a] + text[b:]


def _repeat(text, rng, donor):
    a, b = _span(text, rng)
    return text[:b] + text[a:b] + text[b:]


def _move(text, rng, donor):
    a, b = _span(text, rng)
    piece, rest = text[a:b], text[:a] + text[b:]
    at = int(rng.integers(0, len(rest) + 1))
    return rest[:at] + piece + rest[at:]


def _splice(text, rng, donor):
    a, b = _span(donor, rng)
    at = int(rng.integers(0, len(text) + 1))
    return text[:at] + donor[a:b] + text[at:]


def _insert_odd(text, rng, donor):
    at = int(rng.integers(0, len(text) + 1))
    return text[:at] + ODD[int(rng.integers(0, len(ODD)))] + text[at:]


def _truncate(text, rng, donor):
    return text[:int(rng.integers(0, len(text) + 1))]


def _replace_match(pattern: re.Pattern, choices: Callable) -> Callable:
    def mutator(text, rng, donor):
        found = list(pattern.finditer(text))
        if not found:
            return text
        m = found[int(rng.integers(0, len(found)))]
        return text[:m.start()] + choices(rng, m.group()) + text[m.end():]
    return mutator


def _other_number(rng, old: str) -> str:
    return NUMBERS[int(rng.integers(0, len(NUMBERS)))]


def _other_word(rng, old: str) -> str:
    pool = OPCODE_NAMES if old in OPCODES else TYPE_NAMES if old in PRIMITIVE_TYPES else OPCODE_NAMES + TYPE_NAMES
    return pool[int(rng.integers(0, len(pool)))] if rng.random() < 0.8 else old + old


def _nest(text, rng, donor):
    at = int(rng.integers(0, len(text) + 1))
    depth = int(rng.integers(1, 300))
    opener = "({["[int(rng.integers(0, 3))]
    return text[:at] + opener * depth + text[at:]


MUTATORS = [_delete, _repeat, _move, _splice, _insert_odd, _truncate, _nest,
            _replace_match(NUMBER, _other_number), _replace_match(NUMBER, _other_number),
            _replace_match(WORD, _other_word), _replace_match(WORD, _other_word)]


# --------------------------------------------------------------------------- through the tools

@dataclass
class Verdict:
    ok: bool              # no traceback, no hang
    stage: str = ""       # where it failed: parse, format, lsp, pipeline, run
    detail: str = ""
    loaded: bool = False  # the text was a valid module


class Hang(Exception):
    """A tool took longer than its time limit."""


def _alarm(signum, frame):
    raise Hang()


def exercise(text: str, rng: np.random.Generator, seconds: float = 20.0) -> Verdict:
    """What the tools do with a text, under a time limit per stage (main thread only)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        return _exercise(text, rng, seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _stage(name: str, seconds: float, work: Callable):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return work(), None
    except HloError as err:
        return None, err
    except Hang:
        raise
    except RecursionError:
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _exercise(text: str, rng, seconds: float) -> Verdict:
    stage = "parse"
    try:
        module, err = _stage(stage, seconds, lambda: load_module(text, "mutated.hlo"))
        stage = "lsp"
        _stage(stage, seconds, lambda: analyse(text, "mutated.hlo"))
        if module is None:
            if err.diagnostics and all(d.loc is None for d in err.diagnostics) and text.strip():
                return Verdict(False, "parse", "an error without a location: " + err.render())
            return Verdict(True)
        stage = "format"
        printed, _ = _stage(stage, seconds, lambda: format_module(module))
        stage = "run"
        if _small_and_finite(module):
            _stage(stage, seconds, lambda: _run(module, rng))
        stage = "pipeline"
        _stage(stage, seconds, lambda: run_pipeline(load_module(printed, "printed.hlo"), pipeline_text("default")))
        return Verdict(True, loaded=True)
    except Hang:
        return Verdict(False, stage, f"no answer within {seconds} s")
    except Exception:  # noqa: BLE001 - what the mutation fuzzer is looking for
        return Verdict(False, stage, traceback.format_exc(limit=8))


def _small_and_finite(module) -> bool:
    """Small enough to run in a moment and without a loop that could run on forever."""
    total = 0
    for inst in module.instructions():
        if inst.opcode == Op.WHILE or inst.opcode == Op.RECV or inst.opcode == Op.INFEED or inst.opcode == Op.RECV_DONE:
            return False
        if inst.shape is not None:
            total += sum(s.element_count() for _, s in inst.shape.leaves() if s.is_array)
    return total <= 100_000 and module.config.replica_count * module.config.num_partitions <= 8


def _run(module, rng) -> None:
    args = [random_value(p.shape, rng, f"parameter %{p.name}", p.loc) for p in module.entry.parameters]
    devices = module.config.replica_count * module.config.num_partitions
    run_devices(module, [args] * devices, replicas=module.config.replica_count,
                partitions=module.config.num_partitions)
