"""Debug compiles: compiled code that hands every instruction's value to the caller.

A debug compile (CodegenOptions(debug_values=True); normal compiles are untouched) calls

    void hook(i64 id, const i64* loop_counters, i64 depth, const void* buffer)

after the code of every instruction that computes a value (not parameters, constants,
tuples, get-tuple-element, bitcast views, nor while/conditional/call, whose values are
their computations' values), once per array leaf of its result. `hook` is the global
function pointer `<entry>_debug_hook` (NULL: nothing is called). `id` indexes
`LoweredModule.debug_values`, a table of `DebugValue`s (instruction, leaf, shape with
layout, the calls it is emitted in); `loop_counters[0:depth]` are the iteration numbers of
the enclosing while loops, outermost first (an i64 per loop, zeroed on entry, incremented
on the back edge: a condition's values carry the number of body runs so far). The buffer
is in the shape's layout. `JitExecutable.run_observed` binds a Python callback to the hook.
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Optional

import numpy as np
from llvmlite import ir

from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait
from ..shapes import Shape
from .buffers import leaves_of
from .function_context import const64
from .gemm import IndirectCallee
from .profiling import has_code
from .types import I64, PTR

VOID = ir.VoidType()
HOOK_TYPE = ir.FunctionType(VOID, [I64, PTR, I64, PTR])


@dataclass
class DebugValue:
    name: str                  # the instruction (of the module as compiled: after the pipeline)
    leaf: int                  # which array leaf of its result (0 for an array)
    shape: Shape               # the leaf's shape, with the layout of its buffer
    calls: tuple               # names of the call instructions it is emitted in, outermost first


def hook_name(entry_name: str) -> str:
    return f"{entry_name}_debug_hook"


class DebugValues:
    """Adds the hook calls after each instruction's code (driver.DriverLowering.emit) and the
    loop counters of while loops (kernels.emit_while through the Lowering's loop methods)."""

    def __init__(self, lowering, module: Module):
        self.low = lowering
        self.table: list[DebugValue] = []
        self.calls: list[str] = []
        self.hook = ir.GlobalVariable(lowering.llmod, PTR, name=hook_name(lowering.fn.name))
        self.hook.initializer = ir.Constant(PTR, None)
        self.hook.align = 8
        depth = max(_loop_depth(module.entry, {}), 1)
        ab = lowering.ctx.alloca_builder
        counters = ab.alloca(I64, size=depth, name="loop_counters")
        self.counters = ab.inttoptr(ab.ptrtoint(counters, I64), PTR)   # untyped (llvmlite keeps allocas typed)

    def observed(self, inst: Instruction) -> bool:
        return not inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE) and has_code(inst, self.low.a)

    @contextmanager
    def around(self, inst: Instruction):
        if inst.opcode == Op.CALL:
            self.calls.append(inst.name)
            try:
                yield
            finally:
                self.calls.pop()
            return
        yield
        if self.observed(inst):
            self._report(inst)

    def _report(self, inst: Instruction) -> None:
        value = self.low.a.values.get(id(inst))
        if value is None:
            return
        arrays = [buf for buf in leaves_of(value) if buf.shape.is_array]
        for leaf, buf in enumerate(arrays):
            number = len(self.table)
            self.table.append(DebugValue(inst.name, leaf, buf.shape, tuple(self.calls)))
            self._call(number, self.low.pointer(buf))

    def _call(self, number: int, buffer) -> None:
        b = self.low.b
        hook = b.load(self.hook, typ=PTR)
        with b.if_then(b.icmp_unsigned("!=", hook, ir.Constant(PTR, None)), likely=False):
            b.call(IndirectCallee(hook, HOOK_TYPE), [const64(number), self.counters, const64(self.low.loop_depth),
                                                     buffer])

    # -- loop counters (the while loop being emitted is loop number loop_depth - 1)
    def _counter(self):
        b = self.low.b
        return b.gep(self.counters, [const64(self.low.loop_depth - 1)], source_etype=I64)

    def loop_entered(self) -> None:
        self.low.b.store(const64(0), self._counter())

    def loop_iterated(self) -> None:
        b = self.low.b
        counter = self._counter()
        b.store(b.add(b.load(counter, typ=I64), const64(1)), counter)


class _NoDebugValues:
    table: list = []

    def around(self, inst):
        return nullcontext()

    def loop_entered(self) -> None:
        pass

    def loop_iterated(self) -> None:
        pass


def debug_values_for(lowering, module: Module, enabled: bool):
    """DebugValues when enabled, else an object that adds nothing."""
    return DebugValues(lowering, module) if enabled else _NoDebugValues()


def _loop_depth(comp: Computation, memo: dict) -> int:
    """How deeply while loops nest in comp and what it calls as code."""
    found = memo.get(id(comp))
    if found is not None:
        return found
    memo[id(comp)] = 0
    depth = 0
    for inst in comp.instructions:
        if not inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE):
            continue
        inner = max((_loop_depth(c, memo) for c in inst.called_computations()), default=0)
        depth = max(depth, inner + (inst.opcode == Op.WHILE))
    memo[id(comp)] = depth
    return depth


# --------------------------------------------------------------------------- the hook in the JIT

HOOK_CTYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64, ctypes.c_void_p)


class BoundHook:
    """The Python callback behind `<entry>_debug_hook` for one run: observe(entry, loop_counters,
    array) with a copy of each value in logical order (to_array(bytes, shape) makes it).

    An exception in a ctypes callback cannot unwind the compiled code: the first one is kept,
    later values are ignored, and `raise_pending` raises it after the run."""

    def __init__(self, table: list[DebugValue], to_array, observe):
        self.table, self.to_array, self.observe = table, to_array, observe
        self.error: Optional[BaseException] = None
        self.callback = HOOK_CTYPE(self._called)

    def _called(self, number, counters, depth, buffer) -> None:
        if self.error is not None:
            return
        try:
            entry = self.table[number]
            size = entry.shape.element_count() * np.dtype(entry.shape.element_type.dtype).itemsize
            data = ctypes.string_at(buffer, size) if size else b""
            self.observe(entry, tuple(counters[k] for k in range(depth)), self.to_array(data, entry.shape))
        except BaseException as exc:  # raised again by raise_pending, after the compiled code returned
            self.error = exc

    @property
    def address(self) -> int:
        return ctypes.cast(self.callback, ctypes.c_void_p).value

    def raise_pending(self) -> None:
        if self.error is not None:
            raise self.error
