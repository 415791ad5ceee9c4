"""From a lowered module to code: the parts' objects for the JIT, one object for AOT.

    part_objects(lowered, options, stats, progress) -> {part name: object bytes}   (JIT)
    compile_object(lowered, options) -> bytes       one relocatable object (AOT)
    compile_assembly(lowered, options) -> str       the same code as assembly text

Every part (the driver and each kernel) is looked up in the object cache by its content
first; the missing ones are compiled, in parallel when there are enough of them
(compile_pool.py), and stored. The JIT loads the parts' objects into one execution
engine. AOT output must be one object file: its parts are optimised the same way (cached
as bitcode), linked with the runtime library's bitcode (runtime_library.py) into one module,
every function but the entry made internal (and the runtime's functions no kernel calls
dropped), and that module is compiled to one object.
"""
from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace as dataclass_replace
from typing import Optional

import llvmlite.binding as llvm

from .compile_pool import compile_parts, running_pool
from .compile_report import CompileStats, ProgressBar
from .object_cache import ObjectCache, part_key
from .options import CodegenOptions, LoweredModule, Part, link_parts
from .runtime_library import runtime_code
from .target import OutputKind, compile_part, resolved_target, set_strength_reduction, target_machine


class PartStream:
    """Kernels sent to the compile workers as lowering emits them, when workers are running in
    this process: LLVM compiles the first kernels while Python lowers the rest. A kernel whose
    optimisation is raised later (called again inside a loop) is compiled again as it ends up."""

    def __init__(self, options: CodegenOptions, kind: str = OutputKind.OBJECT, jit: bool = True):
        self.options, self.kind, self.jit = options, kind, jit
        self.pool = running_pool(options.jobs)
        self.cache = ObjectCache()
        self.started: dict[str, tuple] = {}   # part name -> (future, opt_level, vectorize)

    def submit(self, part: Part) -> None:
        if self.pool is None or self.cache.has(part_key(part, self.options, self.kind, self.jit)):
            return
        as_now = dataclass_replace(part)   # sent as it is now, whatever happens to part later
        try:
            future = self.pool.submit(compile_part, as_now, self.options, self.kind, self.jit)
        except BrokenProcessPool:
            self.pool = None   # compile_parts reports it, or starts new workers
            return
        self.started[part.name] = (future, part.opt_level, part.vectorize)

    def futures(self, parts: list[Part]) -> dict:
        """{name: future} of the given parts sent as they are now."""
        found = {}
        for part in parts:
            started = self.started.get(part.name)
            if started is not None and started[1:] == (part.opt_level, part.vectorize):
                found[part.name] = started[0]
        return found


def part_objects(lowered: LoweredModule, options: CodegenOptions, stats: Optional[CompileStats] = None,
                 progress: Optional[ProgressBar] = None, kind: str = OutputKind.OBJECT,
                 jit: bool = True, stream: Optional[PartStream] = None) -> dict[str, bytes]:
    """Each part's compiled bytes, from the cache or compiled now (and then cached); stream: the
    parts already sent to compile while lowering."""
    stats = stats if stats is not None else CompileStats()
    cache = ObjectCache()
    keys = {p.name: part_key(p, options, kind, jit) for p in lowered.parts}
    found = {name: cache.get(key) for name, key in keys.items()}
    missing = [p for p in lowered.parts if found[p.name] is None]
    stats.cache_hits += len(lowered.parts) - len(missing)
    update = (lambda done, total: progress.update(done, total)) if progress is not None else None
    started = stream.futures(missing) if stream is not None else {}
    with stats.phase("llvm", cpu=False):
        results, processes = compile_parts(missing, options, kind, jit, options.jobs, update, started)
    stats.processes = processes
    stats.add_parts(results)
    for result in results:
        cache.put(keys[result.name], result.data)
        found[result.name] = result.data
    if progress is not None:
        progress.finish()
    return found


def linked_module(lowered: LoweredModule, options: CodegenOptions, stats: Optional[CompileStats] = None,
                  progress: Optional[ProgressBar] = None) -> llvm.ModuleRef:
    """The optimised parts linked into one module; only the entry function and the thread
    hooks stay visible to other objects."""
    bitcode = part_objects(lowered, options, stats, progress, kind=OutputKind.BITCODE, jit=False)
    runtime = [runtime_code(options, OutputKind.BITCODE, False, stats)] if lowered.runtime else []
    linked = link_parts([bitcode[p.name] for p in lowered.parts] + runtime)
    for function in linked.functions:
        if function.name != lowered.entry_name and not function.is_declaration:
            function.linkage = "internal"   # kernels and the runtime library: private to the object
    linked.triple = resolved_target(options)[0]
    if runtime:
        _drop_unused_functions(linked, options)
    return linked


def _drop_unused_functions(module: llvm.ModuleRef, options: CodegenOptions) -> None:
    """The runtime library's functions the kernels do not call (another element type, the other
    float mode): global dead code elimination, nothing else, on the optimised parts."""
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(module, llvm.PassBuilder(target_machine(options, False, 0), llvm.PipelineTuningOptions()))


def compile_object(lowered: LoweredModule, options: CodegenOptions = CodegenOptions(),
                   stats: Optional[CompileStats] = None, progress: Optional[ProgressBar] = None) -> bytes:
    """One object file for the options' target (host by default) defining the entry function."""
    stats = stats if stats is not None else CompileStats()
    linked = linked_module(lowered, options, stats, progress)
    set_strength_reduction(True)   # one object: the runtime library's loops are in it too
    with stats.phase("machine code"):
        return target_machine(options, False, options.opt_level).emit_object(linked)


def compile_assembly(lowered: LoweredModule, options: CodegenOptions = CodegenOptions()) -> str:
    """The optimised code as target assembly text."""
    linked = linked_module(lowered, options)
    set_strength_reduction(True)
    return target_machine(options, False, options.opt_level).emit_assembly(linked)
