"""Where LAPACK comes from: the library both backends call for factorisations.

JAX's LAPACK custom calls (`lapack_sgetrf_ffi` ...) are answered by a real LAPACK, never by
hand-written factorisations, so that both backends give LAPACK's answer. The library is
found in this order:

1. `$HLO_LAPACK_LIBRARY`: a path to any LAPACK shared library (Fortran symbols `sgetrf_`, or
   the OpenBLAS builds' `scipy_sgetrf_64_` / `scipy_sgetrf_`; 32-bit integers unless the names
   end in `64_` or `$HLO_LAPACK_INT_BITS=64`);
2. the `scipy-openblas64` or `scipy-openblas32` wheels, when installed;
3. the OpenBLAS that numpy's wheels ship (`numpy.libs/libscipy_openblas64_*.so`), which every
   installation of the toolchain has;
4. the system's `liblapack`.

OpenBLAS builds for Python prefix their symbols with `scipy_` and, with 64-bit integers,
suffix them with `64_` (`scipy_sgetrf_64_`); `symbol()` gives the exported name of a routine.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np


class LapackUnavailable(RuntimeError):
    """No LAPACK library could be found or loaded."""


@dataclass(frozen=True)
class LapackLibrary:
    path: str
    prefix: str = ""          # scipy_ for the OpenBLAS builds made for Python
    suffix: str = "_"         # _ or _64_ (ILP64 OpenBLAS)
    int_bits: int = 32

    def symbol(self, routine: str) -> str:
        """The exported name of a LAPACK/BLAS routine: 'sgetrf' -> 'scipy_sgetrf_64_'."""
        return f"{self.prefix}{routine}{self.suffix}"

    @property
    def int_type(self):
        return ctypes.c_int64 if self.int_bits == 64 else ctypes.c_int32

    @property
    def int_dtype(self) -> np.dtype:
        """LAPACK's INTEGER as a numpy dtype."""
        return np.dtype(np.int64 if self.int_bits == 64 else np.int32)

    @functools.cached_property
    def handle(self) -> ctypes.CDLL:
        try:
            return ctypes.CDLL(self.path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise LapackUnavailable(f"cannot load LAPACK from {self.path}: {exc}") from None

    def function(self, routine: str):
        """The routine as a ctypes function (arguments by pointer, Fortran style)."""
        try:
            fn = getattr(self.handle, self.symbol(routine))
        except AttributeError:
            raise LapackUnavailable(f"{self.path} has no {self.symbol(routine)}") from None
        fn.restype = None
        return fn

    def link_flags(self) -> str:
        """What a C program that links an AOT object calling LAPACK passes to the linker."""
        folder, name = os.path.split(self.path)
        return f"-L{folder} -l:{name} -Wl,-rpath,{folder}"

    def set_single_thread(self) -> None:
        """OpenBLAS threads off: the toolchain decides about threads itself."""
        # The C entry points (an int argument); the Fortran ones ending in "_" take a pointer.
        for name in (f"{self.prefix}openblas_set_num_threads64_", f"{self.prefix}openblas_set_num_threads",
                     "openblas_set_num_threads"):
            fn = getattr(self.handle, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                fn(1)
                return


# Symbol spellings LAPACK builds export, as (prefix, suffix, integer bits): reference LAPACK and
# most builds, then the OpenBLAS builds made for Python (ILP64 for numpy, LP64 for scipy).
_SPELLINGS = (("", "_", 32), ("scipy_", "_64_", 64), ("scipy_", "_", 32), ("", "_64_", 64))


def _from_environment() -> Optional[LapackLibrary]:
    """$HLO_LAPACK_LIBRARY, its symbol spelling found by looking (sgetrf_, scipy_sgetrf_64_ ...);
    $HLO_LAPACK_INT_BITS=64 for an ILP64 build exporting plain names."""
    path = os.environ.get("HLO_LAPACK_LIBRARY")
    if not path:
        return None
    bits = os.environ.get("HLO_LAPACK_INT_BITS")
    try:
        handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as exc:
        raise LapackUnavailable(f"cannot load HLO_LAPACK_LIBRARY={path}: {exc}") from None
    for prefix, suffix, default_bits in _SPELLINGS:
        if hasattr(handle, f"{prefix}sgetrf{suffix}"):
            return LapackLibrary(path, prefix, suffix, int(bits) if bits else default_bits)
    raise LapackUnavailable(f"HLO_LAPACK_LIBRARY={path} exports no LAPACK routine (no sgetrf_ in any spelling)")


def _from_openblas_wheels() -> Optional[LapackLibrary]:
    for package, suffix, bits in (("scipy_openblas64", "64_", 64), ("scipy_openblas32", "_", 32)):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        lib_dir = module.get_lib_dir()
        found = sorted(glob.glob(os.path.join(lib_dir, "libscipy_openblas*.so*"))
                       + glob.glob(os.path.join(lib_dir, "libscipy_openblas*.dylib")))
        if found:
            return LapackLibrary(found[0], "scipy_", "_64_" if bits == 64 else "_", bits)
    return None


def _from_numpy() -> Optional[LapackLibrary]:
    base = os.path.dirname(np.__file__)
    patterns = [os.path.join(base, "..", "numpy.libs", "libscipy_openblas64_*"),
                os.path.join(base, ".dylibs", "libscipy_openblas64_*")]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return LapackLibrary(os.path.realpath(found[0]), "scipy_", "_64_", 64)
    return None


def _from_system() -> Optional[LapackLibrary]:
    name = ctypes.util.find_library("lapack")
    return LapackLibrary(name, "", "_", 32) if name else None


@functools.lru_cache(maxsize=None)
def find_lapack() -> LapackLibrary:
    """The LAPACK library to use (see the module docstring for the search order)."""
    for finder in (_from_environment, _from_openblas_wheels, _from_numpy, _from_system):
        library = finder()
        if library is not None:
            library.set_single_thread()
            return library
    raise LapackUnavailable("no LAPACK library found: install numpy from its wheels, or the "
                            "scipy-openblas64 package, or set HLO_LAPACK_LIBRARY to a LAPACK shared library")
