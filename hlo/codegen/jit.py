"""In-process execution: compile with MCJIT, run on numpy arrays, cache code on disk.

A module is compiled in parts (build.py): the driver and its kernels, each part's object
cached by its content (object_cache.py), so a module that differs from a cached one in a
few instructions compiles only the kernels that changed. The whole module's lowering (the
parts' names and keys, shapes, temp size) is cached too, under $XDG_CACHE_HOME/hlo-toolchain
(default ~/.cache/hlo-toolchain), keyed by the sha256 of the module text, the options, the
target and the library's sources: a second JitExecutable of the same
module loads the parts' objects without lowering it again (from_cache is True).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pickle
import time
import weakref
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import Optional

import llvmlite.binding as llvm
import numpy as np

from ..cache import cache_dir
from ..ir import Module
from ..runtime import values_io
from ..runtime.resources import check_allocation
from ..text.printer import format_module
from .buffers import alias_leaves
from .build import PartStream, part_objects
from .compile_report import CompileStats, ProgressBar
from .debug_values import BoundHook, hook_name
from .lapack_calls import libraries_for
from .lowering import lower_module
from .object_cache import ObjectCache, part_key, write_atomically
from .options import CodegenOptions, LoweredModule
from .parallel import runner_address
from .profiling import profile_counters, profile_rows
from .runtime_library import load_for_jit
from .target import OutputKind, create_target_machine, resolved_target

CACHE_VERSION = "3"


@functools.lru_cache(maxsize=None)
def _compiler_fingerprint() -> str:
    """A hash of the library's sources and LLVM's version: compiled code depends on the code
    generator, the passes of the default pipeline, the parser and the runtime plans alike, so a
    change to any of them invalidates the cache."""
    h = hashlib.sha256(llvm.llvm_version_info.__repr__().encode())
    for path in sorted(Path(__file__).resolve().parent.parent.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(module_text: str, options: CodegenOptions, name: str) -> str:
    triple, cpu, features = resolved_target(options)
    h = hashlib.sha256()
    for part in (CACHE_VERSION, _compiler_fingerprint(), module_text, options.key(), name, triple, cpu, features):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class JitExecutable:
    """A module compiled for the host; run(*arrays) returns the result leaves.

    threads: how many threads large multiplies may use (default: every core).
    progress: a ProgressBar drawn while the parts compile (none by default).
    stats: the compile's phases and counts (CompileStats).
    One executable has one temp buffer: calls of run() must not overlap (use one
    executable per Python thread)."""

    NAME = "hlo_entry"

    def __init__(self, module: Module, options: CodegenOptions = CodegenOptions(), threads: Optional[int] = None,
                 progress: Optional[ProgressBar] = None):
        start = time.perf_counter()
        self.options = options
        self.stats = CompileStats()
        text = format_module(module)
        meta_path = cache_dir() / f"{cache_key(text, options, self.NAME)}.meta"
        cached = _load_cached(meta_path, libraries_for(module))
        self.from_cache = self.stats.module_cache_hit = cached is not None
        if cached is None:
            stream = PartStream(options)
            lowered = lower_module(module, options, self.NAME, self.stats, on_kernel=stream.submit, text=text)
            # While the workers compile: what does not need their objects (a stored lowering whose
            # objects are missing is not used), and the engine the objects go into.
            _store_lowering(meta_path, lowered, options)
            engine = self._empty_engine(options, lowered)
            objects = part_objects(lowered, options, self.stats, progress, stream=stream)
        else:
            lowered, objects = cached
            self.stats.count_lowered(lowered)
            self.stats.cache_hits = len(lowered.parts)
            engine = self._empty_engine(options, lowered)
        self.lowered = lowered
        with self.stats.phase("loading"):
            self._engine = _load_objects(engine, [objects[p.name] for p in lowered.parts])
            address = self._engine.get_function_address(self.NAME)
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
        self.compile_seconds = time.perf_counter() - start
        self.threads = threads if threads is not None else (os.cpu_count() or 1)
        self._set_threads(self.threads)
        check_allocation(lowered.temp_bytes + sum(s.byte_size() for s in lowered.results),
                         "the compiled program (its buffers)", module.entry.root.loc)
        self._temp = _aligned_empty(lowered.temp_bytes)   # reused by every run
        self._kept_results = None
        # What every run needs, made once: the pointer arrays the entry function reads, and
        # which buffers are plain row-major (no transpose to or from the layout's order).
        self._param_ptrs = (ctypes.c_void_p * max(len(lowered.params), 1))()
        self._result_ptrs = (ctypes.c_void_p * max(len(lowered.results), 1))()
        self._param_ptrs_address = ctypes.addressof(self._param_ptrs)
        self._result_ptrs_address = ctypes.addressof(self._result_ptrs)
        self._temp_address = _address(self._temp)
        self._arguments = _ArgumentPointers(lowered.params)
        self._result_ptrs_kept = False   # _result_ptrs point at _kept_results
        self._row_major_results = [_is_row_major(s) for s in lowered.results]
        self.aliases = alias_leaves(module)   # result leaf j -> parameter leaf i
        self._entry_shapes = [p.shape for p in sorted(module.entry.parameters,
                                                      key=lambda p: p.attrs["parameter_number"])]
        self._flat_entry = not any(s.is_tuple for s in self._entry_shapes)   # one leaf per argument
        self._profile = profile_counters(self._engine, self.NAME, len(lowered.profile))

    def _empty_engine(self, options: CodegenOptions, lowered: LoweredModule) -> llvm.ExecutionEngine:
        if lowered.runtime:
            load_for_jit(options, self.stats)   # once per process (built once per machine)
        with self.stats.phase("loading"):
            return _new_engine(options, lowered.libraries)

    def profile_rows(self):
        """Each timed kernel's count and time over the runs so far (CodegenOptions(profile=True))."""
        if self._profile is None:
            raise ValueError("this executable was not compiled with CodegenOptions(profile=True)")
        ns, counts = self._profile
        return profile_rows(self.lowered.profile, list(ns), list(counts))

    def reset_profile(self) -> None:
        if self._profile is not None:
            for array in self._profile:
                ctypes.memset(array, 0, ctypes.sizeof(array))

    def _set_threads(self, threads: int) -> None:
        """Point the module's parallel-for hook at the pthread runner (gemm.py, parallel.py)."""
        count = self._engine.get_global_value_address(f"{self.NAME}_num_threads")
        hook = self._engine.get_global_value_address(f"{self.NAME}_parallel_for")
        if count and hook:
            ctypes.c_int64.from_address(count).value = max(int(threads), 1)
            ctypes.c_void_p.from_address(hook).value = runner_address() if threads > 1 else None

    def run(self, *arrays, donate: bool = False, reuse_results: bool = False) -> list[np.ndarray]:
        """The result leaves. With donate=True, an output aliased with a parameter
        (input_output_alias) is written into that parameter's array when it can be used
        as is (contiguous, writable, of the storage dtype and layout); it is returned then.

        With reuse_results=True the result arrays of the previous such call are written
        again instead of fresh ones (no new pages to fault in on every run): the caller
        allows that the arrays it got last time are overwritten."""
        if len(arrays) != len(self._entry_shapes):
            raise ValueError(f"expected {len(self._entry_shapes)} arguments, got {len(arrays)}")
        flat = arrays if self._flat_entry else \
            [leaf for value, shape in zip(arrays, self._entry_shapes) for leaf in _leaves(value, shape)]
        params = self._arguments.set(flat, self._param_ptrs)
        if reuse_results:
            if self._kept_results is None:
                self._kept_results = self._new_results()
            results = list(self._kept_results)
        else:
            results = self._new_results()
        if donate:
            for j, i in self.aliases.items():
                if _donatable(params[i], flat[i], results[j]):
                    results[j] = params[i]
        pointing_at_kept = reuse_results and not donate
        if not (pointing_at_kept and self._result_ptrs_kept):
            for k, r in enumerate(results):
                self._result_ptrs[k] = _address(r)
        self._result_ptrs_kept = pointing_at_kept
        self._function(self._param_ptrs_address, self._result_ptrs_address, self._temp_address)
        return [r if row_major else _logical(r, s)
                for r, s, row_major in zip(results, self.lowered.results, self._row_major_results)]

    def run_observed(self, observe, *arrays) -> list[np.ndarray]:
        """run(*arrays), calling observe(entry, loop_counters, array) with every instruction's value
        as it is computed (a CodegenOptions(debug_values=True) compile; debug_values.py): entry is
        the DebugValue of `self.lowered.debug_values`, array a logical-order copy. An exception
        raised by observe ends the observation and is raised when the run is over."""
        address = self._engine.get_global_value_address(hook_name(self.NAME))
        if not address or not self.options.debug_values:
            raise ValueError("this executable was not compiled with CodegenOptions(debug_values=True)")
        hook = BoundHook(self.lowered.debug_values, _array_of_bytes, observe)
        slot = ctypes.c_void_p.from_address(address)
        slot.value = hook.address
        try:
            results = self.run(*arrays)
        finally:
            slot.value = None
        hook.raise_pending()
        return results

    def _new_results(self) -> list[np.ndarray]:
        return [np.empty(_physical_dims(s), dtype=s.element_type.dtype) for s in self.lowered.results]


class _ArgumentPointers:
    """Sets the entry's parameter pointers for a run. A leaf that is the very array of the previous
    run, with the shape, dtype and strides it had then, keeps its pointer (an ndarray's data never
    moves while those stay): a loop running on the same arrays skips numpy's conversion and address
    look-up, 2-3 us per array, which is a tenth of a small model's run. Weak references: the
    executable keeps no caller's array alive."""

    def __init__(self, shapes: list):
        self.shapes = shapes
        self.row_major = [_is_row_major(s) for s in shapes]
        self.kept: list = [None] * len(shapes)   # per leaf: (weakref to the array, shape, dtype, strides)

    def set(self, flat, pointers) -> list:
        """The leaves as the dense buffers the entry reads (converted where needed), their
        addresses written to `pointers`."""
        params = []
        for k, leaf in enumerate(flat):
            kept = self.kept[k]
            if kept is not None and kept[0]() is leaf and leaf.shape == kept[1] and leaf.dtype == kept[2] \
                    and leaf.strides == kept[3]:
                params.append(leaf)
                continue
            param = _argument(leaf, self.shapes[k], self.row_major[k], k)
            pointers[k] = _address(param)
            self.kept[k] = (weakref.ref(leaf), leaf.shape, leaf.dtype, leaf.strides) if param is leaf else None
            params.append(param)
        return params


def _argument(value, shape, row_major: bool, number: int) -> np.ndarray:
    """A caller's value as the dense buffer the entry function reads (no copy when it already is one)."""
    array = values_io.to_storage(value, shape)
    if not isinstance(array, np.ndarray) or array.shape != tuple(shape.dims) or array.dtype != shape.element_type.dtype:
        given = f"{array.dtype}{list(array.shape)}" if isinstance(array, np.ndarray) else type(value).__name__
        raise ValueError(f"argument leaf {number}: expected {shape}, got {given}")
    return np.ascontiguousarray(array if row_major else _physical(array, shape))


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _is_row_major(shape) -> bool:
    return list(shape.minor_to_major()) == list(range(shape.rank - 1, -1, -1))


def _donatable(param: np.ndarray, given, result: np.ndarray) -> bool:
    """The converted parameter is the caller's own array and can hold the result."""
    return (isinstance(given, np.ndarray) and param.ctypes.data == given.ctypes.data and param.flags.c_contiguous
            and param.flags.writeable and param.dtype == result.dtype and param.shape == result.shape)


def _leaves(value, shape) -> list:
    """The array leaves of one argument: a tuple parameter takes a tuple (or list) of its elements,
    depth-first; an array parameter takes an array, a list of numbers or a number."""
    if not shape.is_tuple:
        return [value]
    if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
        raise ValueError(f"expected a tuple of {len(shape.tuple_shapes)} values for a {shape} parameter")
    return [leaf for v, s in zip(value, shape.tuple_shapes) for leaf in _leaves(v, s)]


def _aligned_empty(size: int) -> np.ndarray:
    raw = np.empty(size + 64, dtype=np.uint8)
    shift = (-raw.ctypes.data) % 64
    return raw[shift:shift + size] if size else raw[shift:shift + 1]


def _physical_order(shape) -> list[int]:
    return list(reversed(shape.minor_to_major()))


def _physical_dims(shape) -> tuple:
    return tuple(shape.dims[d] for d in _physical_order(shape))


def _physical(array: np.ndarray, shape) -> np.ndarray:
    return np.transpose(np.asarray(array), _physical_order(shape)) if shape.rank else np.asarray(array)


def _array_of_bytes(data: bytes, shape) -> np.ndarray:
    """A buffer's bytes (in the shape's layout) as a logical-order array."""
    physical = np.frombuffer(data, dtype=shape.element_type.dtype).reshape(_physical_dims(shape))
    return _logical(physical, shape) if not _is_row_major(shape) else physical.copy()


def _logical(array: np.ndarray, shape) -> np.ndarray:
    if not shape.rank:
        return array
    order = _physical_order(shape)
    inverse = [order.index(d) for d in range(shape.rank)]
    return np.ascontiguousarray(np.transpose(array, inverse))


# --------------------------------------------------------------------------- loading and the module cache

def _new_engine(options: CodegenOptions, libraries: list[str]) -> llvm.ExecutionEngine:
    """An empty MCJIT engine, the shared libraries the code calls (LAPACK) loaded."""
    for library in libraries:
        llvm.load_library_permanently(library)
    return llvm.create_mcjit_compiler(llvm.parse_assembly(""), create_target_machine(options, jit=True))


def _load_objects(engine: llvm.ExecutionEngine, objects: list[bytes]) -> llvm.ExecutionEngine:
    """The engine holding the parts' objects, linked to each other and finalised."""
    for data in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    engine.run_static_constructors()
    return engine


def _store_lowering(path: Path, lowered: LoweredModule, options: CodegenOptions) -> None:
    """What a later executable of the same module needs besides the objects: the parts' keys."""
    keys = [part_key(p, options, OutputKind.OBJECT, True) for p in lowered.parts]
    slim = [dataclass_replace(p, llvm_ir="") for p in lowered.parts]
    write_atomically(path, pickle.dumps((dataclass_replace(lowered, parts=slim), keys)))


def _load_cached(path: Path, libraries: list[str]):
    """(the lowered module without its IR text, {part name: object}) when every object is cached
    and was compiled against the shared libraries found now."""
    try:
        lowered, keys = pickle.loads(path.read_bytes())
    except (OSError, pickle.PickleError, EOFError, AttributeError, TypeError, ValueError):
        return None
    if lowered.libraries != libraries:
        return None   # compiled against another LAPACK than the one found now: compile again
    cache = ObjectCache()
    objects = {}
    for part, key in zip(lowered.parts, keys):
        data = cache.get(key)
        if data is None:
            return None
        objects[part.name] = data
    return lowered, objects
