"""What the code generator is asked for (CodegenOptions) and what it hands back (LoweredModule)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import llvmlite.binding as llvm

from ..shapes import Shape


@dataclass
class CodegenOptions:
    opt_level: int = 3
    triple: Optional[str] = None
    cpu: Optional[str] = None
    features: Optional[str] = None
    run_pipeline: bool = True  # run the 'default' pipeline first so fusions decide the loop nests
    flush_denormals: bool = True  # subnormal floats are 0 while compiled code runs, as in XLA:CPU (float_mode.py)
    profile: bool = False         # time every kernel (profiling.py); never on unless asked
    debug_values: bool = False    # call a hook with every instruction's value (debug_values.py); never on unless asked
    jobs: Optional[int] = None    # processes compiling parts at once (default: the cores this process may use)

    def key(self) -> str:
        """What the generated code depends on (jobs does not change it)."""
        return (f"O{self.opt_level};{self.triple};{self.cpu};{self.features};{self.run_pipeline}"
                f"{'' if self.flush_denormals else ';ieee-subnormals'}"
                + (";profile" if self.profile else "") + (";debug-values" if self.debug_values else ""))


@dataclass
class Part:
    """One LLVM module of a lowered HLO module: the driver or a kernel, and its optimisation:
    the LLVM level, and whether loops are vectorised (at O1 they may stay scalar)."""
    name: str
    llvm_ir: str
    opt_level: int
    work: int = 0        # element operations (a kernel's weight)
    vectorize: bool = True
    # LLVM's loop strength reduction while emitting machine code: only for the runtime library's
    # hand-written loops. In kernels it took up to half of the machine-code time (a small
    # convolution: 10 ms of 20) and changed no model's speed beyond the noise.
    strength_reduction: bool = False


@dataclass
class LoweredModule:
    """The driver (the entry function) and the kernels it calls, each an LLVM module of its own.

    parts: every module, the driver first; a kernel's function is named by the hash of its
    text, so equal names mean equal code."""
    entry_name: str
    parts: list[Part] = field(default_factory=list)
    params: list[Shape] = field(default_factory=list)
    results: list[Shape] = field(default_factory=list)
    temp_bytes: int = 0
    libraries: list[str] = field(default_factory=list)   # shared libraries the code calls (LAPACK)
    inline: int = 0      # instructions emitted inline in the driver
    calls: int = 0       # kernel calls in the driver
    profile: list = field(default_factory=list)   # profiling.ProfileEntry per timed kernel (profile=True)
    debug_values: list = field(default_factory=list)   # debug_values.DebugValue per hook id (debug_values=True)
    runtime: list = field(default_factory=list)   # the runtime library's functions the code calls (runtime_library.py)

    @property
    def kernels(self) -> list[Part]:
        return self.parts[1:]

    @property
    def llvm_ir(self) -> str:
        """Every part linked into one module (for reading: compilation uses the parts)."""
        linked = link_parts([p.llvm_ir for p in self.parts])
        linked.name = self.entry_name
        return str(linked)


def link_parts(texts: list) -> llvm.ModuleRef:
    """One module holding the definitions of all the given module texts or bitcodes."""
    modules = [llvm.parse_bitcode(t) if isinstance(t, bytes) else llvm.parse_assembly(t) for t in texts]
    linked = modules[0]
    for other in modules[1:]:
        linked.link_in(other)
    return linked
