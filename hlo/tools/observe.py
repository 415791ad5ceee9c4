"""Instruction values as they are computed, on either backend, in one form.

`hlo-run --compare` and `--check-finite` watch a run instruction by instruction. Both
backends report a value as a `ValueKey` and an array (a copy, in logical order):

* the interpreter through `Evaluator(observer=...)`: every instruction that computes a
  value, fusions and calls included (their computations are observed too);
* compiled code through a debug compile (`CodegenOptions(debug_values=True)`,
  hlo/codegen/debug_values.py): every instruction with code of its own, a fusion as a
  whole, after the default pipeline.

A key names the instruction, the array leaf of its result, the call instructions it runs
in (a computation called from two places is two sets of values) and the iterations of the
while loops around it, outermost first. Both backends run the same module (when one of them
compiles, the module *as compiled*: after the default pipeline and layout assignment), so a
key means the same value on both. `Locator` turns a key back into the instruction, the
loops and fusions around it, its place in the user's file and its metadata's source line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..codegen.profiling import SourcePositions
from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from ..runtime import values_io
from ..text.parser import parse_module
from ..text.printer import format_module
from .diff import instruction_text

BACKENDS = ("interpreter", "cpu")


@dataclass(frozen=True)
class ValueKey:
    name: str                     # the instruction
    leaf: int                     # array leaf of its result (0 for an array)
    calls: tuple = ()             # names of the call instructions around it, outermost first
    iterations: tuple = ()        # iteration of each while loop around it, outermost first


Observe = Callable[[ValueKey, np.ndarray], None]


# --------------------------------------------------------------------------- the module both sides run

def module_to_run(module: Module, backends: Sequence[str]) -> Module:
    """The module whose instructions are compared: as compiled (default pipeline, layout
    assignment) when a side compiles, else a copy of the module itself."""
    if "cpu" in backends:
        from ..codegen import CodegenOptions   # lazy: llvmlite only when a side compiles
        from ..codegen.lowering import prepare  # lazy: as above
        return prepare(module, CodegenOptions())
    return copy_module(module)


def copy_module(module: Module) -> Module:
    """A copy whose instructions keep their places in the user's text."""
    return copy_module_from(format_module(module), module)


def source_name(module: Module) -> Optional[str]:
    """The name of the file the module was read from."""
    loc = module.entry.root.loc if module.entry is not None else None
    return loc.file.name if loc is not None else None


def several_fused(module: Module, name: str) -> bool:
    """Whether the instruction is a fusion of more than one instruction."""
    inst = next((i for i in module.instructions() if i.name == name), None)
    if inst is None or inst.opcode != Op.FUSION:
        return False
    return sum(i.opcode != Op.PARAMETER for i in inst.attrs["calls"].instructions) > 1


def fused_names(module: Module, fusion_name: str) -> set[str]:
    fusion = next(i for i in module.instructions() if i.name == fusion_name)
    return {i.name for i in fusion.attrs["calls"].instructions}


def unfuse(module: Module, fusion_name: str) -> Module:
    """A copy of module with the fusion replaced by its computation's instructions, which keep
    their names (the fused computation goes): compiled, each has a value of its own."""
    copy = parse_module(format_module(module), module.name)
    fusion = next(i for i in copy.instructions() if i.name == fusion_name)
    callee, caller = fusion.attrs["calls"], fusion.parent
    mapping: dict[int, Instruction] = {}
    for inst in callee.post_order():
        if inst.opcode == Op.PARAMETER:
            mapping[id(inst)] = fusion.operands[inst.attrs["parameter_number"]]
            continue
        clone = inst.clone([mapping[id(op)] for op in inst.operands], inst.name)
        caller.add(clone, before=fusion)
        mapping[id(inst)] = clone
    fusion.replace_all_uses_with(mapping[id(callee.root)])
    caller.remove(fusion)
    copy.remove_unreachable_computations()
    return copy_module_from(format_module(copy), module)


def copy_module_from(text: str, module: Module) -> Module:
    """text parsed, its instructions pointing at module's places in the user's text (by name)."""
    copy = parse_module(text, module.name)
    by_name = {i.name: i for i in module.instructions()}
    for inst in copy.instructions():
        found = by_name.get(inst.name)
        if found is not None:
            inst.loc = found.loc
    return copy


# --------------------------------------------------------------------------- running with an observer

class Stop(Exception):
    """Raised by an observer to end a run (the interpreter stops at once; compiled code
    runs to its end without calling the observer again)."""


def run_observed(backend: str, module: Module, args: list, observe: Optional[Observe],
                 seed: int = 0) -> list[np.ndarray]:
    """Run module (as module_to_run gives it: compiled as it is, without the default pipeline,
    which it went through already) on backend, calling observe(key, array) for every value;
    the output leaves. `Stop` raised by observe ends the observation (the interpreter's
    outputs are then [])."""
    if backend == "cpu":
        return _run_compiled(module, args, observe)
    if backend != "interpreter":
        raise ValueError(f"unknown backend {backend!r}")
    return _run_interpreted(module, args, observe, seed)


def _run_interpreted(module: Module, args: list, observe: Optional[Observe], seed: int) -> list[np.ndarray]:
    from ..interpreter.evaluator import Evaluator   # lazy: as hlo-run loads the interpreter

    def observer(inst: Instruction, value, operands, sites) -> None:
        calls = tuple(s[0].name for s in sites if s[0].opcode == Op.CALL)
        iterations = tuple(s[1] for s in sites if s[0].opcode == Op.WHILE)
        for leaf, array in enumerate(values_io.array_leaves(value)):
            observe(ValueKey(inst.name, leaf, calls, iterations), array)

    evaluator = Evaluator(module, seed=seed, observer=observer if observe is not None else None)
    try:
        result = evaluator.run(args)
    except Stop:
        return []
    return [np.asarray(x) for x in values_io.array_leaves(result)]


def _run_compiled(module: Module, args: list, observe: Optional[Observe]) -> list[np.ndarray]:
    from ..codegen import CodegenOptions, JitExecutable   # lazy: llvmlite only when a side compiles
    executable = JitExecutable(module, CodegenOptions(debug_values=True, run_pipeline=False), threads=1)
    if observe is None:
        return [np.asarray(x) for x in executable.run(*args)]

    def hook(entry, counters, array) -> None:
        observe(ValueKey(entry.name, entry.leaf, entry.calls, counters), array)
    try:
        return [np.asarray(x) for x in executable.run_observed(hook, *args)]
    except Stop:
        return [np.asarray(x) for x in executable.run(*args)]


# --------------------------------------------------------------------------- where a value is

class Locator:
    """Instructions of the module run, by name, with what is around them, described for people."""

    def __init__(self, module: Module, source: Optional[str] = None):
        self.module = module
        self.source = source     # the user's file: places elsewhere (in the compiled copy's text) are not shown
        self.by_name = {i.name: i for i in module.instructions()}
        self.callers: dict[int, Instruction] = {}
        for comp in module.computations:
            for inst in comp.instructions:
                for callee in inst.called_computations():
                    self.callers.setdefault(id(callee), inst)
        self.positions = SourcePositions(module)

    def instruction(self, key: ValueKey) -> Optional[Instruction]:
        return self.by_name.get(key.name)

    def enclosing(self, inst: Instruction) -> list[Instruction]:
        """The instructions (fusion, call, while, conditional ...) inst runs in, innermost first."""
        chain = []
        comp: Optional[Computation] = inst.parent
        while comp is not None and comp is not self.module.entry:
            caller = self.callers.get(id(comp))
            if caller is None or caller in chain:
                break
            chain.append(caller)
            comp = caller.parent
        return chain

    def describe(self, key: ValueKey) -> list[str]:
        """Lines saying which instruction (and leaf), where it runs, where it is written and
        which source line it came from."""
        inst = self.instruction(key)
        if inst is None:
            return [f"%{key.name}"]
        text = _one_line(inst)
        leaf = f" (tuple leaf {key.leaf})" if inst.shape is not None and inst.shape.is_tuple else ""
        lines = [f"{text}{leaf}"]
        place = []
        if inst.loc is not None and (self.source is None or inst.loc.file.name == self.source):
            place.append(f"at {inst.loc}")
        comp_name = inst.parent.name if inst.parent is not None else "?"
        place.append(f"in %{comp_name}")
        around = self._around(inst, key)
        if around:
            place.append(around)
        lines.append(", ".join(place))
        source = self.positions.of(inst)
        op_name = (inst.metadata or {}).get("op_name") if inst.metadata is not None else None
        if source or op_name:
            lines.append("source: " + "  ".join(x for x in (source, f"op_name={op_name!r}" if op_name else "") if x))
        return lines

    def _around(self, inst: Instruction, key: ValueKey) -> str:
        chain = list(reversed(self.enclosing(inst)))   # outermost first, as the key's iterations
        iterations = list(key.iterations)
        loops = [c for c in chain if c.opcode == Op.WHILE]
        if len(loops) != len(iterations):   # (the pipeline may have moved it: show the counters only)
            return " ".join(f"iteration {i}" for i in iterations)
        numbered = dict(zip((id(c) for c in loops), iterations))
        parts = []
        for caller in reversed(chain):
            if id(caller) in numbered:
                parts.append(f"iteration {numbered[id(caller)]} of %{caller.name}")
            else:
                parts.append(f"{'fused in' if caller.opcode == Op.FUSION else 'called by'} %{caller.name}")
        return ", ".join(parts)


def _one_line(inst: Instruction) -> str:
    """The instruction as printed, without its metadata, at most two hundred characters."""
    text = instruction_text(inst).strip()
    return text if len(text) <= 200 else text[:197] + "..."
