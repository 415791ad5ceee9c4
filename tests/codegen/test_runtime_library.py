"""The runtime library (the blocked multiply) is built once per target, outside every module's
compile, and called by tagged name; kernels reach the compile workers while lowering goes on."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen import compile_pool, runtime_library
from hlo.codegen.build import PartStream, linked_module, part_objects
from hlo.codegen.gemm import runtime_symbol
from hlo.codegen.runtime_library import EXPORTED_FUNCTIONS
from hlo.codegen.target import OutputKind
from hlo.text.parser import parse_module

DOT = """HloModule dot
ENTRY e {
  a = f32[64,96] parameter(0)
  b = f32[96,80] parameter(1)
  d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[64,80] tanh(d)
}
"""
DOT64 = DOT.replace("f32", "f64")
AVX2 = "-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd"


def inputs(dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((64, 96)).astype(dtype), rng.standard_normal((96, 80)).astype(dtype)


def test_kernels_call_the_runtime_by_tagged_name_and_never_define_it():
    options = CodegenOptions()
    lowered = lower_module(parse_module(DOT), options)
    tag = runtime_library.runtime_tag(options)
    assert lowered.runtime == [runtime_symbol(tag, "gemm.f32")]
    text = "\n".join(p.llvm_ir for p in lowered.parts)
    assert f'declare void @"{runtime_symbol(tag, "gemm.f32")}"' in text
    assert "define" not in [line.split()[0] for line in text.splitlines() if "hlo.rt." in line and line.strip()]
    assert "hlo.gemm_ukernel" not in text   # the micro-kernels live in the runtime only


def test_a_module_without_products_needs_no_runtime():
    text = "HloModule m\nENTRY e {\n  x = f32[256] parameter(0)\n  ROOT y = f32[256] exponential(x)\n}\n"
    assert lower_module(parse_module(text), CodegenOptions()).runtime == []


def test_tags_name_the_target_and_the_level():
    host = runtime_library.runtime_tag(CodegenOptions())
    assert host == runtime_library.runtime_tag(CodegenOptions(opt_level=2))   # the library is O1 from O1 up
    assert host != runtime_library.runtime_tag(CodegenOptions(opt_level=0))
    assert host != runtime_library.runtime_tag(CodegenOptions(features=AVX2))


def test_the_runtime_defines_every_exported_function():
    options = CodegenOptions()
    tag = runtime_library.runtime_tag(options)
    text = runtime_library.runtime_ir(options)
    for function in EXPORTED_FUNCTIONS:
        assert f'define void @"{runtime_symbol(tag, function)}"' in text


def test_two_targets_live_side_by_side_in_one_process():
    a, b = inputs()
    want = np.tanh(a.astype(np.float64) @ b.astype(np.float64))
    for options in (CodegenOptions(), CodegenOptions(features=AVX2), CodegenOptions(opt_level=0)):
        got = JitExecutable(parse_module(DOT), options, threads=1).run(a, b)[0]
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_f64_and_threads_use_their_own_entry_points():
    a, b = inputs(np.float64)
    want = np.tanh(a @ b)
    for threads in (1, 2):
        got = JitExecutable(parse_module(DOT64), CodegenOptions(), threads=threads).run(a, b)[0]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


_CHILD = """
import json, sys, numpy as np
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.text.parser import parse_module
ex = JitExecutable(parse_module(sys.argv[1]), CodegenOptions(), threads=1)
rng = np.random.default_rng(0)
out = ex.run(rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32))[0]
print(json.dumps({"built": "runtime library" in ex.stats.wall, "sum": float(out.sum())}))
"""


def _child(text: str, runtime: str, cache: str) -> dict:
    env = dict(os.environ, HLO_RUNTIME_CACHE=runtime, XDG_CACHE_HOME=cache)
    done = subprocess.run([sys.executable, "-c", _CHILD, text], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_built_once_per_machine_then_read_and_rebuilt_when_damaged(tmp_path):
    runtime = tmp_path / "runtime"
    first = _child(DOT, str(runtime), str(tmp_path / "c1"))
    assert first["built"] and len(list(runtime.iterdir())) == 1
    second = _child(DOT, str(runtime), str(tmp_path / "c2"))   # a new process, an empty parts cache
    assert not second["built"] and second["sum"] == first["sum"]
    stored = next(runtime.iterdir())
    stored.write_bytes(stored.read_bytes()[:-100])              # a damaged file is built again
    third = _child(DOT, str(runtime), str(tmp_path / "c3"))
    assert third["built"] and third["sum"] == first["sum"]


LAYERS = """HloModule layers
ENTRY e {
  x = f32[64,64] parameter(0)
  w = f32[64,64] parameter(1)
  a = f32[64,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[64,64] tanh(a)
  c = f32[64,64] dot(b, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d = f32[64,64] exponential(c)
  ROOT r = f32[64,64] add(d, x)
}
"""


def test_kernels_streamed_to_running_workers_give_the_objects_of_a_serial_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "serial"))
    options = CodegenOptions(jobs=1)
    serial = part_objects(lower_module(parse_module(LAYERS), options), options)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "streamed"))
    options = CodegenOptions(jobs=2)
    compile_pool.start_workers(2)
    stream = PartStream(options)
    assert stream.pool is not None
    lowered = lower_module(parse_module(LAYERS), options, on_kernel=stream.submit)
    assert set(stream.started) == {p.name for p in lowered.kernels}
    streamed = part_objects(lowered, options, stream=stream)
    assert streamed == serial


def test_a_kernel_raised_after_it_was_sent_compiles_again_as_it_ends_up(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    options = CodegenOptions(jobs=2)
    compile_pool.start_workers(2)
    stream = PartStream(options)
    lowered = lower_module(parse_module(LAYERS), options, on_kernel=stream.submit)
    kernel = lowered.kernels[0]
    kernel.opt_level, kernel.vectorize = 3, True   # as _strengthen does for a kernel called in a loop
    assert kernel.name not in stream.futures(lowered.parts)
    objects = part_objects(lowered, options, stream=stream, kind=OutputKind.OBJECT)
    assert set(objects) == {p.name for p in lowered.parts}


def test_without_running_workers_nothing_is_streamed():
    assert PartStream(CodegenOptions(jobs=1)).pool is None


def test_an_object_keeps_only_the_runtime_functions_its_kernels_call():
    linked = linked_module(lower_module(parse_module(DOT), CodegenOptions()), CodegenOptions())
    runtime = [f.name for f in linked.functions if "hlo.rt." in f.name and not f.is_declaration]
    assert runtime and all(name.endswith(".f32") for name in runtime)   # no f64 or parallel entry points


HEAVY_LAST = """HloModule heavy_last
ENTRY e {
  x = f32[1,16,16,6] parameter(0)
  k = f32[4,4,6,3] parameter(1)
  n = f32[1,16,16,6] negate(x)
  ROOT y = f32[1,34,34,3] convolution(n, k), window={size=4x4 pad=3_3x3_3 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
}
"""


def test_the_heaviest_kernel_streams_first_and_the_lowering_is_the_same():
    options = CodegenOptions()
    sent = []
    streamed = lower_module(parse_module(HEAVY_LAST), options, on_kernel=sent.append)
    walked = lower_module(parse_module(HEAVY_LAST), options)
    assert "convolution" not in walked.kernels[0].llvm_ir and len(sent) == 2
    assert sent[0].work > sent[1].work and sent == sorted(streamed.kernels, key=lambda p: -p.work)
    assert streamed.parts[0].llvm_ir == walked.parts[0].llvm_ir      # the driver: calls in program order
    assert sorted(p.llvm_ir for p in streamed.kernels) == sorted(p.llvm_ir for p in walked.kernels)


def test_strength_reduction_is_the_runtime_librarys_alone(monkeypatch, tmp_path):
    from hlo.codegen import object_cache, target
    from hlo.codegen.options import Part
    kernel = lower_module(parse_module(HEAVY_LAST), CodegenOptions()).kernels[0]
    assert not kernel.strength_reduction
    on = Part(kernel.name, kernel.llvm_ir, kernel.opt_level, kernel.work, kernel.vectorize, strength_reduction=True)
    options = CodegenOptions()
    assert object_cache.part_key(kernel, options, OutputKind.OBJECT, True) != \
        object_cache.part_key(on, options, OutputKind.OBJECT, True)
    without = target.compile_part(kernel, options, OutputKind.OBJECT, True).data
    with_it = target.compile_part(on, options, OutputKind.OBJECT, True).data
    assert without != with_it
    assert target.compile_part(kernel, options, OutputKind.OBJECT, True).data == without   # switched back
    monkeypatch.setenv("HLO_RUNTIME_CACHE", str(tmp_path))
    built = []
    monkeypatch.setattr(runtime_library, "compile_part", lambda part, *a: built.append(part) or target.compile_part(part, *a))
    monkeypatch.setattr(runtime_library, "_BUILT", {})
    runtime_library.runtime_code(CodegenOptions(opt_level=1))
    assert built and all(part.strength_reduction for part in built)
