"""The AOT check: a module through hlo-aot's object file and header, a small C driver built with
the system's compiler, and back (what `hlo-aot` users do; tests/aot tests the same with the
corpus). `run_aot(module, arguments)` returns the result leaves."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..codegen.aot import compile_aot, from_physical_bytes, to_physical_bytes
from ..runtime.values_io import array_leaves

NAME = "fuzz_entry"
DRIVER = r"""#define _POSIX_C_SOURCE 200112L
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
  for (i = 0; i < NAME_NUM_RESULTS; ++i) fwrite(results[i], 1, NAME_result_sizes[i], f);
  fclose(f);
  return 0;
}
""".replace("NAME", NAME)


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def run_aot(module, arguments, timeout: float = 60.0) -> list[np.ndarray]:
    cc = compiler()
    if cc is None:
        raise OSError("no C compiler for the AOT check")
    artifacts = compile_aot(module, NAME)
    with tempfile.TemporaryDirectory(prefix="hlo-fuzz-aot-") as folder:
        d = Path(folder)
        (d / "entry.o").write_bytes(artifacts.object_code)
        (d / "entry.h").write_text(artifacts.header)
        (d / "driver.c").write_text(DRIVER)
        subprocess.run([cc, "-std=c99", "-O0", "-I", str(d), str(d / "driver.c"), str(d / "entry.o"), "-lm", "-o",
                        str(d / "driver")], check=True, capture_output=True, timeout=timeout)
        leaves = [leaf for a in arguments for leaf in array_leaves(a)]
        (d / "in.bin").write_bytes(b"".join(to_physical_bytes(a, s) for a, s in zip(leaves, artifacts.lowered.params)))
        subprocess.run([str(d / "driver"), str(d / "in.bin"), str(d / "out.bin")], check=True, capture_output=True,
                       timeout=timeout)
        data = (d / "out.bin").read_bytes()
    results, offset = [], 0
    for shape in artifacts.lowered.results:
        size = shape.byte_size()
        results.append(from_physical_bytes(data[offset:offset + size], shape))
        offset += size
    return results
