"""hlo-run --check-finite: the first instruction that makes a NaN or an infinity from finite operands.

The run is observed (observe.py) on either backend. For each floating-point value the
checker keeps whether it was finite (and, when small, the array, to show the operands at
the first bad element); the first value holding a NaN or an infinity whose operands were
all finite is the origin. An operand that was not observed (a parameter of a loop body or
a fused computation, a get-tuple-element, a constant, an instruction inside a compiled
fusion) is followed to where its value comes from: the loop's initial value and its body's
result, the caller's operand, the constant's literal, the entry's argument. Values that are
not finite from the start (arguments, constants such as a max-reduction's -inf) are
sources, not origins: they are reported only when nothing else is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..ir import Instruction, Module
from ..opcodes import Op, Trait
from ..runtime import values_io
from .observe import (Locator, Stop, ValueKey, fused_names, module_to_run, run_observed, several_fused,
                      source_name, unfuse)

KEPT_ELEMENTS = 1 << 16     # arrays up to this size are kept to show operands at the bad element


@dataclass
class Origin:
    key: ValueKey
    value: np.ndarray
    operands: list                 # (instruction name, array or None) per operand


@dataclass
class FiniteCheck:
    backend: str
    origin: Optional[Origin]
    module: Module
    source: Optional[str] = None                         # the user's file (observe.source_name)
    inside: Optional[Origin] = None                      # the fused instruction, when the origin is a fusion
    bad_arguments: list = field(default_factory=list)   # parameter numbers whose arguments are not finite
    bad_outputs: list = field(default_factory=list)     # output leaves that are not finite
    checked: int = 0
    inside_module: Optional[Module] = None

    @property
    def clean(self) -> bool:
        return self.origin is None and not self.bad_outputs


def _finite(array: np.ndarray) -> bool:
    return array.dtype.kind not in "fc" or bool(np.all(np.isfinite(array)))


class _Checker:
    """inside_observed: the instructions of fusions are observed too (the interpreter), so a
    fusion, like a call, loop or conditional, is never an origin itself."""

    def __init__(self, module: Module, args: list, inside_observed: bool):
        self.inside_observed = inside_observed
        self.locator = Locator(module)
        self.entry = module.entry
        self.arguments = {p.attrs["parameter_number"]: [_finite(_numbers(a)) for a in values_io.array_leaves(v)]
                          for p, v in zip(sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"]),
                                          args)}
        self.finite: dict[str, dict[int, bool]] = {}
        self.kept: dict[str, np.ndarray] = {}
        self.origin: Optional[Origin] = None
        self.checked = 0

    def __call__(self, key: ValueKey, array: np.ndarray) -> None:
        numbers = _numbers(array)
        ok = _finite(numbers)
        if not ok:
            inst = self.locator.instruction(key)
            if inst is not None and self._may_be_origin(inst) and all(self._state(op, ()) for op in inst.operands):
                self.origin = Origin(key, numbers, [(op.name, self.kept.get(op.name)) for op in inst.operands])
                raise Stop()
        self.checked += 1
        self.finite.setdefault(key.name, {})[key.leaf] = ok
        if numbers.size <= KEPT_ELEMENTS and key.leaf == 0:
            self.kept[key.name] = numbers

    def _may_be_origin(self, inst: Instruction) -> bool:
        if not inst.operands or inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE):
            return False
        if inst.opcode != Op.FUSION:
            return True
        # a compiled fusion: its constants are operands too (a NaN select-ed in is not made there)
        return not self.inside_observed and all(self._state(i, ()) for i in inst.attrs["calls"].instructions
                                                if i.opcode == Op.CONSTANT)

    # -- was an operand's value finite? (True unless it may hold a NaN or an infinity)
    def _state(self, inst: Instruction, path: tuple, seen: Optional[set] = None) -> bool:
        seen = set() if seen is None else seen
        if (id(inst), path) in seen:
            return True
        seen.add((id(inst), path))
        leaves = self.finite.get(inst.name)
        if leaves is not None:
            return all(leaves.values())
        op = inst.opcode
        if op == Op.CONSTANT:
            literal = inst.attrs.get("literal")
            array = getattr(literal, "array", None)
            return array is None or all(_finite(_numbers(np.asarray(a))) for a in values_io.array_leaves(array))
        if op == Op.PARAMETER:
            return self._parameter_state(inst, path, seen)
        if op == Op.GET_TUPLE_ELEMENT:
            return self._state(inst.operands[0], (inst.attrs["index"],) + path, seen)
        if op == Op.TUPLE and path:
            return self._state(inst.operands[path[0]], path[1:], seen)
        if op == Op.WHILE:
            body = inst.attrs["body"]
            return self._state(inst.operands[0], path, seen) and self._state(body.root, path, seen)
        return all(self._state(o, (), seen) for o in inst.operands)

    def _parameter_state(self, param: Instruction, path: tuple, seen: set) -> bool:
        number = param.attrs["parameter_number"]
        comp = param.parent
        if comp is self.entry:
            return all(self.arguments.get(number, [True]))
        caller = self.locator.callers.get(id(comp))
        if caller is None:
            return True
        if caller.opcode == Op.WHILE:
            return self._state(caller.operands[0], path, seen) and self._state(caller.attrs["body"].root, path, seen)
        if caller.opcode == Op.CONDITIONAL:
            return all(self._state(o, path, seen) for o in caller.operands[1:])
        if number < len(caller.operands):
            return self._state(caller.operands[number], path, seen)
        return True


def _numbers(array: np.ndarray) -> np.ndarray:
    """ml_dtypes floats (bf16, f8) as float32, which numpy's isfinite reads."""
    array = np.asarray(array)
    if array.dtype.kind == "V" or (array.dtype.kind == "f" and array.dtype.type.__module__ != "numpy"):
        return array.astype(np.float32)
    return array


def check_finite(module: Module, args: list, backend: str, seed: int = 0) -> FiniteCheck:
    """Run module on backend and find where the first NaN or infinity is made."""
    run_module = module_to_run(module, (backend,))
    checker, outputs = _checked_run(run_module, args, backend, seed)
    bad_arguments = [n for n, leaves in sorted(checker.arguments.items()) if not all(leaves)]
    bad_outputs = [i for i, x in enumerate(outputs) if not _finite(_numbers(x))]
    check = FiniteCheck(backend, checker.origin, run_module, source_name(module), None, bad_arguments, bad_outputs,
                        checker.checked)
    origin = checker.origin
    if origin is not None and backend == "cpu" and several_fused(run_module, origin.key.name):
        # a compiled fusion is one value: compile it unfused to name the instruction inside
        unfused = unfuse(run_module, origin.key.name)
        inner, _ = _checked_run(unfused, args, backend, seed)
        if inner.origin is not None and inner.origin.key.name in fused_names(run_module, origin.key.name):
            check.inside = inner.origin
            check.inside_module = unfused
    return check


def _checked_run(module: Module, args: list, backend: str, seed: int) -> tuple[_Checker, list]:
    checker = _Checker(module, args, inside_observed=backend != "cpu")
    outputs = run_observed(backend, module, args, checker, seed)
    if checker.origin is not None and not outputs:
        outputs = run_observed(backend, module, args, None, seed)
    return checker, outputs


# --------------------------------------------------------------------------- the report

def format_finite_check(check: FiniteCheck) -> str:
    lines = []
    if check.bad_arguments:
        lines.append(f"check-finite: the arguments of parameter(s) {', '.join(map(str, check.bad_arguments))} "
                     f"hold NaN or Inf")
    origin = check.origin
    if origin is None:
        if check.bad_outputs:
            lines.append(f"check-finite ({check.backend}): output(s) {', '.join(map(str, check.bad_outputs))} hold "
                         f"NaN or Inf, but no instruction made one from finite operands: they come from the "
                         f"arguments or from constants (a NaN constant selected in, say)")
        else:
            lines.append(f"check-finite ({check.backend}): every value is finite ({check.checked} checked)")
        return "\n".join(lines)
    lines.append(f"check-finite ({check.backend}): the first {_kinds(origin.value)} made from finite operands "
                 f"({check.checked} values checked before it):")
    lines.extend(_origin_lines(origin, Locator(check.module, check.source)))
    if check.inside is not None:
        lines.append(f"inside %{origin.key.name}, compiled unfused, the instruction that makes it:")
        lines.extend(_origin_lines(check.inside, Locator(check.inside_module, check.source)))
    if check.bad_outputs:
        lines.append(f"    (output(s) {', '.join(map(str, check.bad_outputs))} hold NaN or Inf)")
    else:
        lines.append("    (the outputs are finite)")
    return "\n".join(lines)


def _origin_lines(origin: Origin, locator: Locator) -> list[str]:
    where = locator.describe(origin.key)
    lines = [f"  {where[0]}"] + [f"    {line}" for line in where[1:]]
    bad = ~np.isfinite(origin.value)
    index = tuple(int(j) for j in np.argwhere(bad)[0]) if origin.value.ndim else ()
    lines.append(f"    value: {int(bad.sum())} of {bad.size} elements not finite; first at {list(index)}: "
                 f"{origin.value[index].item()!r}")
    for name, array in origin.operands:
        lines.append(f"    operand %{name}: {_at(array, index, origin.value.shape)}")
    return lines


def _kinds(value: np.ndarray) -> str:
    found = []
    if np.any(np.isnan(value)):
        found.append("NaN")
    if np.any(np.isinf(value)):
        found.append("Inf")
    return " and ".join(found)


def _at(array: Optional[np.ndarray], index: tuple, shape: tuple) -> str:
    if array is None:
        return "finite"
    if array.shape == shape:
        return f"{array[index].item()!r} at {list(index)}"
    if array.ndim == 0:
        return f"{array.item()!r}"
    return f"finite, {array.dtype}{list(array.shape)} in [{array.min().item()!r}, {array.max().item()!r}]" \
        if array.size and array.dtype.kind in "biuf" else "finite"
