"""Named pipelines: pipeline texts hlo-opt runs with --pipeline=NAME.

`default` chains the passes the way an optimising CPU compiler does: inline calls, drop the
annotations that mean nothing on one device, give mixed-type products one element type,
simplify to a fixed point, window long reductions as XLA:CPU does, expand ops the backend does not implement directly
(batch norm, rng-bit-generator), canonicalise dots, transposes and reshapes, hoist
loop invariants, simplify again what the expansions exposed, give every called
computation a single caller, then fuse and clean up.

A pipeline names only passes that are registered when it is built (several passes
are optional), so `PIPELINES` ({name: text}) and `pipeline_text(name)` are computed
on access, not stored; `missing_passes(name)` says which wanted passes were left out.
"""
from __future__ import annotations

from typing import Union

from ..diagnostics import Diagnostic, HloError
from .fusion import InstructionFusion
from .pass_manager import available_passes

# A pipeline spec: pass names, and tuples for fixpoint(...) groups.
Spec = list[Union[str, tuple]]

SIMPLIFY = ("algsimp", "constant-folding", "cse", "dce", "tuple-simplifier", "conditional-simplifier",
            "while-loop-simplifier", "sort-simplifier", "zero-sized-hlo-elimination")

PIPELINE_SPECS: dict[str, Spec] = {
    "default": [
        "call-inliner",
        "sharding-remover",
        "result-caster",
        "operand-upcaster",
        "optimization-barrier-expander",
        SIMPLIFY,
        "tree-reduction-rewriter",
        "batchnorm-expander",
        "rng-bit-generator-expander",
        "dot-decomposer",
        "transpose-folding",
        "reshape-mover",
        "while-loop-invariant-code-motion",
        SIMPLIFY,
        "flatten-call-graph",
        InstructionFusion.name,  # "fusion", written through the pass: the word is also an opcode's name
        "multi-output-fusion",
        "dce",
    ],
    # Simplification only: no expansion, no fusion.
    "simplify": ["call-inliner", SIMPLIFY],
}


def _render(spec: Spec, registered) -> str:
    parts = []
    for step in spec:
        if isinstance(step, tuple):
            inner = _render(list(step), registered)
            if inner:
                parts.append(f"fixpoint({inner})")
        elif step in registered:
            parts.append(step)
    return ",".join(parts)


def _wanted(spec: Spec) -> list[str]:
    names: list[str] = []
    for step in spec:
        for name in (step if isinstance(step, tuple) else (step,)):
            if name not in names:
                names.append(name)
    return names


def pipeline_text(name: str) -> str:
    """The pipeline text of a named pipeline, naming only the registered passes."""
    spec = PIPELINE_SPECS.get(name)
    if spec is None:
        known = ", ".join(sorted(PIPELINE_SPECS))
        raise HloError([Diagnostic(f"unknown pipeline '{name}'; known pipelines: {known}")])
    return _render(spec, available_passes())


def missing_passes(name: str) -> list[str]:
    """Passes the named pipeline wants that are not registered."""
    registered = available_passes()
    return [p for p in _wanted(PIPELINE_SPECS[name]) if p not in registered]


def __getattr__(name: str):
    """`PIPELINES`: {name: pipeline text}, computed on access since passes register on import."""
    if name == "PIPELINES":
        return {pipeline: pipeline_text(pipeline) for pipeline in PIPELINE_SPECS}
    raise AttributeError(name)
