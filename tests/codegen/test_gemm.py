"""dot and convolution through the blocked multiply (hlo/codegen/gemm.py, contraction.py).

Sizes are chosen to cross the thresholds of contraction.plan (so the multiply is used)
and to leave edge tiles in both directions; layouts and fusions exercise the paths that
read operands in place, copy them into order first, and feed an epilogue.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen.contraction import top_level_plan
from hlo.interpreter import run

RAW = CodegenOptions(run_pipeline=False)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def rand(dtype, *dims, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, dims).astype(dtype)


def check(text, *arrays, rtol=1e-5, atol=1e-5, threads=1, options=(RAW, CodegenOptions())):
    module = parse_module(text, "gemm.hlo")
    want = run(module, *arrays)
    for opts in options:
        got = JitExecutable(module, opts, threads=threads).run(*arrays)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)


def uses_gemm(text: str) -> bool:
    return bool(lower_module(parse_module(text, "gemm.hlo"), RAW).runtime)


def dot_module(m, k, n, t="f32", lhs_layout="{1,0}", rhs_layout="{1,0}", out_layout="{1,0}", transpose_lhs=False):
    lhs_dims, lc = ((k, m), 0) if transpose_lhs else ((m, k), 1)
    return f"""HloModule m
ENTRY e {{
  a = {t}[{lhs_dims[0]},{lhs_dims[1]}]{lhs_layout} parameter(0)
  b = {t}[{k},{n}]{rhs_layout} parameter(1)
  ROOT d = {t}[{m},{n}]{out_layout} dot(a, b), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{0}}
}}
"""


@pytest.mark.parametrize("m,k,n", [(64, 64, 64), (37, 300, 53), (8, 50, 100), (129, 17, 31), (5, 1000, 7)])
def test_dot_shapes_with_edge_tiles(m, k, n):
    text = dot_module(m, k, n)
    assert uses_gemm(text)
    check(text, rand(np.float32, m, k), rand(np.float32, k, n, seed=1))


@pytest.mark.parametrize("layouts", [("{0,1}", "{1,0}", "{1,0}"), ("{1,0}", "{0,1}", "{1,0}"),
                                     ("{1,0}", "{1,0}", "{0,1}"), ("{0,1}", "{0,1}", "{0,1}")])
def test_dot_operand_and_result_layouts(layouts):
    text = dot_module(40, 70, 50, lhs_layout=layouts[0], rhs_layout=layouts[1], out_layout=layouts[2])
    assert uses_gemm(text)
    check(text, rand(np.float32, 40, 70), rand(np.float32, 70, 50, seed=1))


def test_dot_contracting_the_major_dimension():
    text = dot_module(40, 70, 50, transpose_lhs=True)
    check(text, rand(np.float32, 70, 40), rand(np.float32, 70, 50, seed=1))


@pytest.mark.parametrize("t,dtype,tol", [("f64", np.float64, 1e-12), ("bf16", None, 2e-2), ("f16", np.float16, 2e-3)])
def test_dot_element_types(t, dtype, tol):
    import ml_dtypes
    dtype = dtype or ml_dtypes.bfloat16
    text = dot_module(33, 65, 40, t=t)
    assert uses_gemm(text)
    check(text, rand(dtype, 33, 65), rand(dtype, 65, 40, seed=1), rtol=tol, atol=tol)


def test_batched_dot_with_several_free_and_contracting_dims():
    text = """HloModule m
ENTRY e {
  a = f32[3,6,5,4,7] parameter(0)
  b = f32[3,4,7,9,2] parameter(1)
  ROOT d = f32[3,6,5,9,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={3,4}, rhs_contracting_dims={1,2}
}
"""
    assert uses_gemm(text)
    check(text, rand(np.float32, 3, 6, 5, 4, 7), rand(np.float32, 3, 4, 7, 9, 2, seed=1))


def test_mixed_precision_dot():
    import ml_dtypes
    text = """HloModule m
ENTRY e {
  a = bf16[32,48] parameter(0)
  b = bf16[48,40] parameter(1)
  ROOT d = f32[32,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    check(text, rand(ml_dtypes.bfloat16, 32, 48), rand(ml_dtypes.bfloat16, 48, 40, seed=1))


def test_dense_layer_fusion_with_bias_and_relu():
    text = """HloModule m
ENTRY e {
  x = f32[64,100] parameter(0)
  w = f32[100,70] parameter(1)
  bias = f32[70] parameter(2)
  res = f32[64,70] parameter(3)
  d = f32[64,70] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,70] broadcast(bias), dimensions={1}
  s = f32[64,70] add(d, bb)
  z = f32[] constant(0)
  zb = f32[64,70] broadcast(z), dimensions={}
  r = f32[64,70] maximum(s, zb)
  ROOT o = f32[64,70] add(r, res)
}
"""
    module = parse_module(text, "gemm.hlo")
    lowered = lower_module(module, CodegenOptions())
    assert lowered.runtime
    check(text, rand(np.float32, 64, 100), rand(np.float32, 100, 70, seed=1), rand(np.float32, 70, seed=2),
          rand(np.float32, 64, 70, seed=3), options=(CodegenOptions(),))


def test_fusion_whose_dot_reads_a_transposed_operand():
    text = """HloModule m
fused {
  p0 = f32[50,40] parameter(0)
  p1 = f32[50,30] parameter(1)
  t = f32[40,50] transpose(p0), dimensions={1,0}
  ROOT d = f32[40,30] dot(t, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY e {
  a = f32[50,40] parameter(0)
  b = f32[50,30] parameter(1)
  ROOT f = f32[40,30] fusion(a, b), kind=kOutput, calls=fused
}
"""
    assert uses_gemm(text)
    check(text, rand(np.float32, 50, 40), rand(np.float32, 50, 30, seed=1), options=(RAW,))


def conv_module(n, h, w, c, kh, kw, o, window, labels="b01f_01io->b01f", out_hw=None, t="f32"):
    oh, ow = out_hw
    return f"""HloModule m
ENTRY e {{
  x = {t}[{n},{h},{w},{c}] parameter(0)
  k = {t}[{kh},{kw},{c},{o}] parameter(1)
  ROOT y = {t}[{n},{oh},{ow},{o}] convolution(x, k), window={{{window}}}, dim_labels={labels}
}}
"""


@pytest.mark.parametrize("window,out_hw", [
    ("size=3x3 pad=1_1x1_1", (12, 10)),
    ("size=3x3", (10, 8)),
    ("size=3x3 stride=2x2 pad=1_1x1_1", (6, 5)),
    ("size=3x3 pad=2_2x2_2 rhs_dilate=2x2", (12, 10)),
    ("size=3x3 pad=0_2x1_0", (12, 9)),
])
def test_convolution_windows(window, out_hw):
    text = conv_module(2, 12, 10, 16, 3, 3, 24, window, out_hw=out_hw)
    assert uses_gemm(text)
    check(text, rand(np.float32, 2, 12, 10, 16), rand(np.float32, 3, 3, 16, 24, seed=1), rtol=1e-4, atol=1e-4)


def test_convolution_in_nchw_oihw_layout_is_reordered_first():
    text = """HloModule m
ENTRY e {
  x = f32[2,8,12,10] parameter(0)
  k = f32[16,8,3,3] parameter(1)
  ROOT y = f32[2,16,12,10] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
"""
    assert uses_gemm(text)
    check(text, rand(np.float32, 2, 8, 12, 10), rand(np.float32, 16, 8, 3, 3, seed=1), rtol=1e-4, atol=1e-4)


def test_one_dimensional_convolution_in_f64():
    text = """HloModule m
ENTRY e {
  x = f64[3,40,8] parameter(0)
  k = f64[5,8,12] parameter(1)
  ROOT y = f64[3,36,12] convolution(x, k), window={size=5}, dim_labels=b0f_0io->b0f
}
"""
    assert uses_gemm(text)
    check(text, rand(np.float64, 3, 40, 8), rand(np.float64, 5, 8, 12, seed=1), rtol=1e-12, atol=1e-12)


def test_grouped_convolution_keeps_the_elemental_loops():
    text = conv_module(1, 8, 8, 16, 3, 3, 16, "size=3x3 pad=1_1x1_1", out_hw=(8, 8)).replace(
        "dim_labels=", "feature_group_count=2, dim_labels=").replace("16] parameter(1)", "16] parameter(1)")
    text = text.replace("k = f32[3,3,16,16]", "k = f32[3,3,8,16]")
    assert top_level_plan(parse_module(text, "g.hlo").entry.root, None) is None
    check(text, rand(np.float32, 1, 8, 8, 16), rand(np.float32, 3, 3, 8, 16, seed=1), rtol=1e-4, atol=1e-4)


def test_small_products_keep_the_elemental_loops():
    assert not uses_gemm(dot_module(4, 4, 4))
    assert not uses_gemm(dot_module(1, 300, 300))   # a matrix-vector product


@pytest.mark.parametrize("m,k,n", [(4, 64, 256), (4, 64, 250), (7, 600, 100), (16, 64, 37), (5, 900, 8)])
def test_few_rows_read_b_where_it_lies(m, k, n):
    """At most IN_PLACE_B_TILES row tiles: B's full panels are read in place (row stride n, not
    vector-aligned for odd n), the last partial one packed; K in several blocks (600, 900)."""
    text = dot_module(m, k, n)
    assert uses_gemm(text)
    check(text, rand(np.float32, m, k), rand(np.float32, k, n, seed=1), rtol=1e-4, atol=1e-4)
    batched = f"""HloModule m
ENTRY e {{
  a = f32[3,{m},{k}] parameter(0)
  b = f32[3,{k},{n}] parameter(1)
  ROOT d = f32[3,{m},{n}] dot(a, b), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
}}
"""
    check(batched, rand(np.float32, 3, m, k), rand(np.float32, 3, k, n, seed=1), rtol=1e-4, atol=1e-4)


def test_small_convolution_reads_its_kernel_where_it_lies():
    """A convolution with a few output pixels: taps x input features rows of the kernel in place."""
    text = conv_module(1, 3, 3, 20, 3, 3, 50, "size=3x3 pad=1_1x1_1", out_hw=(3, 3))
    assert uses_gemm(text)
    check(text, rand(np.float32, 1, 3, 3, 20), rand(np.float32, 3, 3, 20, 50, seed=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_threads_give_identical_results(threads):
    text = dot_module(200, 300, 260)
    a, b = rand(np.float32, 200, 300), rand(np.float32, 300, 260, seed=1)
    module = parse_module(text, "gemm.hlo")
    one = JitExecutable(module, RAW, threads=1).run(a, b)[0]
    many = JitExecutable(module, RAW, threads=threads).run(a, b)[0]
    np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(many, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(st.integers(4, 70), st.integers(1, 90), st.integers(4, 70), st.booleans(), st.booleans())
def test_dot_property(m, k, n, lhs_t, rhs_t):
    text = dot_module(m, k, n, lhs_layout="{0,1}" if lhs_t else "{1,0}", rhs_layout="{0,1}" if rhs_t else "{1,0}")
    check(text, rand(np.float32, m, k), rand(np.float32, k, n, seed=1), options=(RAW,))


def winograd_plan(text):
    return top_level_plan(parse_module(text, "w.hlo").entry.root, None)


@pytest.mark.parametrize("hw,window,out_hw", [
    ((12, 10), "size=3x3 pad=1_1x1_1", (12, 10)),   # whole tiles
    ((11, 9), "size=3x3 pad=1_1x1_1", (11, 9)),     # the last tile row and column half outside
    ((12, 10), "size=3x3", (10, 8)),                # no padding
    ((12, 10), "size=3x3 pad=2_0x0_2", (12, 10)),   # uneven padding
    ((12, 10), "size=3x3 pad=-1_1x1_-1", (10, 8)),  # negative padding crops the input
])
def test_winograd_convolutions(hw, window, out_hw):
    h, w = hw
    text = conv_module(2, h, w, 16, 3, 3, 24, window, out_hw=out_hw)
    assert winograd_plan(text).winograd is not None
    check(text, rand(np.float32, 2, h, w, 16), rand(np.float32, 3, 3, 16, 24, seed=1), rtol=1e-4, atol=1e-4)


def test_winograd_in_other_layouts_and_types():
    import ml_dtypes
    nchw = """HloModule m
ENTRY e {
  x = f32[1,16,9,9] parameter(0)
  k = f32[32,16,3,3] parameter(1)
  ROOT y = f32[1,32,9,9] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
"""
    assert winograd_plan(nchw).winograd is not None
    check(nchw, rand(np.float32, 1, 16, 9, 9), rand(np.float32, 32, 16, 3, 3, seed=1), rtol=1e-4, atol=1e-4)
    for t, dtype, tol in (("f64", np.float64, 1e-12), ("bf16", ml_dtypes.bfloat16, 3e-2)):
        text = conv_module(1, 8, 8, 16, 3, 3, 16, "size=3x3 pad=1_1x1_1", out_hw=(8, 8), t=t)
        assert winograd_plan(text).winograd is not None
        check(text, rand(dtype, 1, 8, 8, 16), rand(dtype, 3, 3, 16, 16, seed=1), rtol=tol, atol=tol)


def test_winograd_convolution_with_a_fused_bias_and_relu():
    text = """HloModule m
ENTRY e {
  x = f32[1,10,10,16] parameter(0)
  k = f32[3,3,16,32] parameter(1)
  bias = f32[32] parameter(2)
  c = f32[1,10,10,32] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  bb = f32[1,10,10,32] broadcast(bias), dimensions={3}
  s = f32[1,10,10,32] add(c, bb)
  z = f32[] constant(0)
  zb = f32[1,10,10,32] broadcast(z), dimensions={}
  ROOT r = f32[1,10,10,32] maximum(s, zb)
}
"""
    assert lower_module(parse_module(text, "w.hlo"), CodegenOptions()).runtime
    check(text, rand(np.float32, 1, 10, 10, 16), rand(np.float32, 3, 3, 16, 32, seed=1), rand(np.float32, 32, seed=2),
          rtol=1e-4, atol=1e-4, options=(CodegenOptions(),))


def test_few_channels_or_strides_keep_the_direct_method():
    assert winograd_plan(conv_module(1, 12, 12, 8, 3, 3, 24, "size=3x3 pad=1_1x1_1", out_hw=(12, 12))).winograd is None
    assert winograd_plan(conv_module(1, 12, 12, 16, 3, 3, 24, "size=3x3 stride=2x2 pad=1_1x1_1",
                                     out_hw=(6, 6))).winograd is None


def test_winograd_in_several_chunks_of_tiles():
    from hlo.codegen.winograd import CHUNK_TILES
    text = conv_module(1, 100, 98, 16, 3, 3, 16, "size=3x3 pad=1_1x1_1", out_hw=(100, 98))
    shape = winograd_plan(text).winograd
    assert shape.tiles > CHUNK_TILES and shape.tiles % CHUNK_TILES   # two chunks, the last one partial
    check(text, rand(np.float32, 1, 100, 98, 16), rand(np.float32, 3, 3, 16, 16, seed=1), rtol=1e-4, atol=1e-4,
          options=(RAW,))
