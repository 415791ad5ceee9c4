"""The compiled CPU backend: HLO module -> LLVM IR -> native code (llvmlite).

    lower_module(module, options, name) -> LoweredModule   (LLVM IR of the entry function)
    create_target_machine(options); compile_object(lowered, options) -> bytes (ELF object)
    JitExecutable(module, options).run(*arrays, donate=False) -> list of numpy arrays

Entry ABI: void NAME(void** params, void** results, void* temp). params[i] points to
entry parameter leaf i's dense buffer (tuple parameters flattened depth-first) in its
layout's physical order; results[j] to result leaf j's buffer; temp to a 64-byte
aligned scratch buffer of temp_bytes. The code needs only libc/libm.

Input/output aliasing: for an output leaf j aliased with parameter leaf i by the module's
input_output_alias (same shape and layout), results[j] may be the same pointer as params[i];
the code is correct either way. Such a result is computed straight into that buffer when
the parameter is not read once the result starts being written (x = x + 1 updates);
otherwise it is computed in temp memory and copied at the end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir import Module
from ..shapes import Shape
from .target import create_target_machine

__all__ = ["CodegenOptions", "LoweredModule", "lower_module", "create_target_machine", "compile_object", "compile_assembly",
           "JitExecutable"]


@dataclass
class CodegenOptions:
    opt_level: int = 3
    triple: Optional[str] = None
    cpu: Optional[str] = None
    features: Optional[str] = None
    run_pipeline: bool = True  # run the 'default' pipeline first so fusions decide the loop nests

    def key(self) -> str:
        return f"O{self.opt_level};{self.triple};{self.cpu};{self.features};{self.run_pipeline}"


@dataclass
class LoweredModule:
    llvm_ir: str
    entry_name: str
    params: list[Shape] = field(default_factory=list)
    results: list[Shape] = field(default_factory=list)
    temp_bytes: int = 0


def lower_module(module: Module, options: CodegenOptions = CodegenOptions(), name: str = "hlo_entry") -> LoweredModule:
    """Lower a module (not modified: the pipeline runs on a copy) to LLVM IR."""
    from .lowering import lower
    return lower(module, options, name)


def compile_object(lowered: LoweredModule, options: CodegenOptions = CodegenOptions()) -> bytes:
    """An object file for the options' target (host by default)."""
    from .target import parse_and_optimize
    ref, tm = parse_and_optimize(lowered.llvm_ir, options)
    return tm.emit_object(ref)


def compile_assembly(lowered: LoweredModule, options: CodegenOptions = CodegenOptions()) -> str:
    """The optimised code as target assembly text."""
    from .target import parse_and_optimize
    ref, tm = parse_and_optimize(lowered.llvm_ir, options)
    return tm.emit_assembly(ref)


def __getattr__(name: str):
    if name == "JitExecutable":
        from .jit import JitExecutable
        return JitExecutable
    raise AttributeError(name)
