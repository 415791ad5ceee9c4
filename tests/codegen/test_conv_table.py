"""conv_table, the runtime library's builder of a convolution's indirection table, called on its
own against a Python model of the table over random geometries (1 to 3 spatial dimensions,
strides, padding of either sign, window and base dilation, reversed windows), and kernels that
call it instead of carrying the table's loops."""
import ctypes
import itertools

import llvmlite.binding as llvm
import numpy as np
import pytest

from hlo.codegen import CodegenOptions, conv_table, lower_module, runtime_library
from hlo.codegen.gemm import runtime_symbol
from hlo.text.parser import parse_module

A, ZEROS = 1 << 24, 64      # stand-ins for the input's and the zero row's addresses


@pytest.fixture(scope="module")
def build_table(tmp_path_factory):
    import os
    os.environ.setdefault("HLO_RUNTIME_CACHE", str(tmp_path_factory.mktemp("runtime")))
    options = CodegenOptions()
    runtime_library.load_for_jit(options)
    address = llvm.address_of_symbol(runtime_symbol(runtime_library.runtime_tag(options), "conv_table"))
    function = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(address)

    def build(batch, batch_stride, dims):
        entries = batch * int(np.prod([d["outputs"] * d["taps"] for d in dims]))
        table = np.zeros(entries + 1, np.uint64)
        offsets = np.full(conv_table.offsets_bytes(dims) // 8 + 1, 12345, np.int64)
        geometry = np.array(conv_table.geometry(batch, batch_stride, dims), np.int64)
        function(table.ctypes.data, A, ZEROS, geometry.ctypes.data, offsets.ctypes.data)
        assert table[-1] == 0 and offsets[-1] == 12345, "wrote past its table or its scratch"
        return table[:-1]
    return build


def model(batch, batch_stride, dims):
    """The table as the multiply reads it: row-major over (batch, output pixel..., tap...)."""
    out = []
    for n in range(batch):
        for pixel in itertools.product(*[range(d["outputs"]) for d in dims]):
            for taps in itertools.product(*[range(d["taps"]) for d in dims]):
                offset, reads = n * batch_stride, True
                for d, o, t in zip(dims, pixel, taps):
                    k = d["taps"] - 1 - t if d["reversed"] else t
                    position = o * d["stride"] - d["padding_low"] + k * d["window_dilation"]
                    index, rest = divmod(position, d["base_dilation"])
                    reads = reads and position >= 0 and rest == 0 and index < d["input_size"]
                    offset += index * d["input_stride"]
                out.append(A + offset if reads else ZEROS)
    return np.array(out, np.uint64)


def random_dim(rng, stride_bytes):
    return dict(outputs=int(rng.integers(1, 9)), taps=int(rng.integers(1, 6)), stride=int(rng.integers(1, 4)),
                padding_low=int(rng.integers(-3, 5)), window_dilation=int(rng.integers(1, 4)),
                base_dilation=int(rng.integers(1, 4)), reversed=int(rng.integers(0, 2)),
                input_size=int(rng.integers(1, 9)), input_stride=stride_bytes)


@pytest.mark.parametrize("seed", range(40))
def test_the_runtime_table_matches_the_model(build_table, seed):
    rng = np.random.default_rng(seed)
    spatial = 1 + seed % 3
    dims = [random_dim(rng, 4 * 10 ** (spatial - s)) for s in range(spatial)]
    batch = int(rng.integers(1, 4))
    got = build_table(batch, 999_000, dims)
    want = model(batch, 999_000, dims)
    np.testing.assert_array_equal(got, want)


def test_a_convolution_kernel_calls_it_instead_of_carrying_the_loops():
    text = """HloModule m
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,6] parameter(1)
  ROOT y = f32[1,16,16,6] convolution(x, k), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
}
"""
    options = CodegenOptions()
    lowered = lower_module(parse_module(text), options)
    tag = runtime_library.runtime_tag(options)
    assert runtime_symbol(tag, "conv_table") in lowered.runtime
    kernel = "\n".join(p.llvm_ir for p in lowered.parts)
    assert "srem" not in kernel and "sdiv" not in kernel
