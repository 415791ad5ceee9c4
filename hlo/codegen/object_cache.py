"""Compiled parts on disk, keyed by their content: $XDG_CACHE_HOME/hlo-toolchain/parts.

A part's key hashes everything its code depends on: its LLVM IR text (whose kernel function
is named by the hash of the text), its optimisation level and vectorisation, the target (triple, cpu,
features), what is produced (a JIT object, a position-independent object's bitcode), and the
compiler: the LLVM version and target.py, which sets up the pipeline. The rest of the
code generator only decides the text, which is in the key already, so a module whose edit
changes three kernels compiles three kernels (and its driver) again, and one that repeats a
layer compiles the layer's kernels once.

Files are written atomically (a temporary file renamed into place): concurrent compiles may
share the folder. A file that cannot be read or written only costs a compile.
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Optional

import llvmlite
import llvmlite.binding as llvm

from ..cache import cache_dir
from . import target
from .options import Part
from .target import resolved_target

CACHE_VERSION = "parts-1"


@functools.lru_cache(maxsize=None)
def compiler_fingerprint() -> str:
    """The LLVM and llvmlite versions and target.py's source."""
    h = hashlib.sha256(f"{llvm.llvm_version_info!r};{llvmlite.__version__}".encode())
    h.update(Path(target.__file__).read_bytes())
    return h.hexdigest()


def part_key(part: Part, options, kind: str, jit: bool) -> str:
    triple, cpu, features = resolved_target(options)
    h = hashlib.sha256()
    for piece in (CACHE_VERSION, compiler_fingerprint(), kind, str(jit), str(part.opt_level), str(part.vectorize),
                  str(part.strength_reduction),
                  triple, cpu, features, part.llvm_ir):
        h.update(piece.encode())
        h.update(b"\0")
    return h.hexdigest()


class ObjectCache:
    """get(key) -> bytes or None; has(key); put(key, data). One file per key."""

    def __init__(self, directory: Optional[Path] = None):
        self.directory = directory if directory is not None else cache_dir() / "parts"

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]

    def get(self, key: str) -> Optional[bytes]:
        try:
            return self.path(key).read_bytes()
        except OSError:
            return None

    def has(self, key: str) -> bool:
        """Whether the key's object is stored (without reading it)."""
        return self.path(key).is_file()

    def put(self, key: str, data: bytes) -> None:
        write_atomically(self.path(key), data)


def write_atomically(path: Path, data: bytes) -> None:
    """Write via a temporary file renamed into place; failures are ignored (a cache only saves time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
