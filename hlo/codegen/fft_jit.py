"""Run FftPlans in process (tests and benchmarks): MCJIT for the host CPU, O3 with loop and
SLP vectorisation, each plan's function called through ctypes on numpy arrays.

    fft = JitFft(FftPlan("RFFT", (256,), 64))
    y = fft(x)                  # x: [batch..., *plan.in_dims] -> [batch..., *plan.out_dims]
    fft.code_bytes, fft.table_bytes, fft.compile_seconds

JitModule(plans) compiles several plans into one module (they share kernels and tables);
its `kernels` are the callables of the plans, in order.
"""
from __future__ import annotations

import ctypes
import functools
import time

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from .fft import FftPlan


@functools.lru_cache(maxsize=None)
def _host() -> tuple[str, str, str]:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"     # let LLVM use 512-bit vectors
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), features


def host_vector_bits() -> int:
    flags = set(_host()[2].split(","))
    if "+avx512f" in flags:
        return 512
    return 256 if "+avx" in flags else 128


def _aligned(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + nbytes]


class FftKernel:
    """One compiled plan: call it on [batch..., *in_dims] arrays."""

    def __init__(self, plan: FftPlan, function):
        self.plan = plan
        self.function = function
        self._scratch = {}
        real = np.float32 if plan.complex_bits == 64 else np.float64
        cplx = np.complex64 if plan.complex_bits == 64 else np.complex128
        self.in_dtype = cplx if plan.in_complex else real
        self.out_dtype = cplx if plan.out_complex else real

    def scratch(self, batch: int) -> np.ndarray:
        size = self.plan.scratch_bytes(batch)
        if size not in self._scratch:
            self._scratch[size] = _aligned(max(size, 64))
        return self._scratch[size]

    def __call__(self, x, out=None) -> np.ndarray:
        plan = self.plan
        x = np.ascontiguousarray(x, dtype=self.in_dtype)
        lead = x.shape[:x.ndim - len(plan.in_dims)]
        if tuple(x.shape[len(lead):]) != tuple(plan.in_dims):
            raise ValueError(f"expected [..., {plan.in_dims}], got {x.shape}")
        batch = int(np.prod(lead, dtype=np.int64))
        if out is None:
            out = np.empty(tuple(lead) + tuple(plan.out_dims), dtype=self.out_dtype)
        self.function(x.ctypes.data, out.ctypes.data, batch, self.scratch(batch).ctypes.data)
        return out

    def bound_call(self, x: np.ndarray, out: np.ndarray, batch: int):
        """A function of no arguments making the bare ctypes call on these arrays (benchmarks:
        the addresses are taken once, as a compiled executable holding its buffers would)."""
        args = (x.ctypes.data, out.ctypes.data, batch, self.scratch(batch).ctypes.data)
        function = self.function
        return lambda: function(*args)


class JitModule:
    """Several plans compiled together (functions fft_0, fft_1, ...). extra_features are
    appended to the host's (e.g. "-avx512f" to compile for an AVX2 machine)."""

    def __init__(self, plans, opt_level: int = 3, extra_features: str = ""):
        start = time.perf_counter()
        module = ir.Module(name="fft")
        triple, cpu, features = _host()
        if extra_features:
            features += "," + extra_features
        module.triple = triple
        names = [f"fft_{k}" for k in range(len(plans))]
        for plan, name in zip(plans, names):
            plan.emit(module, name)
        text = str(module)
        self.ir_bytes = len(text)
        self.code_bytes = sum(len(str(f)) for f in module.functions)
        self.table_bytes = sum(len(g.initializer.constant) for g in module.global_values
                               if isinstance(g, ir.GlobalVariable))
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, opt=opt_level,
                                                                    jit=True)
        ref = llvm.parse_assembly(text)
        ref.data_layout = str(tm.target_data)
        ref.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(ref, pb)
        self.optimized_ir = str(ref)
        self._engine = llvm.create_mcjit_compiler(ref, tm)
        self._engine.finalize_object()
        prototype = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)
        self.kernels = [FftKernel(plan, prototype(self._engine.get_function_address(name)))
                        for plan, name in zip(plans, names)]
        for kernel in self.kernels:
            kernel.owner = self      # the engine owns the code: keep it alive with any kernel
        self.compile_seconds = time.perf_counter() - start


class JitFft(FftKernel):
    """A single plan compiled on its own."""

    def __init__(self, plan: FftPlan, opt_level: int = 3):
        self.module = JitModule([plan], opt_level)
        super().__init__(plan, self.module.kernels[0].function)
        self.ir_bytes = self.module.ir_bytes
        self.code_bytes = self.module.code_bytes
        self.table_bytes = self.module.table_bytes
        self.compile_seconds = self.module.compile_seconds
        self.optimized_ir = self.module.optimized_ir
