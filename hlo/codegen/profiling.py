"""`--profile` for compiled code: time and count every kernel, with its instruction and source line.

A profiling compile (CodegenOptions(profile=True); normal compiles are untouched) wraps
the code of every instruction that emits any (not parameters, constants, tuples,
get-tuple-element or bitcast views) in two clock reads (clock_gettime, monotonic) and
adds the difference and one to that instruction's slot of two global i64 arrays:

    <entry>_profile_ns[N], <entry>_profile_count[N]

Instructions of a while body, a conditional branch or a called computation are timed
inside their caller's time: an entry's own time is its time minus its children's, as the
interpreter's profile counts own time. `ProfileEntry`s (instruction and computation
names, opcode, the fused root's opcode, source position from the metadata) travel with
the lowered module (and its cache file); JitExecutable reads the counters after a run and
`format_profile` prints the table hlo-run --profile shows.
"""
from __future__ import annotations

import ctypes
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Optional

from llvmlite import ir

from ..ir import Instruction, Module
from ..opcodes import Op, Trait
from .buffers import resolve
from .function_context import const64
from .types import I64, PTR

CLOCK_MONOTONIC = 6 if sys.platform == "darwin" else 1
TIMESPEC = ir.LiteralStructType([I64, I64])


@dataclass
class ProfileEntry:
    name: str                   # instruction name
    computation: str            # where it is
    opcode: str
    kernel: str                 # what the code is: the opcode, or "fusion(<root opcode>)"
    source: str                 # "file:line" (and function) from the metadata, or ""
    parent: Optional[int]       # the entry whose code contains this one's (while, call, ...)


# --------------------------------------------------------------------------- source positions

class SourcePositions:
    """file:line of an instruction from its metadata: source_file/source_line, or the
    module's stack frame tables (FileNames, FunctionNames, FileLocations, StackFrames)."""

    def __init__(self, module: Module):
        tables = dict(module.config.stack_frame_index or [])
        self.files = {k: _text(v) for k, v in tables.get("FileNames", [])}
        self.functions = {k: _text(v) for k, v in tables.get("FunctionNames", [])}
        self.locations = {k: _keyed(v) for k, v in tables.get("FileLocations", [])}
        self.frames = {k: _keyed(v) for k, v in tables.get("StackFrames", [])}

    def of(self, inst: Instruction) -> str:
        for candidate in _with_fused(inst):
            found = self._direct(candidate)
            if found:
                return found
        return ""

    def _direct(self, inst: Instruction) -> str:
        md = inst.metadata
        if md is None:
            return ""
        if md.get("source_file"):
            line = md.get("source_line")
            return f"{md.get('source_file')}:{line}" if line else md.get("source_file")
        frame = self.frames.get(md.get("stack_frame_id"))
        location = self.locations.get(frame.get("file_location_id")) if frame else None
        if not location:
            return ""
        where = f"{self.files.get(location.get('file_name_id'), '?')}:{location.get('line', '?')}"
        function = self.functions.get(location.get("function_name_id"))
        return f"{where} ({function})" if function else where


def _text(value) -> str:
    return getattr(value, "text", str(value))


def _keyed(value) -> dict:
    return {item.key: item.value for item in getattr(value, "items", ()) if hasattr(item, "key")}


def _with_fused(inst: Instruction):
    """inst, then (for a fusion) its fused instructions from the root down."""
    yield inst
    if inst.opcode == Op.FUSION:
        for fused in reversed(inst.attrs["calls"].post_order()):
            yield from _with_fused(fused)


def _kernel(inst: Instruction) -> str:
    """The opcode, or for a fusion what it is built around: its dots, convolutions and
    reductions, else the root's value-computing ops (looking through data movement)."""
    if inst.opcode != Op.FUSION:
        return str(inst.opcode)
    body = inst.attrs["calls"].post_order()
    heroes = [i for i in body if i.info.has(Trait.OUTPUT_FUSION_HERO) or i.info.has(Trait.REDUCTION_FUSION_HERO)]
    if not heroes:
        heroes = [_computing(r) for r in _roots(inst.attrs["calls"].root)]
    return f"fusion({','.join(dict.fromkeys(str(i.opcode) for i in heroes))})"


def _roots(root: Instruction) -> list[Instruction]:
    return list(root.operands) if root.opcode == Op.TUPLE else [root]


def _computing(inst: Instruction) -> Instruction:
    """The first instruction below inst that is not pure data movement of one operand."""
    while inst.info.has(Trait.SCALAR_IDENTITY) and inst.operands and inst.operands[0].opcode != Op.PARAMETER:
        inst = inst.operands[0]
    return inst


# --------------------------------------------------------------------------- instrumentation

def has_code(inst: Instruction, assignment) -> bool:
    """Whether inst emits code: not parameters, constants, tuples, get-tuple-element, bitcast views."""
    if inst.info.has(Trait.NO_CODE):
        return False
    if inst.opcode == Op.BITCAST:
        value = assignment.values.get(id(inst))
        return value is None or resolve(value) is value
    return True


class Profiler:
    """Adds the timing code around each instruction's code (driver.DriverLowering.emit)."""

    def __init__(self, lowering, module: Module):
        self.low = lowering
        self.positions = SourcePositions(module)
        self.entries: list[ProfileEntry] = []
        self.open: list[int] = []
        name = lowering.fn.name
        self.ns = ir.GlobalVariable(lowering.llmod, ir.ArrayType(I64, 0), name=f"{name}_profile_ns")
        self.count = ir.GlobalVariable(lowering.llmod, ir.ArrayType(I64, 0), name=f"{name}_profile_count")

    def timed(self, inst: Instruction) -> bool:
        return has_code(inst, self.low.a)

    @contextmanager
    def around(self, inst: Instruction):
        if not self.timed(inst):
            yield
            return
        slot = len(self.entries)
        self.entries.append(ProfileEntry(inst.name, inst.parent.name if inst.parent else "", str(inst.opcode),
                                         _kernel(inst), self.positions.of(inst),
                                         self.open[-1] if self.open else None))
        start = self._now()
        self.open.append(slot)
        try:
            yield
        finally:
            self.open.pop()
        self._add(self.ns, slot, self.low.b.sub(self._now(), start))
        self._add(self.count, slot, const64(1))

    def finish(self) -> None:
        """Give the counter arrays their final size (one slot per timed instruction)."""
        size = max(len(self.entries), 1)
        for g in (self.ns, self.count):
            g.value_type = ir.ArrayType(I64, size)
            g.initializer = ir.Constant(g.value_type, None)
            g.align = 64

    def _now(self):
        b, ctx = self.low.b, self.low.ctx
        fn = ctx.module.globals.get("clock_gettime")
        if fn is None:
            fn = ir.Function(ctx.module, ir.FunctionType(ir.IntType(32), [ir.IntType(32), ir.PointerType()]),
                             name="clock_gettime")
        spec = ctx.alloca(TIMESPEC, "timespec")
        b.call(fn, [ir.Constant(ir.IntType(32), CLOCK_MONOTONIC), spec])
        seconds = b.load(b.gep(spec, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)],
                               source_etype=TIMESPEC), typ=I64)
        nanos = b.load(b.gep(spec, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)],
                             source_etype=TIMESPEC), typ=I64)
        return b.add(b.mul(seconds, const64(1_000_000_000)), nanos)

    def _add(self, array, slot: int, amount) -> None:
        b = self.low.b
        # an untyped pointer to the global (llvmlite keeps globals' pointers typed)
        base = b.inttoptr(b.ptrtoint(array, I64), PTR)
        pointer = b.gep(base, [const64(slot)], source_etype=I64)
        b.store(b.add(b.load(pointer, typ=I64), amount), pointer)


def profiler_for(lowering, module: Module, enabled: bool):
    """A Profiler when enabled, else an object whose `around` adds nothing."""
    return Profiler(lowering, module) if enabled else _NoProfiler()


class _NoProfiler:
    entries: list = []

    def around(self, inst):
        return nullcontext()

    def finish(self) -> None:
        pass


# --------------------------------------------------------------------------- the report

def profile_counters(engine, entry_name: str, size: int):
    """(nanoseconds, counts) as ctypes arrays over the compiled module's counters, or None
    when it was not compiled for profiling."""
    if not size:
        return None
    ns = engine.get_global_value_address(f"{entry_name}_profile_ns")
    count = engine.get_global_value_address(f"{entry_name}_profile_count")
    if not ns or not count:
        return None
    array = ctypes.c_int64 * size
    return array.from_address(ns), array.from_address(count)


@dataclass
class ProfileRow:
    entry: ProfileEntry
    count: int
    seconds: float          # total, children included
    own: float              # without the instructions inside it


def profile_rows(entries: list[ProfileEntry], nanoseconds: list[int], counts: list[int]) -> list[ProfileRow]:
    rows = [ProfileRow(e, c, ns * 1e-9, ns * 1e-9) for e, ns, c in zip(entries, nanoseconds, counts)]
    for row in rows:
        if row.entry.parent is not None:
            rows[row.entry.parent].own -= row.seconds
    for row in rows:
        row.own = max(row.own, 0.0)
    return rows


def format_profile(rows: list[ProfileRow], top: int, wall: Optional[float] = None) -> str:
    """The instructions with the most own time, as hlo-run --profile prints them."""
    ran = [r for r in rows if r.count]
    total = sum(r.own for r in ran) or 1e-12
    header = (f"profile: {len(ran)} compiled kernels ran, {total * 1e3:.3f} ms in total "
              f"(own time, excluding the instructions inside loops, branches and calls)")
    if wall is not None:
        header += f"; {wall * 1e3:.3f} ms per run measured around the call"
    lines = [header, f"{'ms':>10} {'%':>6} {'count':>7}  {'kernel':<24} instruction / source"]
    for r in sorted(ran, key=lambda r: -r.own)[:top]:
        e = r.entry
        where = f"%{e.name} in %{e.computation}" + (f"  {e.source}" if e.source else "")
        lines.append(f"{r.own * 1e3:10.3f} {100 * r.own / total:6.1f} {r.count:7d}  {e.kernel:<24} {where}")
    return "\n".join(lines)
