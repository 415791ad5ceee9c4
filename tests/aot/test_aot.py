"""hlo-aot end to end: object + header -> C and C++ drivers built with the system compiler.

For each module, hlo-aot (the click command, in process) writes PREFIX.o and PREFIX.h;
a C driver (driver.c.in: plain entry function) and a C++ driver (driver.cc.in: the
NAME_Class wrapper) are compiled and linked with -lm only, run on the arguments
written as one binary file, and their outputs (decoded with the header's own type,
dims and minor_to_major constants) are compared with the interpreter under the
corpus tolerances. Skipped when the system has no C/C++ compiler.
"""
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from corpus_cases import DATA, MANIFEST, case_arguments, check_close, decode, load_module, outputs
from hlo import parse_module
from hlo.runtime import values_io
from hlo.shapes import primitive_type
from hlo_cli.hlo_aot import default_name, main as hlo_aot

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[1] / "samples"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CC is None or CXX is None, reason="no system C/C++ compiler")

# (cholesky_lapack_customcall calls LAPACK: test_aot_lapack.py links it with the library.)
CORPUS_CASES = ["mlp_forward", "cnn_forward", "causal_attention", "fori_loop_newton", "while_collatz_vmap",
                "sort_argsort", "gather_scatter", "integer_bit_ops", "bf16_matmul", "topk_argmax", "cond_switch"]
SAMPLE_CASES = ["mlp_layer", "reduce_sum"]
SAMPLE_TOLERANCE = (1e-5, 1e-5)

# What an object may leave undefined: libc memory functions and libm (never compiler-runtime helpers).
LIBM = {"exp", "expf", "log", "logf", "log1p", "log1pf", "expm1", "expm1f", "pow", "powf", "sin", "sinf", "cos",
        "cosf", "tan", "tanf", "tanh", "tanhf", "atan2", "atan2f", "sqrt", "sqrtf", "cbrt", "cbrtf", "erf", "erff",
        "fmod", "fmodf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "rint", "rintf", "nearbyint",
        "nearbyintf", "trunc", "truncf", "fabs", "fabsf", "fmin", "fminf", "fmax", "fmaxf", "asin", "asinf",
        "acos", "acosf", "atan", "atanf", "sinh", "sinhf", "cosh", "coshf", "asinh", "asinhf", "acosh", "acoshf",
        "atanh", "atanhf", "lgamma", "lgammaf", "tgamma", "tgammaf", "hypot", "hypotf", "exp2", "exp2f", "log2",
        "log2f", "log10", "log10f", "fma", "fmaf", "copysign", "copysignf", "nextafter", "nextafterf"}
ALLOWED_UNDEFINED = LIBM | {"memcpy", "memset", "memmove", "memcmp", "_GLOBAL_OFFSET_TABLE_"}


# -- header decoding -----------------------------------------------------------------------------

def buffer_specs(header: str, name: str, kind: str) -> list[tuple[str, tuple, tuple]]:
    """(type name, logical dims, minor_to_major) of every argument or result, read from the header."""
    count = int(re.search(rf"#define {name}_NUM_{'ARGS' if kind == 'arg' else 'RESULTS'} (\d+)", header).group(1))
    specs = []
    for i in range(count):
        p = f"{name}_{kind}{i}"
        type_name = re.search(rf'#define {p}_type "(\w+)"', header).group(1)
        rank = int(re.search(rf"#define {p}_rank (\d+)", header).group(1))
        dims = _int_array(header, f"{p}_dims")[:rank]
        m2m = _int_array(header, f"{p}_minor_to_major")[:rank]
        size = int(re.search(rf"#define {p}_size \(\(size_t\)(\d+)\)", header).group(1))
        assert size == int(np.prod(dims, dtype=np.int64)) * primitive_type(type_name).byte_size
        specs.append((type_name, dims, m2m))
    return specs


def _int_array(header: str, label: str) -> tuple:
    body = re.search(rf"{label}\[\d+\] = \{{([^}}]*)\}}", header).group(1)
    return tuple(int(v) for v in body.split(","))


def physical_order(m2m) -> list[int]:
    return list(reversed(m2m))


def encode(array, spec) -> bytes:
    type_name, dims, m2m = spec
    a = np.asarray(array).view(primitive_type(type_name).dtype) if np.asarray(array).dtype.itemsize == \
        primitive_type(type_name).dtype.itemsize else np.asarray(array, primitive_type(type_name).dtype)
    if dims:
        a = np.transpose(a.reshape(dims), physical_order(m2m))
    return np.ascontiguousarray(a).tobytes()


def decode_results(data: bytes, specs) -> dict:
    got, offset = {}, 0
    for j, (type_name, dims, m2m) in enumerate(specs):
        dtype = primitive_type(type_name).dtype
        count = int(np.prod(dims, dtype=np.int64))
        flat = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
        offset += count * dtype.itemsize
        order = physical_order(m2m)
        array = np.transpose(flat.reshape([dims[d] for d in order]), [order.index(d) for d in range(len(dims))]) \
            if dims else flat.reshape(())
        got[f"out{j}"] = values_io.from_storage(np.array(array, order="C"))
    assert offset == len(data), "the driver wrote more bytes than the header's result sizes"
    return got


# -- building ------------------------------------------------------------------------------------

def leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def case_inputs(case: str):
    """(module path, module, interpreter arguments, (rtol, atol), exact output indices)."""
    if case in SAMPLE_CASES:
        path = SAMPLES / f"{case}.hlo"
        module = parse_module(path.read_text(), str(path))
        rng = np.random.default_rng(7)
        args = [values_io.random_value(p.shape, rng) for p in module.entry.parameters]
        return path, module, args, SAMPLE_TOLERANCE, set()
    filename = f"{case}.hlo"
    module = load_module(filename)
    entry = MANIFEST[case]
    return DATA / filename, module, case_arguments(module, filename), (entry["rtol"], entry["atol"]), \
        set(entry.get("exact_outputs", []))


def run_cli(args: list[str]):
    return CliRunner().invoke(hlo_aot, args, catch_exceptions=False)


def compile_driver(template: str, compiler: str, std: str, prefix: Path, name: str, suffix: str) -> Path:
    source = prefix.parent / f"{name}_driver{suffix}"
    text = (HERE / template).read_text().replace("@NAME@", name).replace("@HEADER@", f"{prefix.name}.h")
    source.write_text(text)
    exe = prefix.parent / f"{name}_{suffix.strip('.')}_driver"
    cmd = [compiler, std, "-Wall", "-Wextra", "-Werror", "-O1", "-I", str(prefix.parent), str(source),
           f"{prefix}.o", "-lm", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return exe


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """case -> (prefix, name, header, args, tolerance, exact, C executable, C++ executable)."""
    root = tmp_path_factory.mktemp("aot")
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    pending = {}
    for case in CORPUS_CASES + SAMPLE_CASES:
        path, module, args, tolerance, exact = case_inputs(case)
        prefix = root / case
        result = run_cli([str(path), "-o", str(prefix)])  # object compilation stays serial (LLVM)
        assert result.exit_code == 0, result.output
        name = default_name(str(prefix))
        c_exe = pool.submit(compile_driver, "driver.c.in", CC, "-std=c99", prefix, name, ".c")
        cc_exe = pool.submit(compile_driver, "driver.cc.in", CXX, "-std=c++11", prefix, name, ".cc")
        pending[case] = (prefix, name, module, args, tolerance, exact, c_exe, cc_exe)
    built = {case: (prefix, name, module, args, tolerance, exact, c.result(), cc.result())
             for case, (prefix, name, module, args, tolerance, exact, c, cc) in pending.items()}
    pool.shutdown()
    return built


@pytest.mark.parametrize("driver", ["c", "cc"])
@pytest.mark.parametrize("case", CORPUS_CASES + SAMPLE_CASES)
def test_aot_driver_matches_interpreter(builds, case, driver):
    prefix, name, module, args, (rtol, atol), exact, c_exe, cc_exe = builds[case]
    header = Path(f"{prefix}.h").read_text()
    arg_specs, result_specs = buffer_specs(header, name, "arg"), buffer_specs(header, name, "result")
    flat_args = leaves(args)
    assert len(flat_args) == len(arg_specs)
    inputs = prefix.parent / f"{case}_{driver}.in"
    inputs.write_bytes(b"".join(encode(a, s) for a, s in zip(flat_args, arg_specs)))
    out = prefix.parent / f"{case}_{driver}.out"
    done = subprocess.run([str(c_exe if driver == "c" else cc_exe), str(inputs), str(out)], capture_output=True)
    assert done.returncode == 0, done.stderr
    got = decode_results(out.read_bytes(), result_specs)
    expected = outputs(module, args)
    assert sorted(got) == sorted(expected)
    for j, (type_name, _, _) in enumerate(result_specs):
        key = f"out{j}"
        check_close(decode(got[key], type_name), decode(expected[key], type_name), rtol, atol, j in exact,
                    f"{case} {key}")


def test_objects_need_only_libc_and_libm(builds):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    for case, (prefix, *_rest) in builds.items():
        listing = subprocess.run([nm, "-u", f"{prefix}.o"], capture_output=True, text=True, check=True).stdout
        undefined = {line.split()[-1] for line in listing.splitlines() if line.strip()}
        assert undefined <= ALLOWED_UNDEFINED, f"{case}: {sorted(undefined - ALLOWED_UNDEFINED)}"


# -- headers -------------------------------------------------------------------------------------

AXPY = """HloModule axpy

ENTRY main {
  a = f32[] parameter(0)
  x = f32[4] parameter(1)
  y = f32[4] parameter(2)
  ab = f32[4] broadcast(a), dimensions={}
  ax = f32[4] multiply(ab, x)
  ROOT r = f32[4] add(ax, y)
}
"""

TRANSPOSED = """HloModule transposed

ENTRY main {
  p = s32[2,3]{0,1} parameter(0)
  ROOT n = s32[2,3]{1,0} negate(p)
}
"""

TWO_HEADERS_MAIN = r"""
#include <stdio.h>
#include "axpy.h"
#include "neg.h"

int main(void) {
  float a = 2.0f, x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, r[4];
  int32_t p[6] = {1, 2, 3, 4, 5, 6}, n[6];  /* physical order of {0,1}: column-major */
  void* axpy_args[3] = {&a, x, y};
  void* axpy_results[1] = {r};
  void* neg_args[1] = {p};
  void* neg_results[1] = {n};
  axpy(axpy_args, axpy_results, NULL);
  neg(neg_args, neg_results, NULL);
  printf("%g %g %g %g|", r[0], r[1], r[2], r[3]);
  printf("%d %d %d %d %d %d|", n[0], n[1], n[2], n[3], n[4], n[5]);
  printf("%d %d %d %d|", (int)axpy_arg0_rank, (int)axpy_arg1_dims[0], (int)neg_arg0_minor_to_major[0],
         (int)neg_result0_minor_to_major[0]);
  printf("%s %s %d %d", axpy_arg0_type, neg_result0_type, (int)axpy_NUM_ARGS, (int)neg_result0_size);
  return 0;
}
"""


def test_two_headers_link_together_and_layouts_are_physical(tmp_path):
    for name, text in (("axpy", AXPY), ("neg", TRANSPOSED)):
        (tmp_path / f"{name}.hlo").write_text(text)
        result = run_cli([str(tmp_path / f"{name}.hlo"), "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    (tmp_path / "main.c").write_text(TWO_HEADERS_MAIN)
    exe = tmp_path / "main"
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path), str(tmp_path / "main.c"),
                    str(tmp_path / "axpy.o"), str(tmp_path / "neg.o"), "-lm", "-o", str(exe)], check=True)
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    # p logical [[1,3,5],[2,4,6]] (column-major buffer) -> n row-major [-1,-3,-5,-2,-4,-6]
    assert printed == "12 24 36 48|-1 -3 -5 -2 -4 -6|0 4 0 1|f32 s32 3 24"


def test_header_compiles_standalone_in_c_and_cpp(tmp_path):
    (tmp_path / "axpy.hlo").write_text(AXPY)
    assert run_cli([str(tmp_path / "axpy.hlo"), "-o", str(tmp_path / "k"), "--name", "kernel"]).exit_code == 0
    header = (tmp_path / "k.h").read_text()
    assert 'extern "C"' in header and "class kernel_Class" in header and "kernel_TEMP_SIZE" in header
    for compiler, std, suffix in ((CC, "-std=c89", ".c"), (CXX, "-std=c++11", ".cc")):
        src = tmp_path / f"use{suffix}"
        src.write_text('#include "k.h"\nint main(void) { return (int)kernel_arg1_size - 16; }\n')
        subprocess.run([compiler, std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wno-long-long", "-c",
                        "-I", str(tmp_path), str(src), "-o", str(tmp_path / f"use{suffix}.o")], check=True)


MATMUL = """HloModule mm

ENTRY main {
  a = f32[96,200] parameter(0)
  b = f32[200,150] parameter(1)
  ROOT d = f32[96,150] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

THREADED_MAIN = r"""
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "mm.h"

typedef struct { mm_task_fn task; void* context; int64_t part; } job;
static int hook_calls = 0;

static void* run_job(void* arg) { job* j = (job*)arg; j->task(j->context, j->part); return NULL; }

/* A user's parallel-for: one POSIX thread per part. */
static void parallel_for(mm_task_fn task, void* context, int64_t parts) {
  pthread_t ids[16];
  job jobs[16];
  int64_t i;
  ++hook_calls;
  for (i = 0; i < parts; ++i) {
    jobs[i].task = task; jobs[i].context = context; jobs[i].part = i;
    if (pthread_create(&ids[i], NULL, run_job, &jobs[i]) != 0) exit(9);
  }
  for (i = 0; i < parts; ++i) pthread_join(ids[i], NULL);
}

int main(int argc, char** argv) {
  static float a[96 * 200], b[200 * 150], serial[96 * 150], threaded[96 * 150];
  void* args[2] = {a, b};
  void* results[1];
  void* temp;
  int i;
  (void)argc;
  if (posix_memalign(&temp, 64, mm_TEMP_SIZE) != 0) return 3;
  for (i = 0; i < 96 * 200; ++i) a[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  for (i = 0; i < 200 * 150; ++i) b[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
  results[0] = serial;
  mm(args, results, temp);                     /* default: one part, no hook */
  mm_num_threads = atoi(argv[1]);
  mm_parallel_for = parallel_for;
  results[0] = threaded;
  mm(args, results, temp);
  for (i = 0; i < 96 * 150; ++i) if (serial[i] != threaded[i]) return 10;
  printf("%d %.6f %.6f\n", hook_calls, serial[0], serial[96 * 150 - 1]);
  free(temp);
  return 0;
}
"""


def test_parallel_for_hook_runs_the_parts_on_the_users_threads(tmp_path):
    (tmp_path / "mm.hlo").write_text(MATMUL)
    result = run_cli([str(tmp_path / "mm.hlo"), "-o", str(tmp_path / "mm")])
    assert result.exit_code == 0, result.output
    header = (tmp_path / "mm.h").read_text()
    assert "extern int64_t mm_num_threads;" in header and "mm_parallel_for" in header
    (tmp_path / "main.c").write_text(THREADED_MAIN)
    exe = tmp_path / "main"
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pthread", "-I", str(tmp_path),
                    str(tmp_path / "main.c"), str(tmp_path / "mm.o"), "-lm", "-o", str(exe)], check=True)
    a = ((np.arange(96 * 200) * 37) % 101 / 50.0 - 1.0).astype(np.float32).reshape(96, 200)
    b = ((np.arange(200 * 150) * 53) % 97 / 48.0 - 1.0).astype(np.float32).reshape(200, 150)
    want = a.astype(np.float64) @ b
    for threads, calls in (("1", 0), ("3", 1)):
        printed = subprocess.run([str(exe), threads], capture_output=True, text=True, check=True).stdout.split()
        assert int(printed[0]) == calls
        np.testing.assert_allclose([float(printed[1]), float(printed[2])], [want[0, 0], want[-1, -1]], rtol=1e-4)


# -- targets and errors --------------------------------------------------------------------------

def test_cross_target_object_is_aarch64_elf(tmp_path):
    (tmp_path / "axpy.hlo").write_text(AXPY)
    result = run_cli([str(tmp_path / "axpy.hlo"), "-o", str(tmp_path / "arm"),
                      "--target-triple", "aarch64-unknown-linux-gnu"])
    assert result.exit_code == 0, result.output
    data = (tmp_path / "arm.o").read_bytes()
    assert data[:4] == b"\x7fELF"
    assert data[4] == 2 and data[5] == 1  # 64-bit, little-endian
    assert int.from_bytes(data[16:18], "little") == 1  # ET_REL
    assert int.from_bytes(data[18:20], "little") == 183  # EM_AARCH64
    assert "void arm(void** args" in (tmp_path / "arm.h").read_text()


def test_unknown_target_triple_is_a_user_error(tmp_path):
    (tmp_path / "axpy.hlo").write_text(AXPY)
    result = CliRunner().invoke(hlo_aot, [str(tmp_path / "axpy.hlo"), "-o", str(tmp_path / "x"),
                                          "--target-triple", "nonsense-arch"])
    assert result.exit_code == 1 and "unknown target triple" in result.output
    assert not (tmp_path / "x.o").exists()


def test_unsupported_op_is_located_error(tmp_path):
    module = tmp_path / "bad.hlo"
    module.write_text('HloModule bad\n\nENTRY main {\n  p = f32[4] parameter(0)\n'
                      '  ROOT c = f32[4] custom-call(p), custom_call_target="my_unknown_kernel"\n}\n')
    result = CliRunner().invoke(hlo_aot, [str(module), "-o", str(tmp_path / "bad")])
    assert result.exit_code == 1
    assert f"{module}:5:8: error:" in result.output and "my_unknown_kernel" in result.output
    assert not (tmp_path / "bad.o").exists() and not (tmp_path / "bad.h").exists()


def test_refuses_to_overwrite_the_input(tmp_path):
    module = tmp_path / "m.h"  # an HLO module whose name collides with PREFIX.h
    module.write_text(AXPY)
    result = CliRunner().invoke(hlo_aot, [str(module), "-o", str(tmp_path / "m")])
    assert result.exit_code == 1 and "refusing to overwrite" in result.output
    assert module.read_text() == AXPY and not (tmp_path / "m.o").exists()


def test_bad_name_is_rejected(tmp_path):
    (tmp_path / "axpy.hlo").write_text(AXPY)
    result = CliRunner().invoke(hlo_aot, [str(tmp_path / "axpy.hlo"), "-o", str(tmp_path / "x"), "--name", "9-x"])
    assert result.exit_code == 1 and "not a C identifier" in result.output


def test_default_name_is_a_c_identifier():
    assert default_name("out/my-model.v2") == "my_model_v2"
    assert default_name("3d") == "_3d"


# -- library helpers -----------------------------------------------------------------------------

def test_physical_bytes_follow_the_layout():
    from hlo.codegen.aot import from_physical_bytes, physical_dims, to_physical_bytes
    shape = parse_module(TRANSPOSED, "t.hlo").entry.parameters[0].shape  # s32[2,3]{0,1}
    logical = np.array([[1, 3, 5], [2, 4, 6]], np.int32)
    assert physical_dims(shape) == (3, 2)
    data = to_physical_bytes(logical, shape)
    assert np.frombuffer(data, np.int32).tolist() == [1, 2, 3, 4, 5, 6]
    np.testing.assert_array_equal(from_physical_bytes(data, shape), logical)
    scalar = parse_module(AXPY, "a.hlo").entry.parameters[0].shape
    assert from_physical_bytes(to_physical_bytes(np.float32(2.5), scalar), scalar).shape == ()


@pytest.mark.parametrize("type_name, c_type", [("f32", "float"), ("f64", "double"), ("s8", "int8_t"),
                                               ("s64", "int64_t"), ("u32", "uint32_t"), ("pred", "uint8_t"),
                                               ("bf16", "uint16_t"), ("f16", "uint16_t"), ("c64", "float"),
                                               ("c128", "double"), ("s4", "uint8_t"), ("f8e4m3fn", "uint8_t")])
def test_c_element_types(type_name, c_type):
    from hlo.codegen.aot import c_element_type
    module = parse_module(f"HloModule m\n\nENTRY e {{\n  ROOT p = {type_name}[2] parameter(0)\n}}\n", "m.hlo")
    assert c_element_type(module.entry.parameters[0].shape) == c_type
