"""In-process execution: compile with MCJIT, run on numpy arrays, cache objects on disk.

Compiled objects are cached under $XDG_CACHE_HOME/hlo-toolchain (default
~/.cache/hlo-toolchain), keyed by the sha256 of the module text, the options and the
target (triple, cpu, features); a second JitExecutable of the same module loads the
object instead of compiling (from_cache is True). The lowering's metadata (shapes,
temp size) is cached beside the object.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pickle
import time
from pathlib import Path
from typing import Optional

import llvmlite.binding as llvm
import numpy as np

from ..cache import cache_dir
from ..ir import Module
from ..runtime import values_io
from ..text.printer import format_module
from .buffers import alias_leaves
from .lapack_calls import libraries_for
from .lowering import lower_module
from .options import CodegenOptions, LoweredModule
from .parallel import runner_address
from .target import create_target_machine, parse_and_optimize, resolved_target

CACHE_VERSION = "1"


@functools.lru_cache(maxsize=None)
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


class _ObjectCache:
    """llvmlite's object cache hooks, backed by one file per module key."""

    def __init__(self, path: Path):
        self.path = path
        self.hit = False

    def notify(self, _module, data: bytes) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp%d" % os.getpid())
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def getbuffer(self, _module):
        if self.path.exists():
            self.hit = True
            return self.path.read_bytes()
        return None


class JitExecutable:
    """A module compiled for the host; run(*arrays) returns the result leaves.

    threads: how many threads large multiplies may use (default: every core).
    One executable has one temp buffer: calls of run() must not overlap (use one
    executable per Python thread)."""

    NAME = "hlo_entry"

    def __init__(self, module: Module, options: CodegenOptions = CodegenOptions(), threads: Optional[int] = None):
        start = time.perf_counter()
        self.options = options
        text = format_module(module)
        key = cache_key(text, options, self.NAME)
        directory = cache_dir()
        meta_path = directory / f"{key}.meta"
        obj_path = directory / f"{key}.o"
        lowered = self._cached_lowering(meta_path) if obj_path.exists() else None
        if lowered is not None and getattr(lowered, "libraries", []) != libraries_for(module):
            lowered = None   # compiled against another LAPACK than the one found now: compile again
            obj_path.unlink(missing_ok=True)
        self.from_cache = lowered is not None
        if lowered is None:
            lowered = lower_module(module, options, self.NAME)
        self.lowered = lowered
        self._engine, self._cache = self._build_engine(lowered, obj_path, self.from_cache)
        address = self._engine.get_function_address(self.NAME)
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
        if not self.from_cache:
            self._store_lowering(meta_path, lowered)
        self.compile_seconds = time.perf_counter() - start
        self.threads = threads if threads is not None else (os.cpu_count() or 1)
        self._set_threads(self.threads)
        self._temp = _aligned_empty(lowered.temp_bytes)   # reused by every run
        self._kept_results = None
        # What every run needs, made once: the pointer arrays the entry function reads, and
        # which buffers are plain row-major (no transpose to or from the layout's order).
        self._param_ptrs = (ctypes.c_void_p * max(len(lowered.params), 1))()
        self._result_ptrs = (ctypes.c_void_p * max(len(lowered.results), 1))()
        self._param_ptrs_address = ctypes.addressof(self._param_ptrs)
        self._result_ptrs_address = ctypes.addressof(self._result_ptrs)
        self._temp_address = _address(self._temp)
        self._row_major_params = [_is_row_major(s) for s in lowered.params]
        self._row_major_results = [_is_row_major(s) for s in lowered.results]
        self.aliases = alias_leaves(module)   # result leaf j -> parameter leaf i
        self._entry_shapes = [p.shape for p in sorted(module.entry.parameters,
                                                      key=lambda p: p.attrs["parameter_number"])]

    def _set_threads(self, threads: int) -> None:
        """Point the module's parallel-for hook at the pthread runner (gemm.py, parallel.py)."""
        count = self._engine.get_global_value_address(f"{self.NAME}_num_threads")
        hook = self._engine.get_global_value_address(f"{self.NAME}_parallel_for")
        if count and hook:
            ctypes.c_int64.from_address(count).value = max(int(threads), 1)
            ctypes.c_void_p.from_address(hook).value = runner_address() if threads > 1 else None

    @staticmethod
    def _cached_lowering(path: Path):
        try:
            return pickle.loads(path.read_bytes())
        except (OSError, pickle.PickleError, EOFError, AttributeError):
            return None

    @staticmethod
    def _store_lowering(path: Path, lowered: LoweredModule) -> None:
        slim = LoweredModule("", lowered.entry_name, lowered.params, lowered.results, lowered.temp_bytes,
                             lowered.libraries)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp%d" % os.getpid())
            tmp.write_bytes(pickle.dumps(slim))
            os.replace(tmp, path)
        except OSError:
            pass

    def _build_engine(self, lowered: LoweredModule, obj_path: Path, cached: bool):
        tm = create_target_machine(self.options, jit=True)
        if cached:
            ref = llvm.parse_assembly(_stub_ir(lowered.entry_name))
        else:
            ref, _ = parse_and_optimize(lowered.llvm_ir, self.options, jit=True)
        for library in getattr(lowered, "libraries", ()):   # the symbols the code calls (LAPACK)
            llvm.load_library_permanently(library)
        engine = llvm.create_mcjit_compiler(ref, tm)
        cache = _ObjectCache(obj_path)
        engine.set_object_cache(cache.notify, cache.getbuffer)
        engine.finalize_object()
        engine.run_static_constructors()
        return engine, cache

    def run(self, *arrays, donate: bool = False, reuse_results: bool = False) -> list[np.ndarray]:
        """The result leaves. With donate=True, an output aliased with a parameter
        (input_output_alias) is written into that parameter's array when it can be used
        as is (contiguous, writable, of the storage dtype and layout); it is returned then.

        With reuse_results=True the result arrays of the previous such call are written
        again instead of fresh ones (no new pages to fault in on every run): the caller
        allows that the arrays it got last time are overwritten."""
        if len(arrays) != len(self._entry_shapes):
            raise ValueError(f"expected {len(self._entry_shapes)} arguments, got {len(arrays)}")
        flat = [leaf for value, shape in zip(arrays, self._entry_shapes) for leaf in _leaves(value, shape)]
        params = [_argument(a, s, row_major, k)
                  for k, (a, s, row_major) in enumerate(zip(flat, self.lowered.params, self._row_major_params))]
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
        for k, a in enumerate(params):
            self._param_ptrs[k] = _address(a)
        for k, r in enumerate(results):
            self._result_ptrs[k] = _address(r)
        self._function(self._param_ptrs_address, self._result_ptrs_address, self._temp_address)
        return [r if row_major else _logical(r, s)
                for r, s, row_major in zip(results, self.lowered.results, self._row_major_results)]

    def _new_results(self) -> list[np.ndarray]:
        return [np.empty(_physical_dims(s), dtype=s.element_type.dtype) for s in self.lowered.results]


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


def _stub_ir(name: str) -> str:
    """A module with the entry's signature: MCJIT asks the object cache for its code."""
    return f"define void @{name}(ptr %0, ptr %1, ptr %2) {{\n  ret void\n}}\n"


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


def _logical(array: np.ndarray, shape) -> np.ndarray:
    if not shape.rank:
        return array
    order = _physical_order(shape)
    inverse = [order.index(d) for d in range(shape.rank)]
    return np.ascontiguousarray(np.transpose(array, inverse))
