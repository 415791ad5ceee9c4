"""The compiled CPU backend: HLO module -> LLVM IR -> native code (llvmlite).

    lower_module(module, options, name) -> LoweredModule   (LLVM IR: the entry function, a
        driver, and the kernels it calls, each a module of its own)
    create_target_machine(options); compile_object(lowered, options) -> bytes (one ELF object)
    JitExecutable(module, options).run(*arrays, donate=False) -> list of numpy arrays

Each kernel is compiled on its own at the optimisation level its work deserves, in parallel
processes when there are many, and cached by its content (build.py).

Entry ABI: void NAME(void** params, void** results, void* temp). params[i] points to
entry parameter leaf i's dense buffer (tuple parameters flattened depth-first) in its
layout's physical order; results[j] to result leaf j's buffer; temp to a 64-byte
aligned scratch buffer of temp_bytes. The code needs only libc/libm.

Input/output aliasing: for an output leaf j aliased with parameter leaf i by the module's
input_output_alias (same shape and layout), results[j] may be the same pointer as params[i];
the code is correct either way. Such a result is computed straight into that buffer when
the parameter is not read once the result starts being written (x = x + 1 updates);
otherwise it is computed in temp memory and copied at the end.

EMITTERS (hlo.registry.OpRegistry) holds the code generator of every opcode the backend
compiles, and the reason for each one it does not (emitters.py).
"""
from __future__ import annotations

from .emitters import EMITTERS
from .jit import JitExecutable
from .lowering import lower_module
from .options import CodegenOptions, LoweredModule
from .build import compile_assembly, compile_object
from .compile_report import CompileStats, ProgressBar
from .target import create_target_machine

__all__ = ["CodegenOptions", "LoweredModule", "lower_module", "create_target_machine", "compile_object",
           "compile_assembly", "JitExecutable", "EMITTERS", "CompileStats", "ProgressBar"]
