"""Subnormal floats flushed to zero while compiled code runs, as XLA:CPU runs its code.

XLA:CPU executes with flush-to-zero and denormals-are-zero set (a result below the smallest
normal float is 0; a subnormal input counts as 0), so its answers have no subnormals: exp(-100)
is 0 in f32, not 3.8e-44. Compiled code here does the same by default (CodegenOptions
flush_denormals), which also keeps it fast: without it, every operation producing or reading a
subnormal takes a microcode assist of about a hundred cycles (a causal softmax, whose masked
entries underflow in exp, ran 10x slower). The entry function (and each gemm worker task) sets
the mode on entry and restores the caller's on return: x86 MXCSR bits FTZ and DAZ, aarch64 FPCR's
FZ bit; other targets keep IEEE subnormals.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()
PTR = ir.PointerType()
MXCSR_FTZ_DAZ = 0x8040      # flush to zero (bit 15), denormals are zero (bit 6)
FPCR_FZ = 1 << 24


def _declare(module: ir.Module, name: str, fty: ir.FunctionType) -> ir.Function:
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, fty, name=name)


def enter(b: ir.IRBuilder, alloca_builder: ir.IRBuilder, arch: str) -> Optional[tuple]:
    """Set the flush mode at the builder; returns what `leave` needs to restore the caller's."""
    module = b.module
    if arch == "x86":
        stmxcsr = _declare(module, "llvm.x86.sse.stmxcsr", ir.FunctionType(VOID, [PTR]))
        ldmxcsr = _declare(module, "llvm.x86.sse.ldmxcsr", ir.FunctionType(VOID, [PTR]))
        saved, mode = alloca_builder.alloca(I32, name="mxcsr.saved"), alloca_builder.alloca(I32, name="mxcsr")
        b.call(stmxcsr, [saved])
        b.store(b.or_(b.load(saved), ir.Constant(I32, MXCSR_FTZ_DAZ)), mode)
        b.call(ldmxcsr, [mode])
        return arch, saved
    if arch == "aarch64":
        get = _declare(module, "llvm.aarch64.get.fpcr", ir.FunctionType(I64, []))
        put = _declare(module, "llvm.aarch64.set.fpcr", ir.FunctionType(VOID, [I64]))
        saved = b.call(get, [])
        b.call(put, [b.or_(saved, ir.Constant(I64, FPCR_FZ))])
        return arch, saved
    return None


def leave(b: ir.IRBuilder, state: Optional[tuple]) -> None:
    """Restore the caller's mode (before each return of the function that entered)."""
    if state is None:
        return
    arch, saved = state
    if arch == "x86":
        b.call(b.module.globals["llvm.x86.sse.ldmxcsr"], [saved])
    else:
        b.call(b.module.globals["llvm.aarch64.set.fpcr"], [saved])
