"""The runtime library: the blocked multiply of gemm.py and the convolution table builder of
conv_table.py, compiled once per target, not per module.

Every kernel with a dot or a convolution calls the same functions (the providers' `emit_runtime`);
they depend on the target and on their own sources, never on the module. So they are built
once per build *tag* (a hash of: the target's triple, cpu and features, the optimisation level,
LLVM's and llvmlite's versions, and the sources the functions are emitted from), kept on disk in
the runtime folder ($HLO_RUNTIME_CACHE, default <cache>/runtime, beside the parts' cache), and

- JIT: loaded once per process into an MCJIT engine of their own, whose functions are made
  visible by name to every module's engine (`load_for_jit`);
- AOT: their bitcode linked into the module's one object (`runtime_code(..., BITCODE)`).

A module's compile therefore never includes them, as XLA:CPU's compiles never include the
runtime (Eigen's kernels) that comes compiled in jaxlib. The first compile on a machine builds
them (about 0.4 s) and reports it as the "runtime library" phase. The functions' names carry
the tag, so builds for two targets (say, the host and `-avx512f`) live side by side in one
process.
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading
from pathlib import Path
from typing import Optional

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from ..cache import cache_dir
from . import conv_table, float_mode, function_context, gemm, gemm_ukernel, target, types
from .compile_report import CompileStats
from .gemm import runtime_symbol
from .object_cache import write_atomically
from .options import Part
from .target import OutputKind, compile_part, create_target_machine, register_file, resolved_target

RUNTIME_OPT_LEVEL = 1   # O1: the inner loops are explicit vector code; O2 took 1.5x and O3 2.3x the
# compile time for the same speed (f32 squares of 128 to 1024, and 16 x 1024 x 1024). Only the loops
# gemm.py marks are vectorised (see gemm._Range).
VERSION = "runtime-1"
_PROVIDERS = (gemm, conv_table)   # the modules whose emit_runtime defines the library's EXPORTED_FUNCTIONS
_SOURCES = (*_PROVIDERS, gemm_ukernel, float_mode, function_context, types, target)   # what the code is emitted by
EXPORTED_FUNCTIONS = [name for provider in _PROVIDERS for name in provider.EXPORTED_FUNCTIONS]


def runtime_dir() -> Path:
    return Path(os.environ.get("HLO_RUNTIME_CACHE") or cache_dir() / "runtime")


def runtime_level(options) -> int:
    return min(options.opt_level, RUNTIME_OPT_LEVEL)


def runtime_tag(options) -> str:
    """The build the options' code calls: 16 hex digits naming its target, level and sources."""
    return _tag(*resolved_target(options), runtime_level(options))


@functools.lru_cache(maxsize=None)
def _tag(triple: str, cpu: str, features: str, level: int) -> str:
    h = hashlib.sha256(f"{VERSION};{llvm.llvm_version_info!r};{llvmlite.__version__}".encode())
    for path in [Path(source.__file__) for source in _SOURCES] + [Path(__file__)]:
        h.update(path.read_bytes())
    for piece in (triple, cpu, features, str(level)):
        h.update(b"\0" + piece.encode())
    return h.hexdigest()[:16]


def runtime_ir(options) -> str:
    """The runtime library's LLVM IR for the options' target."""
    tag = runtime_tag(options)
    module = ir.Module(name=f"hlo.rt.{tag}")
    for provider in _PROVIDERS:
        provider.emit_runtime(module, register_file(options), tag)
    return str(module)


_BUILT: dict[str, bytes] = {}     # (tag, kind, jit) -> the compiled library, in this process
_LOADED: dict[str, llvm.ExecutionEngine] = {}   # tag -> the engine holding it (JIT), kept for good
_LOCK = threading.Lock()


def runtime_code(options, kind: str = OutputKind.OBJECT, jit: bool = True,
                 stats: Optional[CompileStats] = None) -> bytes:
    """The compiled library (an object, or optimised bitcode to link): from this process, from the
    runtime folder, or built now (and stored there)."""
    tag = runtime_tag(options)
    key = f"{tag}-{kind}{'-jit' if jit else ''}"
    with _LOCK:
        found = _BUILT.get(key)
        if found is None:
            path = runtime_dir() / key
            found = _read(path)
            if found is None:
                with (stats or CompileStats()).phase("runtime library"):
                    part = Part(f"hlo.rt.{tag}", runtime_ir(options), runtime_level(options), vectorize=False,
                                strength_reduction=True)
                    found = compile_part(part, options, kind, jit).data
                write_atomically(path, _digest(found) + found)
            _BUILT[key] = found
    return found


def load_for_jit(options, stats: Optional[CompileStats] = None) -> None:
    """Make the library's functions callable by every engine of this process (once per build)."""
    tag = runtime_tag(options)
    if tag in _LOADED:
        return
    data = runtime_code(options, OutputKind.OBJECT, True, stats)
    with _LOCK:
        if tag in _LOADED:
            return
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), create_target_machine(options, jit=True))
        engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        for function in EXPORTED_FUNCTIONS:
            name = runtime_symbol(tag, function)
            llvm.add_symbol(name, engine.get_function_address(name))
        _LOADED[tag] = engine


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _read(path: Path) -> Optional[bytes]:
    """The stored library, or None when it is missing or damaged (then it is built again)."""
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    data = stored[32:]
    return data if len(stored) > 32 and stored[:32] == _digest(data) else None
