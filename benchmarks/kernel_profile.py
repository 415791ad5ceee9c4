"""Where a compiled program spends its time: cycles per top-level instruction, from an
instrumented build (a cycle-counter read before and after each instruction's code).

    python benchmarks/kernel_profile.py FILE.hlo [--inputs FILE.inputs.npz] [--runs 5] [--top 25]
        [--features=-avx512f,...]

The instrumentation wraps `EntryLowering.emit` of this process only (normal compiles are never
instrumented); the object cache is pointed at a temporary folder. Instructions inside while
bodies, calls and conditionals are counted on their own lines; a while/call/conditional line is
its whole body (inclusive), marked with '*'. Cycles (medians over the runs, per instruction) are the time-stamp counter's (wall clock
of this core, so a loaded machine inflates them evenly); the share column is of the whole run.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="hlo-profile-")

from llvmlite import ir  # noqa: E402

from hlo.analysis.loading import load_module  # noqa: E402
from hlo.codegen import CodegenOptions, kernels, lowering  # noqa: E402
from hlo.codegen.jit import JitExecutable  # noqa: E402
from hlo.opcodes import Op  # noqa: E402

I64 = ir.IntType(64)
CONTROL = {Op.WHILE, Op.CALL, Op.CONDITIONAL}
SILENT = {Op.PARAMETER, Op.CONSTANT, Op.TUPLE, Op.GET_TUPLE_ELEMENT}


class ProfiledLowering(kernels.EntryLowering):
    """EntryLowering with a cycle counter around every instruction that emits code."""

    instrumented: list = []   # the instructions of the last lowering, by counter slot

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._slots: list = []
        self._counters = None

    def emit(self, inst):
        if inst.opcode in SILENT:
            return super().emit(inst)
        slot = len(self._slots)
        self._slots.append(inst)
        clock = self.llmod.declare_intrinsic("llvm.readcyclecounter", (), ir.FunctionType(I64, []))
        start = self.b.call(clock, [])
        super().emit(inst)
        elapsed = self.b.sub(self.b.call(clock, []), start)
        cell = self.b.gep(self._counter_array(), [ir.Constant(I64, 0), ir.Constant(I64, slot)])
        self.b.store(self.b.add(self.b.load(cell), elapsed), cell)

    def _counter_array(self):
        if self._counters is None:
            self._counters = ir.GlobalVariable(self.llmod, ir.ArrayType(I64, 1 << 16), name="hlo_profile_cycles")
            self._counters.initializer = ir.Constant(ir.ArrayType(I64, 1 << 16), None)
        return self._counters

    def lower(self):
        out = super().lower()
        ProfiledLowering.instrumented = list(self._slots)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hlo", type=Path)
    parser.add_argument("--inputs", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--features")
    args = parser.parse_args()
    lowering.EntryLowering = ProfiledLowering
    module = load_module(args.hlo.read_text(), args.hlo.stem)
    options = CodegenOptions(features=args.features) if args.features else CodegenOptions()
    exe = JitExecutable(module, options, threads=1)
    inputs_path = args.inputs or args.hlo.with_name(args.hlo.name.replace(".hlo", ".inputs.npz"))
    with np.load(inputs_path) as z:
        inputs = [z[f"arg{i}"] for i in range(len(z.files))]
    exe.run(*inputs, reuse_results=True)
    address = exe._engine.get_global_value_address("hlo_profile_cycles")
    slots = ProfiledLowering.instrumented
    counters = np.ctypeslib.as_array((ctypes.c_int64 * len(slots)).from_address(address))
    samples, cpu = [], []
    for _ in range(args.runs):
        counters[:] = 0
        start = time.process_time()
        exe.run(*inputs, reuse_results=True)
        cpu.append(time.process_time() - start)
        samples.append(counters.astype(np.float64))
    cycles = np.median(np.array(samples), axis=0)   # per instruction: preemptions hit single runs
    seconds = float(np.median(cpu))
    exclusive = sum(c for c, inst in zip(cycles, slots) if inst.opcode not in CONTROL)
    print(f"# {args.hlo.name}: {seconds * 1e6:.1f} us CPU per run (median), {exclusive / 1e6:.2f} M cycles in "
          f"{len(slots)} instrumented instructions (features: {args.features or 'host'})")
    order = np.argsort(-cycles)
    for k in order[:args.top]:
        inst = slots[k]
        mark = "*" if inst.opcode in CONTROL else " "
        print(f"{cycles[k] / 1e3:12.1f} kcyc {100 * cycles[k] / max(exclusive, 1):5.1f}% {mark} "
              f"{inst.name:32s} {_describe(inst)}")
    return 0


def _describe(inst) -> str:
    text = f"{inst.opcode} {inst.shape}"
    if inst.opcode == Op.FUSION:
        body = inst.attrs["calls"]
        ops = {}
        for i in body.instructions:
            if i.opcode not in SILENT:
                ops[str(i.opcode)] = ops.get(str(i.opcode), 0) + 1
        text += " [" + " ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(ops.items())) + f"] root={body.root.opcode}"
    operands = ", ".join(str(o.shape) for o in inst.operands[:3])
    return f"{text} <- ({operands}{', ...' if len(inst.operands) > 3 else ''})"[:200]


if __name__ == "__main__":
    sys.exit(main())
