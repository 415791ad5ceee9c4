"""The pass registry and textual pipelines.

Passes (base.py) register themselves with `@register` when their module is imported;
this module imports every pass module, so `available_passes()` lists them all. A
pipeline is written as text, as in MLIR and XLA's hlo-opt:

    call-inliner,fixpoint(tuple-simplifier,cse,dce)

`fixpoint(...)` repeats its passes until none of them changes the module (bounded).
The checker runs once the pipeline is done; with `verify_each` (hlo-opt --verify-each,
as mlir-opt; the test suite turns it on for every pipeline through $HLO_VERIFY_EACH)
it also runs after every pass that changed the module, and a pass that leaves an
invalid module is reported by name with the checker's message.
"""
from __future__ import annotations

import difflib
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from ..analysis.checker import check_module
from ..diagnostics import Diagnostic, HloError
from ..ir import Module
from ..progress import Progress
from ..text.parser import collections_paused
# Every pass module, imported for the passes it registers (a new pass module is added here).
from . import (batchnorm_expander, call_inliner, conditional_simplifier, constant_folding, cse,  # noqa: F401
               dce, dot_decomposer, flatten_call_graph, fusion, layout_assignment, multi_output_fusion,
               operand_upcaster, optimization_barrier_expander, reshape_mover, result_caster,
               rng_bit_generator_expander, sharding_propagation, sharding_remover, sort_simplifier,
               spmd_partitioner, transpose_folding, tree_reduction_rewriter, tuple_simplifier,
               while_loop_invariant_code_motion, while_loop_simplifier, zero_sized_hlo_elimination)
from .algsimp import simplifier  # noqa: F401
from .base import REGISTRY, Pass
from .rewrite import repeat_while_changing
from .incremental import ChangeTracker


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


VERIFY_EACH_VARIABLE = "HLO_VERIFY_EACH"


def verify_each_by_default() -> bool:
    """Whether pipelines check the module after every pass unless told: $HLO_VERIFY_EACH set (not 0)."""
    return os.environ.get(VERIFY_EACH_VARIABLE, "") not in ("", "0")


@dataclass
class PassRunner:
    """Runs pipelines; observers see every pass (for --print-after, --time-passes ...).

    verify: check the module when the pipeline is done (a pass that broke it is then named
    only with verify_each); verify_each: also after every pass that changed it (None: see
    verify_each_by_default)."""
    verify_each: Optional[bool] = None
    observers: list[Callable[[PassEvent, Module], None]] = field(default_factory=list)
    events: list[PassEvent] = field(default_factory=list)
    verify: bool = True
    progress: Optional[Progress] = None   # told each pipeline step and pass (hlo.progress)

    def __post_init__(self):
        if self.verify_each is None:
            self.verify_each = verify_each_by_default()
        self._tracker: Optional[ChangeTracker] = None  # while a pipeline runs

    def run(self, module: Module, steps: list[PipelineStep]) -> bool:
        self._checked = False  # whether the module was checked since the last change
        if self.progress is not None:
            self.progress.stage("optimizing", total=len(steps), unit="steps")
        self._tracker = ChangeTracker()  # what the passes found, kept while their edits are tracked
        with collections_paused():
            try:
                changed = self._run_steps(module, steps, top=True)
            finally:
                self._tracker = None
            if self.verify and not self._checked:
                if self.progress is not None:
                    self.progress.advance(0, "checking")
                _verify(module, "the pipeline left an invalid module (hlo-opt --verify-each names the pass that "
                                "broke it):")
        return changed

    def _run_steps(self, module: Module, steps: list[PipelineStep], top: bool = False) -> bool:
        changed = False
        for step in steps:
            changed |= self._run_step(module, step)
            if top and self.progress is not None:
                self.progress.advance()
        return changed

    def _run_step(self, module: Module, step: PipelineStep) -> bool:
        if isinstance(step, FixedPoint):
            return repeat_while_changing(lambda: self._run_steps(module, step.steps), step.max_iterations)
        return self._run_pass(module, step)

    def _run_pass(self, module: Module, name: str) -> bool:
        if self.progress is not None:
            self.progress.advance(0, name)
        pass_ = available_passes()[name]()
        pass_.tracker = self._tracker
        start = time.perf_counter()
        changed = bool(pass_.run(module))
        if changed and not (pass_.incremental or pass_.edits_tracked) and self._tracker is not None:
            self._tracker.forget_all()
        event = PassEvent(name, changed, time.perf_counter() - start)
        self.events.append(event)
        if changed:
            self._checked = bool(self.verify_each)
            if self.verify_each:
                _verify(module, f"pass '{name}' left an invalid module:")
        for observer in self.observers:
            observer(event, module)
        return changed


def _verify(module: Module, headline: str) -> None:
    try:
        check_module(module)
    except HloError as err:
        raise HloError([Diagnostic(headline)] + err.diagnostics) from None


def run_pipeline(module: Module, pipeline: str, verify_each: Optional[bool] = None) -> bool:
    """Run a pipeline text on the module; the module is checked at the end (and after every pass
    with verify_each)."""
    return PassRunner(verify_each).run(module, parse_pipeline(pipeline))
