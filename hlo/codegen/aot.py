"""Ahead-of-time compilation: an HLO module -> an object file and a C/C++ header.

    compile_aot(module, name, options) -> AotArtifacts(object_code, header, lowered)
    generate_header(lowered, name) -> str
    to_physical_bytes(array, shape) / from_physical_bytes(data, shape)

The object defines one function with the entry ABI of hlo.codegen:

    void NAME(void** args, void** results, void* temp);

args[i] points to argument i's dense buffer (tuple parameters flattened
depth-first), results[j] to result leaf j's buffer (tuple results flattened
depth-first) and temp to a 64-byte aligned scratch buffer of NAME_TEMP_SIZE bytes.
Every buffer holds its elements in the *physical order* of its layout: the
dimension listed last in minor_to_major varies slowest. For the default layouts
({1,0}, {2,1,0}, ...) that is C row-major order. The object needs only libc/libm.

The header (see generate_header) gives every argument's and result's element type,
rank, logical dimensions, minor_to_major, byte size, the temp size, and under
__cplusplus a wrapper class NAME_Class owning 64-byte aligned buffers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..ir import Module
from ..shapes import Shape, TypeKind
from .build import compile_object
from .compile_report import CompileStats, ProgressBar
from .gemm import MAX_THREADS
from .lapack_calls import link_comment
from .lowering import lower_module
from .options import CodegenOptions, LoweredModule

__all__ = ["AotArtifacts", "compile_aot", "generate_header", "is_c_identifier", "c_element_type",
           "to_physical_bytes", "from_physical_bytes", "physical_dims", "layout_in_words"]

ALIGNMENT = 64
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class AotArtifacts:
    object_code: bytes
    header: str
    lowered: LoweredModule


def is_c_identifier(name: str) -> bool:
    return bool(_IDENTIFIER.match(name))


def compile_aot(module: Module, name: str, options: CodegenOptions = CodegenOptions(),
                stats: Optional[CompileStats] = None, progress: Optional[ProgressBar] = None) -> AotArtifacts:
    """Lower `module` to an object defining `name` plus the header describing it. stats, when
    given, receives the compile's phases and counts; progress is drawn while parts compile."""
    if not is_c_identifier(name):
        raise ValueError(f"{name!r} is not a C identifier")
    stats = stats if stats is not None else CompileStats()
    lowered = lower_module(module, options, name, stats)
    return AotArtifacts(compile_object(lowered, options, stats, progress), generate_header(lowered, name), lowered)


# -- element types -------------------------------------------------------------------------------

def c_element_type(shape: Shape) -> str:
    """The C type of one stored element (types C lacks travel as raw bits of their width)."""
    t = shape.element_type
    size = t.byte_size
    if t.name == "pred":
        return "uint8_t"
    if t.kind == TypeKind.COMPLEX:
        return "float" if size == 8 else "double"  # an element is two of these: (real, imaginary)
    if t.name == "f32":
        return "float"
    if t.name == "f64":
        return "double"
    if t.kind == TypeKind.SIGNED and t.bits >= 8:
        return f"int{size * 8}_t"
    return f"uint{size * 8}_t"  # unsigned ints, f16/bf16/f8 raw bits, sub-byte ints one per byte


def _scalars_per_element(shape: Shape) -> int:
    return 2 if shape.element_type.kind == TypeKind.COMPLEX else 1


# -- physical order ------------------------------------------------------------------------------

def _physical_order(shape: Shape) -> list[int]:
    return list(reversed(shape.minor_to_major()))


def physical_dims(shape: Shape) -> tuple[int, ...]:
    """The dimensions in buffer order (slowest varying first)."""
    return tuple(shape.dims[d] for d in _physical_order(shape))


def to_physical_bytes(array, shape: Shape) -> bytes:
    """A logical-order array (storage dtype, e.g. bf16 as ml_dtypes or raw bits) as buffer bytes."""
    array = np.asarray(array)
    if array.dtype != shape.element_type.dtype:
        array = array.view(shape.element_type.dtype) if array.dtype.itemsize == shape.element_type.dtype.itemsize \
            else array.astype(shape.element_type.dtype)
    if shape.rank:
        array = np.transpose(array.reshape(shape.dims), _physical_order(shape))
    return np.ascontiguousarray(array).tobytes()


def from_physical_bytes(data: bytes, shape: Shape) -> np.ndarray:
    """Buffer bytes back to a logical-order array of the storage dtype."""
    flat = np.frombuffer(data, dtype=shape.element_type.dtype)
    if not shape.rank:
        return flat.reshape(()).copy()
    order = _physical_order(shape)
    inverse = [order.index(d) for d in range(shape.rank)]
    return np.ascontiguousarray(np.transpose(flat.reshape(physical_dims(shape)), inverse))


# -- header --------------------------------------------------------------------------------------

def _int_list(values) -> str:
    return ", ".join(str(v) for v in values)


def _buffer_block(name: str, kind: str, index: int, shape: Shape) -> list[str]:
    """Constants describing one argument or result buffer, its layout in words and its index helper."""
    p = f"{name}_{kind}{index}"
    rank = shape.rank
    dims = list(shape.dims) if rank else [1]
    m2m = list(shape.minor_to_major()) if rank else [0]
    return [
        f"/* {kind} {index}: {shape}",
        *[f"   {line}" for line in layout_in_words(shape, f"{p}_index")],
        "*/",
        f"typedef {c_element_type(shape)} {p}_t;" + ("  /* two per element: real, imaginary */"
                                                    if _scalars_per_element(shape) == 2 else ""),
        f"#define {p}_type \"{shape.element_type.name}\"",
        f"#define {p}_element_size ((size_t){shape.element_type.byte_size})",
        f"#define {p}_rank {rank}",
        f"#define {p}_num_elements ((size_t){_count(shape)})",
        f"#define {p}_size ((size_t){shape.byte_size()})",
        f"static const int64_t {p}_dims[{len(dims)}] = {{{_int_list(dims)}}};" + ("  /* rank 0: placeholder */"
                                                                                  if not rank else ""),
        f"static const int64_t {p}_minor_to_major[{len(m2m)}] = {{{_int_list(m2m)}}};",
        _index_function(p, shape),
        "",
    ]


def _strides(shape: Shape) -> list[int]:
    """Elements between neighbours along each logical dimension of the buffer."""
    strides, step = [0] * shape.rank, 1
    for d in shape.minor_to_major():
        strides[d] = step
        step *= shape.dims[d]
    return strides


def _offset_formula(shape: Shape) -> str:
    by_stride = sorted(enumerate(_strides(shape)), key=lambda ds: -ds[1])
    return " + ".join(f"i{d}" if stride == 1 else f"{stride}*i{d}" for d, stride in by_stride)


def layout_in_words(shape: Shape, helper: str) -> list[str]:
    """Where element (i0, i1, ...) of a buffer lies, said plainly (for the header's comments)."""
    if shape.rank == 0:
        return ["one element."]
    m2m = list(shape.minor_to_major())
    indices = ", ".join(f"i{d}" for d in range(shape.rank))
    if shape.rank == 1:
        order = "one dimension, contiguous;"
    elif m2m == list(reversed(range(shape.rank))):
        order = "row-major (C order): the last dimension varies fastest;"
    elif m2m == list(range(shape.rank)):
        order = "COLUMN-MAJOR (Fortran order, not C's): the first dimension varies fastest;"
    else:
        order = ("dimension " + ", then ".join(str(d) for d in m2m) + " (fastest varying first), "
                 "neither row- nor column-major;")
    return [order, f"element ({indices}) is at {_offset_formula(shape)}: {helper}({indices})."]


def _index_function(p: str, shape: Shape) -> str:
    """`P_index(i0, i1, ...)`: the position of an element in the buffer, in elements (a macro:
    the header stays C89)."""
    params = ", ".join(f"i{d}" for d in range(shape.rank))
    by_stride = sorted(enumerate(_strides(shape)), key=lambda ds: -ds[1])
    body = " + ".join(f"(size_t)(i{d})" + (f" * {stride}" if stride != 1 else "") for d, stride in by_stride)
    return f"#define {p}_index({params}) ({body or '(size_t)0'})"


def _count(shape: Shape) -> int:
    return int(np.prod(shape.dims, dtype=np.int64)) if shape.rank else 1


def _size_table(name: str, label: str, shapes: list[Shape]) -> str:
    sizes = [s.byte_size() for s in shapes] or [0]
    return f"static const size_t {name}_{label}_sizes[{len(sizes)}] = {{{_int_list(sizes)}}};"


_HEADER_COMMENT = """\
/* Generated by hlo-aot: do not edit.

   void {name}(void** args, void** results, void* temp);

   args[i]    -> argument i's buffer ({num_args} arguments, tuple parameters flattened depth-first)
   results[j] -> result leaf j's buffer ({num_results} results, tuple results flattened depth-first)
   temp       -> scratch of {name}_TEMP_SIZE bytes, 64-byte aligned (may be NULL when the size is 0)

   Layout: every buffer is dense, its elements in the physical order of its layout: the
   dimension listed last in {name}_<buf>_minor_to_major varies slowest. For the default
   layouts ({{1,0}}, {{2,1,0}}, ...) that is C row-major order over {name}_<buf>_dims; other
   layouts are not (JAX's gradients often come back column-major, {{0,1}}). Each buffer's
   comment below says its order in words, and {name}_<buf>_index(i0, i1, ...) gives the
   position of element (i0, i1, ...) in its buffer, counted in elements.
   Element types C lacks travel as raw bits (bf16/f16 as uint16_t, f8 as uint8_t, sub-byte
   integers one per byte); complex elements are (real, imaginary) pairs. pred is one byte
   (0 or 1). Buffers should be 64-byte aligned. The object needs only libc and libm
   (and LAPACK when the module has LAPACK custom calls: see {name}_LINK_FLAGS below).
*/"""

_THREADS_BLOCK = """\
/* Threads (optional). Large dot and convolution kernels split their output columns into
   {name}_num_threads parts (1 by default; at most {parts} are used) and hand them to
   {name}_parallel_for when it is set: it must call task(context, part) once for every
   0 <= part < parts, on any threads, and return when every call has returned. NULL (the
   default) runs the parts one after another on the calling thread. Each part works in its
   own region of temp, so one temp buffer serves them all; calls of {name} itself that share
   a temp buffer must not overlap. */
typedef void (*{name}_task_fn)(void* context, int64_t part);
extern int64_t {name}_num_threads;
extern void (*{name}_parallel_for)({name}_task_fn task, void* context, int64_t parts);"""

_CPP_CLASS = """\
#ifdef __cplusplus
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

/* Owns 64-byte aligned argument, result and temp buffers (zero-filled); not copyable.
   Fill arg_data(i), call Run(), read result_data(j). */
class {name}_Class {{
 public:
  static const int kNumArgs = {name}_NUM_ARGS;
  static const int kNumResults = {name}_NUM_RESULTS;

  {name}_Class() {{
    for (int i = 0; i < kNumArgs; ++i) args_[i] = Allocate({name}_arg_sizes[i]);
    for (int j = 0; j < kNumResults; ++j) results_[j] = Allocate({name}_result_sizes[j]);
    temp_ = Allocate({name}_TEMP_SIZE);
  }}
  ~{name}_Class() {{
    for (int i = 0; i < kNumArgs; ++i) std::free(args_[i]);
    for (int j = 0; j < kNumResults; ++j) std::free(results_[j]);
    std::free(temp_);
  }}
  {name}_Class(const {name}_Class&) = delete;
  {name}_Class& operator=(const {name}_Class&) = delete;

  void* arg_data(int i) {{ return args_[i]; }}
  const void* arg_data(int i) const {{ return args_[i]; }}
  void* result_data(int j) {{ return results_[j]; }}
  const void* result_data(int j) const {{ return results_[j]; }}
  static size_t arg_size(int i) {{ return {name}_arg_sizes[i]; }}
  static size_t result_size(int j) {{ return {name}_result_sizes[j]; }}
  static size_t temp_size() {{ return {name}_TEMP_SIZE; }}

  void Run() {{ {name}(args_, results_, temp_); }}

 private:
  static void* Allocate(size_t size) {{
    size_t rounded = (size + {align} - 1) / {align} * {align};
    void* p = NULL;
    if (posix_memalign(&p, {align}, rounded ? rounded : {align}) != 0) throw std::bad_alloc();
    std::memset(p, 0, rounded ? rounded : {align});
    return p;
  }}
  void* args_[{args_capacity}];
  void* results_[{results_capacity}];
  void* temp_;
}};
#endif  /* __cplusplus */"""


def collectives_block(name: str) -> str:
    """The hook table a module with collectives calls (hlo/runtime/c/hlo_collectives.h, inlined)."""
    types = (Path(__file__).resolve().parent.parent / "runtime" / "c" / "hlo_collectives.h").read_text()
    return (f"/* Collectives: set {name}_collectives before calling {name}; hlo_collectives_mpi.c (shipped\n"
            f"   with the toolchain, see docs/DISTRIBUTED.md) fills a table on MPI. */\n{types}\n"
            f"extern hlo_collectives_table* {name}_collectives;")


def generate_header(lowered: LoweredModule, name: str) -> str:
    """The C header (with a C++ wrapper class) for the object that defines `name`."""
    guard = f"HLO_AOT_{name.upper()}_H_"
    lines = [_HEADER_COMMENT.format(name=name, num_args=len(lowered.params), num_results=len(lowered.results)),
             f"#ifndef {guard}", f"#define {guard}", "",
             "#include <stddef.h>", "#include <stdint.h>", "#include <stdlib.h>", "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             f"void {name}(void** args, void** results, void* temp);", "",
             _THREADS_BLOCK.format(name=name, parts=MAX_THREADS), "",
             *([collectives_block(name), ""] if f"{name}_collectives" in lowered.llvm_ir else []),
             *([link_comment(name), ""] if lowered.libraries else []),
             f"#define {name}_NUM_ARGS {len(lowered.params)}",
             f"#define {name}_NUM_RESULTS {len(lowered.results)}",
             f"#define {name}_TEMP_SIZE ((size_t){lowered.temp_bytes})",
             f"#define {name}_ALIGNMENT {ALIGNMENT}", ""]
    for i, shape in enumerate(lowered.params):
        lines += _buffer_block(name, "arg", i, shape)
    for j, shape in enumerate(lowered.results):
        lines += _buffer_block(name, "result", j, shape)
    lines += ["/* Byte sizes indexed by argument / result number (one placeholder 0 when there are none). */",
              _size_table(name, "arg", lowered.params), _size_table(name, "result", lowered.results), "",
              "#ifdef __cplusplus", '}  /* extern "C" */', "#endif", "",
              _CPP_CLASS.format(name=name, align=ALIGNMENT, args_capacity=max(len(lowered.params), 1),
                                results_capacity=max(len(lowered.results), 1)),
              "", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)
