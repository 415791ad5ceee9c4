"""lower_module(): pipeline, checks, buffer assignment, then the driver and its kernels, in that order."""
from __future__ import annotations

from ..ir import Module
from ..passes.pass_manager import available_passes, run_pipeline
from ..passes.pipelines import pipeline_text
from ..text.parser import parse_module
from ..text.printer import format_module
from .buffers import assign_buffers
from .compile_report import CompileStats
from .driver import DriverLowering
from .emitters import expander_passes
from .lapack_calls import libraries_for
from . import collectives, tridiagonal_solve  # noqa: F401 (register collective emitters, a custom-call target)
from .options import CodegenOptions, LoweredModule
from .runtime_library import runtime_tag
from .target import register_file
from .types import check_shape_supported


def lower_module(module: Module, options: CodegenOptions = CodegenOptions(), name: str = "hlo_entry",
                 stats: CompileStats | None = None, on_kernel=None, text: str | None = None) -> LoweredModule:
    """Lower a module (not modified: the pipeline runs on a copy) to LLVM IR: the driver and its kernels.
    stats, when given, receives the seconds of the pipeline and of the lowering; on_kernel(part),
    when given, is called with each kernel as soon as it is emitted; text, when given, is the
    module's printed text (the caller printed it already)."""
    stats = stats if stats is not None else CompileStats()
    with stats.phase("pipeline"):
        prepared = prepare(module, options, text)
    with stats.phase("lowering"):
        lowered = lower(prepared, options, name, on_kernel)
    stats.count_lowered(lowered)
    return lowered


def prepare(module: Module, options: CodegenOptions, text: str | None = None) -> Module:
    """A copy of the module, optimised by the default pipeline when asked, whose buffers have
    one layout on both sides of every boundary (layout-assignment, always last)."""
    copy = parse_module(text if text is not None else format_module(module), module.name)
    _keep_locations(module, copy)
    if options.run_pipeline:
        passes = [pipeline_text("default")]
    else:
        # Ops the backend implements through their expansion into simpler HLO (emitters.py).
        opcodes = {i.opcode for c in copy.computations for i in c.instructions}
        passes = [p for p in expander_passes(opcodes) if p in available_passes()]
    run_pipeline(copy, ",".join(passes + ["layout-assignment"]))   # one pipeline: checked once, at its end
    return copy


def _keep_locations(original: Module, copy: Module) -> None:
    """Point the copy's instructions back at the user's source text for diagnostics."""
    by_name = {i.name: i for c in original.computations for i in c.instructions}
    for comp in copy.computations:
        for inst in comp.instructions:
            src = by_name.get(inst.name)
            if src is not None:
                inst.loc = src.loc


def lower(prepared: Module, options: CodegenOptions, name: str, on_kernel=None) -> LoweredModule:
    """The driver and kernels of a prepared module."""
    for comp in prepared.computations:
        for inst in comp.instructions:
            if inst.shape is not None:
                check_shape_supported(inst.shape, inst)
    assignment = assign_buffers(prepared)
    driver = DriverLowering(prepared, assignment, name, register_file(options), options.opt_level,
                            flush_denormals=options.flush_denormals, profile=options.profile,
                            debug_values=options.debug_values, runtime_tag=runtime_tag(options), on_kernel=on_kernel)
    parts = driver.lower()
    return LoweredModule(name, parts, list(assignment.params), list(assignment.results), assignment.temp_bytes,
                         libraries_for(prepared), driver.inline, driver.calls, profile=list(driver.profiler.entries),
                         debug_values=list(driver.debug.table), runtime=sorted(driver.runtime_calls))
