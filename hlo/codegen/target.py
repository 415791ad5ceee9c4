"""Target machines, the LLVM optimisation pipeline, and compiling one part to bytes.

The host target uses llvm.get_host_cpu_name()/get_host_cpu_features(); the feature
string gets `-prefer-256-bit` so that LLVM may use full 512-bit vectors where the
CPU has them (otherwise it keeps 256-bit vectors). Optimisation runs the new pass
manager at the requested speed level with loop and SLP vectorisation switched on
(llvmlite's defaults are speed level 2 with SLP off), or off for scalar parts. llvm.initialize() must not
be called with llvmlite 0.50: it raises.

A module is compiled in parts (the driver, each kernel): `compile_part` parses one part,
optimises it at the part's own level and emits an object or optimised bitcode; the
compile pool (compile_pool.py) runs it in worker processes.
"""
from __future__ import annotations

import functools
import os
import re
import time
from dataclasses import dataclass
from typing import Optional

import llvmlite.binding as llvm


@functools.lru_cache(maxsize=None)
def _initialise() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


_STRENGTH_REDUCTION = [True]   # LLVM's default, until set_strength_reduction() changes it


def set_strength_reduction(enabled: bool) -> None:
    """Whether machine code emitted from now on runs LLVM's loop strength reduction. The switch is
    LLVM's command-line option, global to the process, so every emit sets it for itself."""
    if _STRENGTH_REDUCTION[0] != enabled:
        llvm.set_option("", f"-disable-lsr={'false' if enabled else 'true'}")
        _STRENGTH_REDUCTION[0] = enabled


def host_triple() -> str:
    return llvm.get_process_triple()


def host_cpu() -> str:
    return llvm.get_host_cpu_name()


@functools.lru_cache(maxsize=None)
def host_features() -> str:
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"
    return features


def resolved_target(options) -> tuple[str, str, str]:
    """(triple, cpu, features): the options' values, host values for unset ones on the host."""
    _initialise()
    triple = options.triple or host_triple()
    native = triple == host_triple()
    cpu = options.cpu if options.cpu is not None else (host_cpu() if native else "")
    features = options.features if options.features is not None else (host_features() if native else "")
    return triple, cpu, features


def create_target_machine(options, jit: bool = False) -> llvm.TargetMachine:
    """A new target machine (an execution engine takes ownership of the one it is given)."""
    triple, cpu, features = resolved_target(options)
    return _new_target_machine(triple, cpu, features, options.opt_level, jit)


def _new_target_machine(triple: str, cpu: str, features: str, opt_level: int, jit: bool) -> llvm.TargetMachine:
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=min(max(opt_level, 0), 3),
                                        reloc="pic" if not jit else "default", codemodel="jitdefault", jit=jit)


@dataclass(frozen=True)
class RegisterFile:
    """The vector registers micro-kernels may plan for (their width and how many there are), and
    the architecture family ("x86", "aarch64" or "other": where the float mode register lives)."""
    vector_bits: int
    registers: int
    arch: str = "other"


_PROBE = """define void @probe(ptr %p) {
  %a = load <16 x float>, ptr %p
  %b = fadd <16 x float> %a, %a
  store <16 x float> %b, ptr %p
  ret void
}
"""


def register_file(options) -> RegisterFile:
    """The widest vector registers the options' target uses for explicit vector code, and how many
    it has: AVX-512 32 x 512 bits, AVX/AVX2 16 x 256, SSE 16 x 128, aarch64 (NEON) 32 x 128.
    Found by compiling a 16-float addition for the target and reading its assembly, so a CPU name
    combined with features (e.g. -avx512f on an AVX-512 host) is judged as LLVM sees it."""
    return _register_file(*resolved_target(options))


@functools.lru_cache(maxsize=None)
def _register_file(triple: str, cpu: str, features: str) -> RegisterFile:
    target = llvm.Target.from_triple(triple)
    tm = target.create_target_machine(cpu=cpu, features=features, opt=2)
    ref = llvm.parse_assembly(_PROBE)
    ref.triple = triple
    ref.data_layout = str(tm.target_data)
    asm = tm.emit_assembly(ref)
    if triple.startswith(("aarch64", "arm64")):
        return RegisterFile(128, 32, "aarch64")
    arch = "x86" if triple.startswith(("x86_64", "i386", "i686")) else "other"
    if re.search(r"%zmm\d", asm):
        return RegisterFile(512, 32, arch)
    if re.search(r"%ymm\d", asm):
        return RegisterFile(256, 16, arch)
    return RegisterFile(128, 16, arch)


# Loop unrolling doubles LLVM's time on very large modules (e.g. long fused
# threefry chains) for little gain there; smaller modules keep it.
UNROLL_IR_LIMIT = 100_000


class OutputKind:
    """What compiling one part produces: a relocatable object, or optimised bitcode to link."""
    OBJECT = "object"
    BITCODE = "bitcode"


def optimize(module_ref: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int, unroll: bool = True,
             vectorize: bool = True) -> None:
    """Run the O<opt_level> module pipeline, with loop and SLP vectorisation and unrolling unless
    vectorize is False (scalar loops: a third less time at O1)."""
    if opt_level <= 0:
        return
    pto = llvm.PipelineTuningOptions(speed_level=min(opt_level, 3))
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize
    pto.loop_unrolling = unroll and vectorize
    pto.loop_interleaving = vectorize
    pb = llvm.PassBuilder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(module_ref, pb)


def parse_for_target(llvm_ir: str, options, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    triple, _, _ = resolved_target(options)
    ref = llvm.parse_assembly(llvm_ir)
    ref.triple = triple
    ref.data_layout = str(tm.target_data)
    ref.verify()
    return ref


def parse_and_optimize(llvm_ir: str, options, jit: bool = False, opt_level: Optional[int] = None,
                       vectorize: bool = True) -> tuple[llvm.ModuleRef, llvm.TargetMachine]:
    """The parsed, verified module optimised at opt_level (default: the options' level)."""
    level = options.opt_level if opt_level is None else opt_level
    tm = target_machine(options, jit, level)
    ref = parse_for_target(llvm_ir, options, tm)
    optimize(ref, tm, level, unroll=len(llvm_ir) < UNROLL_IR_LIMIT, vectorize=vectorize)
    return ref, tm


_target_machine = functools.lru_cache(maxsize=64)(_new_target_machine)


def target_machine(options, jit: bool, opt_level: int) -> llvm.TargetMachine:
    """A target machine for the options' target generating code at opt_level (kept per process)."""
    triple, cpu, features = resolved_target(options)
    return _target_machine(triple, cpu, features, opt_level, jit)


@dataclass
class PartResult:
    """One compiled part: its bytes, the CPU seconds of each step, and the process that compiled it."""
    name: str
    data: bytes
    optimise_seconds: float
    machine_code_seconds: float
    process: int = 0


def compile_part(part, options, kind: str, jit: bool) -> PartResult:
    """Parse, optimise as the part asks (options.Part: level, vectorisation) and emit one part."""
    start = time.process_time()
    ref, tm = parse_and_optimize(part.llvm_ir, options, jit, part.opt_level, part.vectorize)
    optimised = time.process_time()
    if kind == OutputKind.OBJECT:
        set_strength_reduction(part.strength_reduction)
        data = tm.emit_object(ref)
    else:
        data = ref.as_bitcode()   # (strength reduction belongs to machine code: the object's emit decides)
    return PartResult(part.name, data, optimised - start, time.process_time() - optimised, os.getpid())
