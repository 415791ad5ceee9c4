"""The multiply's per-target micro-kernels (gemm.py, gemm_ukernel.py): tile shapes chosen from the
target's vector registers, A read in place or packed, edge tiles through masked stores; compiled
for the host, with AVX2 forced and with SSE only, against the interpreter. aarch64: the tile shape
and a cross-compiled kernel without spills in its inner loop."""
import re

import numpy as np
import pytest
from target_cases import ARM, AVX2, HOST, SSE, check as check_targets, private_cache, rand  # noqa: F401

from hlo import parse_module
from hlo.codegen.gemm import PACK_A_PANELS, tiling_for
from hlo.codegen.lowering import lower_module
from hlo.codegen import compile_assembly
from hlo.codegen.target import RegisterFile, register_file
from hlo.codegen.types import F32, F64

TARGETS = {"host": HOST, "avx2": AVX2, "sse": SSE}


def check(text, *arrays, options, tol=1e-4, threads=1):
    check_targets(text, *arrays, options=(options,), rtol=tol, threads=threads)


def dot(m, k, n, t="f32"):
    return f"""HloModule m
ENTRY e {{
  a = {t}[{m},{k}] parameter(0)
  b = {t}[{k},{n}] parameter(1)
  ROOT d = {t}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def test_tile_shapes_follow_the_register_file():
    assert register_file(AVX2) == RegisterFile(256, 16, "x86")
    assert register_file(SSE) == RegisterFile(128, 16, "x86")
    assert register_file(ARM) == RegisterFile(128, 32, "aarch64")
    avx512 = tiling_for(F32, RegisterFile(512, 32))
    assert (avx512.mr, avx512.nr) == (8, 32)
    avx2 = tiling_for(F32, RegisterFile(256, 16))
    assert (avx2.mr, avx2.nr, avx2.nr // avx2.vec) == (4, 24, 3)
    assert avx2.mr * avx2.nvec + avx2.nvec + 1 <= 16       # accumulators, B row, a broadcast
    neon = tiling_for(F64, RegisterFile(128, 32))
    assert (neon.mr, neon.nr) == (8, 6)
    for t in (avx512, avx2, neon):
        assert t.mc % t.mr == 0


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("m,k,n", [
    (37, 70, 30),            # in place (few panels), edge tiles both ways
    (45, 300, 150),          # packed A, K over two blocks, a masked edge panel
    (9, 20, 200),            # packed A with one partial row tile
    (130, 40, 4 * 32 + 3),   # packed on every target, more rows than a row block
    (12, 24, 24),            # an attention-sized product: one panel, partial on AVX-512 (masked loads)
    (64, 9, 17),             # a panel narrower than one vector on the wide targets
])
def test_dot_on_every_target(target, m, k, n):
    check(dot(m, k, n), rand(np.float32, m, k), rand(np.float32, k, n, seed=1), options=TARGETS[target])


@pytest.mark.parametrize("target", ["host", "avx2"])
def test_f64_dot_with_packed_a(target):
    check(dot(21, 90, 97, "f64"), rand(np.float64, 21, 90), rand(np.float64, 90, 97, seed=1),
          options=TARGETS[target], tol=1e-12)


@pytest.mark.parametrize("target", ["host", "avx2"])
def test_convolution_taps_through_packed_a(target):
    text = """HloModule m
ENTRY e {
  x = f32[2,10,9,12] parameter(0)
  k = f32[3,2,12,130] parameter(1)
  ROOT y = f32[2,10,8,130] convolution(x, k), window={size=3x2 pad=1_1x0_1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f
}
"""
    check(text, rand(np.float32, 2, 10, 9, 12), rand(np.float32, 3, 2, 12, 130, seed=1), options=TARGETS[target])


def test_two_threads_pack_into_their_own_regions():
    n = 4 * PACK_A_PANELS * 32 + 5
    check(dot(300, 260, n), rand(np.float32, 300, 260), rand(np.float32, 260, n, seed=1), options=AVX2, threads=2)


def test_aarch64_kernel_keeps_its_accumulators_in_registers():
    asm = compile_assembly(lower_module(parse_module(dot(64, 64, 200), "gemm.hlo"), ARM), ARM)
    fmlas = [line for line in asm.splitlines() if re.search(r"\bfmla\b", line)]
    assert len({line.split()[1].rstrip(",") for line in fmlas}) >= 24       # v0..v23 accumulate
    # the micro-kernel's loop (the block of the multiply-adds) touches no vector on the stack;
    # set-up and edge code around it may
    blocks = re.split(r"\n\.?L\w+:", asm)
    loop = max(blocks, key=lambda block: len(re.findall(r"\bfmla\b", block)))
    assert len(re.findall(r"\bfmla\b", loop)) >= 24
    assert not re.search(r"\b(str|ldr|stp|ldp)\s+q\d+, .*\[sp", loop)


def dot_transposed_rhs(m, k, n, batch=None):
    """x @ W^T: W stored [n, k] (contracting dim minor), as backward passes and LSTMs write it."""
    if batch is None:
        return f"""HloModule m
ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  w = f32[{n},{k}] parameter(1)
  ROOT d = f32[{m},{n}] dot(a, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}
"""
    return f"""HloModule m
ENTRY e {{
  a = f32[{batch},{m},{k}] parameter(0)
  w = f32[{batch},{n},{k}] parameter(1)
  ROOT d = f32[{batch},{m},{n}] dot(a, w), lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_contracting_dims={{2}}
}}
"""


@pytest.mark.parametrize("target", ["host", "avx2"])
@pytest.mark.parametrize("m,k,n,batch", [(40, 70, 50, None), (16, 256, 64, None), (33, 300, 130, None),
                                         (12, 24, 40, 3), (4, 256, 64, None), (8, 90, 33, 2)])
def test_dot_with_a_transposed_rhs_packs_it_where_it_lies(target, m, k, n, batch):
    from hlo.codegen.contraction import top_level_plan
    text = dot_transposed_rhs(m, k, n, batch)
    plan = top_level_plan(parse_module(text, "gemm.hlo").entry.root, None)
    if m > 8:
        assert plan is not None and plan.rhs_transposed and plan.rhs is not None   # no copy of W first
    else:
        assert plan is None                                                        # dot products along k
    lead = () if batch is None else (batch,)
    check(text, rand(np.float32, *lead, m, k), rand(np.float32, *lead, n, k, seed=1), options=TARGETS[target])


def test_transposed_kernel_of_a_convolution_is_packed_where_it_lies():
    text = """HloModule m
ENTRY e {
  x = f32[2,9,9,20] parameter(0)
  k = f32[24,3,3,20]{3,2,1,0} parameter(1)
  ROOT y = f32[2,4,4,24] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=b01f_o01i->b01f
}
"""
    from hlo.codegen.contraction import top_level_plan
    plan = top_level_plan(parse_module(text, "gemm.hlo").entry.root, None)
    assert plan is not None and plan.rhs_transposed
    check(text, rand(np.float32, 2, 9, 9, 20), rand(np.float32, 24, 3, 3, 20, seed=1), options=AVX2)
