"""The AOT header says each buffer's layout in words and gives an index helper; a C program
reading JAX's column-major gradient through the helper gets the right numbers.

JAX lowers `jax.grad` of a matmul loss with the result layout `f32[16,24]{0,1}`
(data/make_grad_colmajor.py wrote the module and XLA's values). A C driver that read it
row-major would silently get transposed numbers; this one uses grad_result0_index(i, j).
"""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hlo import parse_module, run
from hlo.codegen.aot import layout_in_words

DATA = Path(__file__).resolve().parent / "data"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "grad.h"

/* Reads w (16x24) and x (8x16) as row-major floats from stdin, prints the gradient
   row by row in logical order, element (i, j) found through the header's helper. */
int main(void) {
  float* args[2];
  float* result = aligned_alloc(64, (grad_result0_size + 63) / 64 * 64);
  void* temp = aligned_alloc(64, (grad_TEMP_SIZE + 63) / 64 * 64 + 64);
  for (int a = 0; a < 2; ++a) {
    size_t size = a == 0 ? grad_arg0_size : grad_arg1_size;
    args[a] = aligned_alloc(64, (size + 63) / 64 * 64);
  }
  for (int64_t i = 0; i < grad_arg0_dims[0]; ++i)
    for (int64_t j = 0; j < grad_arg0_dims[1]; ++j)
      if (fread(&args[0][grad_arg0_index(i, j)], sizeof(float), 1, stdin) != 1) return 2;
  for (int64_t i = 0; i < grad_arg1_dims[0]; ++i)
    for (int64_t j = 0; j < grad_arg1_dims[1]; ++j)
      if (fread(&args[1][grad_arg1_index(i, j)], sizeof(float), 1, stdin) != 1) return 2;
  void* results[1] = {result};
  grad((void**)args, results, temp);
  for (int64_t i = 0; i < grad_result0_dims[0]; ++i)
    for (int64_t j = 0; j < grad_result0_dims[1]; ++j)
      printf("%.9g\n", result[grad_result0_index(i, j)]);
  return 0;
}
"""


def hlo_aot(*args, cwd):
    return subprocess.run([sys.executable, "-c", "from hlo_cli.hlo_aot import main; main()", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


@pytest.mark.skipif(CC is None, reason="no system C compiler")
def test_c_reads_a_column_major_gradient_through_the_index_helper(tmp_path):
    module_path = tmp_path / "grad.hlo"
    shutil.copy(DATA / "grad_colmajor.hlo", module_path)
    made = hlo_aot(module_path, "-o", tmp_path / "build" / "grad", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    header = (tmp_path / "build" / "grad.h").read_text()
    assert "COLUMN-MAJOR" in header and "element (i0, i1) is at 16*i1 + i0: grad_result0_index(i0, i1)" in header
    (tmp_path / "driver.c").write_text(DRIVER)
    exe = tmp_path / "driver"
    subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{tmp_path / 'build'}", str(tmp_path / "driver.c"),
                    str(tmp_path / "build" / "grad.o"), "-lm", "-o", str(exe)], check=True)
    inputs = np.load(DATA / "grad_colmajor.inputs.npz")
    w, x = inputs["arg0"], inputs["arg1"]
    printed = subprocess.run([str(exe)], input=w.tobytes() + x.tobytes(), capture_output=True, check=True).stdout
    got = np.array(printed.split(), dtype=np.float32).reshape(16, 24)
    expected = np.load(DATA / "grad_colmajor.expected.npz")["out0"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)        # XLA's values
    module = parse_module(module_path.read_text(), str(module_path))
    interpreted = np.asarray(run(module, w, x)).reshape(16, 24)
    np.testing.assert_allclose(got, interpreted, rtol=1e-5, atol=1e-6)   # the interpreter's


@pytest.mark.parametrize("layout, words", [
    ("f32[]", "one element."),
    ("f32[5]{0}", "one dimension, contiguous;"),
    ("f32[2,3]{1,0}", "row-major (C order): the last dimension varies fastest;"),
    ("f32[2,3]{0,1}", "COLUMN-MAJOR (Fortran order, not C's): the first dimension varies fastest;"),
    ("f32[2,3,4]{1,2,0}", "dimension 1, then 2, then 0 (fastest varying first), neither row- nor column-major;"),
])
def test_layouts_in_words(layout, words):
    module = parse_module(f"HloModule m\n\nENTRY e {{\n  ROOT p = {layout} parameter(0)\n}}\n")
    shape = module.entry.root.shape
    assert layout_in_words(shape, "h")[0] == words


def test_index_formula_matches_the_buffer_order():
    module = parse_module("HloModule m\n\nENTRY e {\n  ROOT p = f32[2,3,4]{1,2,0} parameter(0)\n}\n")
    shape = module.entry.root.shape
    assert layout_in_words(shape, "h")[1] == "element (i0, i1, i2) is at 12*i0 + 3*i2 + i1: h(i0, i1, i2)."
    logical = np.arange(24).reshape(2, 3, 4)
    buffer = np.transpose(logical, [0, 2, 1]).reshape(-1)   # slowest dimension 0, then 2, then 1
    for i0, i1, i2 in np.ndindex(2, 3, 4):
        assert buffer[12 * i0 + 3 * i2 + i1] == logical[i0, i1, i2]
