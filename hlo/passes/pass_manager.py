"""The pass registry and textual pipelines.

Passes (base.py) register themselves with `@register` when their module is imported;
this module imports every pass module, so `available_passes()` lists them all. A
pipeline is written as text, as in MLIR and XLA's hlo-opt:

    call-inliner,fixpoint(tuple-simplifier,cse,dce)

`fixpoint(...)` repeats its passes until none of them changes the module (bounded).
After each pass the checker runs (unless disabled) and a pass that leaves an
invalid module is reported by name with the checker's message.
"""
from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Union

from ..analysis.checker import check_module
from ..diagnostics import Diagnostic, HloError
from ..ir import Module
# Every pass module, imported for the passes it registers (a new pass module is added here).
from . import (batchnorm_expander, call_inliner, conditional_simplifier, constant_folding, cse,  # noqa: F401
               dce, dot_decomposer, flatten_call_graph, fusion, layout_assignment, multi_output_fusion,
               optimization_barrier_expander, reshape_mover, rng_bit_generator_expander, sharding_propagation,
               sort_simplifier, spmd_partitioner, transpose_folding, tuple_simplifier,
               while_loop_invariant_code_motion, while_loop_simplifier, zero_sized_hlo_elimination)
from .algsimp import simplifier  # noqa: F401
from .base import REGISTRY, Pass


def available_passes() -> dict[str, type[Pass]]:
    """Every registered pass, by name."""
    return dict(sorted(REGISTRY.items()))


# --------------------------------------------------------------------------- pipelines

@dataclass
class FixedPoint:
    steps: list
    max_iterations: int = 20


PipelineStep = Union[str, FixedPoint]


def parse_pipeline(text: str) -> list[PipelineStep]:
    """Steps of a pipeline text; HloError naming the unknown pass or the syntax problem."""
    passes = available_passes()
    tokens = re.findall(r"[(),]|[^\s(),]+", text)
    pos = 0

    def parse_list(closing: bool) -> list[PipelineStep]:
        nonlocal pos
        steps: list[PipelineStep] = []
        while pos < len(tokens):
            tok = tokens[pos]
            if tok == ")":
                if not closing:
                    raise _pipeline_error(text, "unbalanced ')'")
                return steps
            if tok == ",":
                pos += 1
                continue
            pos += 1
            if tok == "fixpoint":
                if pos >= len(tokens) or tokens[pos] != "(":
                    raise _pipeline_error(text, "fixpoint must be followed by '('")
                pos += 1
                inner = parse_list(True)
                if pos >= len(tokens) or tokens[pos] != ")":
                    raise _pipeline_error(text, "missing ')' after fixpoint(...")
                pos += 1
                steps.append(FixedPoint(inner))
            elif tok in passes:
                steps.append(tok)
            else:
                close = difflib.get_close_matches(tok, list(passes), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise _pipeline_error(text, f"unknown pass '{tok}'{hint}; --list-passes shows the passes")
        if closing:
            raise _pipeline_error(text, "missing ')'")
        return steps

    steps = parse_list(False)
    if not steps:
        raise _pipeline_error(text, "the pipeline is empty")
    return steps


def _pipeline_error(text: str, message: str) -> HloError:
    return HloError([Diagnostic(f"in pipeline '{text}': {message}")])


# --------------------------------------------------------------------------- running

@dataclass
class PassEvent:
    name: str
    changed: bool
    seconds: float


@dataclass
class PassRunner:
    """Runs pipelines; observers see every pass (for --print-after, --time-passes ...)."""
    verify_each: bool = True
    observers: list[Callable[[PassEvent, Module], None]] = field(default_factory=list)
    events: list[PassEvent] = field(default_factory=list)

    def run(self, module: Module, steps: list[PipelineStep]) -> bool:
        changed = False
        for step in steps:
            changed |= self._run_step(module, step)
        return changed

    def _run_step(self, module: Module, step: PipelineStep) -> bool:
        if isinstance(step, FixedPoint):
            any_change = False
            for _ in range(step.max_iterations):
                if not self.run(module, step.steps):
                    break
                any_change = True
            return any_change
        return self._run_pass(module, step)

    def _run_pass(self, module: Module, name: str) -> bool:
        pass_ = available_passes()[name]()
        start = time.perf_counter()
        changed = bool(pass_.run(module))
        event = PassEvent(name, changed, time.perf_counter() - start)
        self.events.append(event)
        if self.verify_each and changed:
            self._verify(module, name)
        for observer in self.observers:
            observer(event, module)
        return changed

    @staticmethod
    def _verify(module: Module, name: str) -> None:
        try:
            check_module(module)
        except HloError as err:
            head = Diagnostic(f"pass '{name}' left an invalid module:")
            raise HloError([head] + err.diagnostics) from None


def run_pipeline(module: Module, pipeline: str, verify_each: bool = True) -> bool:
    return PassRunner(verify_each).run(module, parse_pipeline(pipeline))
