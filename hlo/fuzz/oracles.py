"""The checks of one program: the interpreter's results are the reference; the printed text,
the passes, the compiled backend (JIT and AOT) and XLA:CPU must agree with them.

`check(program, ...)` returns a list of `Finding`s (empty: all agree). A finding names the
check ("generator", "interpreter", "round-trip", "pass:NAME", "pipeline", "jit", "aot",
"xla") and says what differs. Refusals are not findings where they are documented: the
compiled backend refusing, at its location, an op it does not compile; XLA refusing a
module (listed separately as `xla_refusals`, for review).
"""
from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..analysis.loading import load_module
from ..diagnostics import HloError
from ..opcodes import Op
from ..interpreter import run_devices
from ..passes.pass_manager import available_passes, run_pipeline
from ..passes.pipelines import pipeline_text
from ..runtime.values_io import array_leaves, from_storage, to_storage
from ..text.printer import format_module
from .compare import difference
from .program import Program

# The compiled backend's documented refusals (docs/ARCHITECTURE.md, "Not compiled").
NOT_COMPILED = re.compile(r"does not support|not compiled")
# Passes that change what a program computes on purpose, or need what generated programs lack.
SKIPPED_PASSES = ("spmd-partitioner", "sharding-propagation", "layout-assignment")


@dataclass
class Finding:
    seed: int
    check: str
    message: str
    text: str = ""

    def __str__(self) -> str:
        return f"seed {self.seed}: {self.check}: {self.message}"


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    xla_refusals: list[str] = field(default_factory=list)
    checks: int = 0


def check(program: Program, passes: Optional[list[str]] = None, jit: bool = True, aot: bool = False,
          xla=None) -> Outcome:
    """Run every check on `program`; `passes`: the passes to try one by one (None: none);
    `xla`: an XlaRunner (or None)."""
    outcome = Outcome()

    def found(kind: str, message: str) -> None:
        outcome.findings.append(Finding(program.seed, kind, message, program.text))

    try:
        module = load_module(program.text, f"fuzz_{program.seed}.hlo")
    except HloError as err:
        found("generator", err.render())
        return outcome
    shapes = [leaf for _, leaf in module.entry.root.shape.leaves()]
    reference = _interpret(program, module, found)
    if reference is None:
        return outcome
    text = _round_trip(module, found)
    deterministic = "random-numbers" not in program.features
    for name in (passes or []):
        _compare_after(program, text, name, name, reference, shapes, found, deterministic)
        outcome.checks += 1
    _compare_after(program, text, pipeline_text("default"), "pipeline", reference, shapes, found, deterministic)
    if jit and program.replicas == 1 and deterministic:
        _compare_compiled(program, module, reference, shapes, found, aot)
    if xla is not None and deterministic and not program.features & {"host-transfer", "non-identity-init"} \
            and not _xla_diverges(module):
        _compare_xla(program, module, reference, shapes, found, xla, outcome)
    outcome.checks += 3
    return outcome


def choose_passes(rng: np.random.Generator, count: int) -> list[str]:
    names = [n for n in sorted(available_passes()) if n not in SKIPPED_PASSES]
    return [names[int(i)] for i in rng.choice(len(names), size=min(count, len(names)), replace=False)]


# --------------------------------------------------------------------------- the checks

def _run(program: Program, module) -> list[list[np.ndarray]]:
    evaluators = run_devices(module, program.inputs, replicas=program.replicas, infeed=program.infeed)
    return [array_leaves(ev.result) for ev in evaluators]


def _interpret(program: Program, module, found) -> Optional[list]:
    return _attempt("interpreter", found, lambda: _run(program, module))


def _round_trip(module, found) -> str:
    text = format_module(module)
    try:
        again = format_module(load_module(text, "printed.hlo"))
    except HloError as err:
        found("round-trip", "the printed module does not read back: " + err.render())
        return text
    if again != text:
        found("round-trip", "the printed module prints differently when read back")
    return text


def _agree(program: Program, want: list, got: list, shapes, check: str, found) -> None:
    for d, (w, g) in enumerate(zip(want, got)):
        why = difference([from_storage(x) for x in w], [from_storage(x) for x in g], program.tolerances, shapes)
        if why is not None:
            found(check, (f"device {d}: " if len(want) > 1 else "") + why)
            return


def _attempt(kind: str, found, work, refusal=lambda err: False):
    """work()'s result; None after reporting what went wrong (an HloError that `refusal` does
    not accept, or a crash)."""
    try:
        return work()
    except HloError as err:
        if not refusal(err):
            found(kind, err.render())
    except Exception:  # noqa: BLE001 - a crash is what the fuzzer looks for
        found(kind, "crash: " + traceback.format_exc(limit=6))
    return None


def _compare_after(program: Program, text: str, pipeline: str, label: str, reference, shapes, found,
                   deterministic: bool) -> None:
    kind = "pipeline" if label == "pipeline" else f"pass:{label}"

    def optimised():
        module = load_module(text, "printed.hlo")
        run_pipeline(module, pipeline)
        return _run(program, module)
    got = _attempt(kind, found, optimised)
    if got is not None and deterministic:
        _agree(program, reference, got, shapes, kind, found)


def _documented_refusal(err: HloError) -> bool:
    return bool(NOT_COMPILED.search(err.message)) and err.diagnostics[0].loc is not None


def _compare_compiled(program: Program, module, reference, shapes, found, aot: bool) -> None:
    from ..codegen import JitExecutable  # lazy: llvmlite only when compiling
    got = _attempt("jit", found, lambda: [[np.asarray(x) for x in JitExecutable(module).run(*program.inputs[0])]],
                   _documented_refusal)
    if got is None:
        return
    _agree(program, reference, got, shapes, "jit", found)
    if aot:
        from ..codegen.aot_run import run_aot  # lazy: llvmlite, and a C compiler
        got = _attempt("aot", found, lambda: [run_aot(module, program.inputs[0], timeout=60.0)])
        if got is not None:
            _agree(program, reference, got, shapes, "aot", found)


# Where XLA:CPU disagrees with itself or with the spec, a program is not compared with it:
# atan2(0, 0) of operands XLA folds at compile time (an iota) is NaN, where the spec, C and
# XLA's run-time atan2 give 0; an integer power of -1 to a negative exponent is 0 in XLA:CPU's
# compiled code and +-1 when XLA folds it (its evaluator, which the project follows; the spec
# leaves it open).
XLA_DIVERGENT_OPS = frozenset({Op.ATAN2})
XLA_DIVERGENT_INTEGER_OPS = frozenset({Op.POWER})


def _xla_diverges(module) -> bool:
    return any(inst.opcode in XLA_DIVERGENT_OPS
               or (inst.opcode in XLA_DIVERGENT_INTEGER_OPS and inst.shape.is_array
                   and inst.shape.element_type.is_integral)
               or _relayout_bitcast(inst)
               for inst in module.instructions())


def _relayout_bitcast(inst) -> bool:
    """A bitcast that changes the layout: the spec reinterprets the buffer (a transpose); XLA's
    compile of layout-carrying text, whose passes run before its layout assignment, keeps the
    logical values instead (bitcast is internal to XLA's pipeline)."""
    if inst.opcode != Op.BITCAST or not inst.shape.is_array or not inst.operands[0].shape.is_array:
        return False
    return list(inst.shape.minor_to_major()) != list(inst.operands[0].shape.minor_to_major())


def _compare_xla(program: Program, module, reference, shapes, found, xla, outcome: Outcome) -> None:
    leaf_types = [leaf.element_type.name for p in module.entry.parameters for _, leaf in p.shape.leaves()]
    inputs = [[from_storage(a) for a in args] for args in program.inputs]
    status, result = xla.run(program.text, inputs, program.replicas, leaf_types)
    if status == "ran":
        _agree(program, reference, [[to_storage(leaf, shape) for leaf, shape in zip(device, shapes)] for device in result],
               shapes, "xla", found)   # (the runner's files hold raw bits: int4 comes back as uint8)
    else:
        outcome.xla_refusals.append(f"seed {program.seed}: XLA {status}: {result}")
