"""Running a module as an hlo-aot user does: the object file and header, a C driver built
with the system's compiler (linking what the header names: LAPACK when the module calls it),
the driver run in a process of its own on the arguments' buffers, the results read back.

    run_aot(module, arguments, options) -> result leaves (numpy arrays, logical order)

`hlo-run --backend aot` runs modules this way (so the conformance runner checks AOT objects
on whole corpora) and the fuzzer's AOT oracle uses it. A missing C compiler is an
AotUnavailable; a driver that fails or dies is an AotRunFailed naming its exit status (a
crash of compiled code is a bug of the compiler).
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from ..runtime.values_io import array_leaves
from .aot import compile_aot, from_physical_bytes, to_physical_bytes
from ..runtime.lapack_library import find_lapack
from .options import CodegenOptions

NAME = "hlo_aot_entry"
DRIVER = r"""/* Reads the arguments' buffers from argv[1] (concatenated in order), runs the entry
   function, writes the results' buffers to argv[2]. */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "entry.h"

static void* buffer(size_t size) {
  void* p = NULL;
  size_t rounded = (size + 63) / 64 * 64;
  if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0) exit(3);
  memset(p, 0, rounded ? rounded : 64);
  return p;
}

int main(int argc, char** argv) {
  void* args[NAME_NUM_ARGS + 1];
  void* results[NAME_NUM_RESULTS + 1];
  void* temp = buffer(NAME_TEMP_SIZE);
  FILE* f;
  int i;
  if (argc != 3 || !(f = fopen(argv[1], "rb"))) return 2;
  for (i = 0; i < NAME_NUM_ARGS; ++i) {
    args[i] = buffer(NAME_arg_sizes[i]);
    if (fread(args[i], 1, NAME_arg_sizes[i], f) != NAME_arg_sizes[i]) return 4;
  }
  fclose(f);
  for (i = 0; i < NAME_NUM_RESULTS; ++i) results[i] = buffer(NAME_result_sizes[i]);
  NAME(args, results, temp);
  if (!(f = fopen(argv[2], "wb"))) return 5;
  for (i = 0; i < NAME_NUM_RESULTS; ++i) {
    if (fwrite(results[i], 1, NAME_result_sizes[i], f) != NAME_result_sizes[i]) return 6;
  }
  return fclose(f) == 0 ? 0 : 6;
}
""".replace("NAME", NAME)


class AotUnavailable(OSError):
    """No C compiler to build the driver with."""


class AotRunFailed(RuntimeError):
    """The driver could not be built, or it failed or died."""


def c_compiler() -> Optional[str]:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def run_aot(module, arguments, options: CodegenOptions = CodegenOptions(),
            timeout: Optional[float] = None) -> list[np.ndarray]:
    """The module's result leaves, computed by its hlo-aot object in a driver process."""
    cc = c_compiler()
    if cc is None:
        raise AotUnavailable("running an AOT object needs a C compiler (cc, gcc or clang on PATH)")
    artifacts = compile_aot(module, NAME, options)
    link = shlex.split(find_lapack().link_flags()) if artifacts.lowered.libraries else []
    with tempfile.TemporaryDirectory(prefix="hlo-aot-run-") as folder:
        d = Path(folder)
        (d / "entry.o").write_bytes(artifacts.object_code)
        (d / "entry.h").write_text(artifacts.header)
        (d / "driver.c").write_text(DRIVER)
        _checked([cc, "-std=c99", "-O1", "-I", str(d), str(d / "driver.c"), str(d / "entry.o"), *link, "-lm",
                  "-o", str(d / "driver")], "building the driver", timeout)
        leaves = [leaf for a in arguments for leaf in array_leaves(a)]
        (d / "in.bin").write_bytes(b"".join(to_physical_bytes(a, s) for a, s in zip(leaves, artifacts.lowered.params)))
        _checked([str(d / "driver"), str(d / "in.bin"), str(d / "out.bin")], "running the AOT object", timeout)
        data = (d / "out.bin").read_bytes()
    return _results(data, artifacts.lowered.results)


def _checked(command: list[str], what: str, timeout: Optional[float]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AotRunFailed(f"{what}: no result after {timeout:g} s") from None
    if done.returncode != 0:
        status = f"signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
        detail = done.stderr.strip()
        raise AotRunFailed(f"{what} failed ({status})" + (f": {detail}" if detail else ""))


def _results(data: bytes, shapes) -> list[np.ndarray]:
    results, offset = [], 0
    for shape in shapes:
        size = shape.byte_size()
        results.append(from_physical_bytes(data[offset:offset + size], shape))
        offset += size
    if offset != len(data):
        raise AotRunFailed(f"the driver wrote {len(data)} bytes of results; the header says {offset}")
    return results
