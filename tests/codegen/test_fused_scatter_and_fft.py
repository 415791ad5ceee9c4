"""scatter and fft anywhere: as a fusion's root, inside a fusion the pipeline merged into its
consumer (the max-pool gradient of XLA's CNN dumps), with several layouts, and fft of every
type through the FftPlan kernels, against the interpreter."""
from pathlib import Path

import numpy as np
import pytest

from compiled_cases import BOTH, RAW, check_against_interpreter, private_cache  # noqa: F401
from hlo import parse_module
from hlo.codegen import CodegenOptions, JitExecutable
from hlo.codegen.lowering import prepare
from hlo.interpreter import run
from hlo.opcodes import Op
from hlo.runtime import values_io

MODELS = Path(__file__).resolve().parents[3] / "shared" / "models"


def check(text: str, *arrays, rtol=1e-5, atol=1e-5, options=BOTH):
    return check_against_interpreter(text, *arrays, rtol=rtol, atol=atol, options=options)


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


# --------------------------------------------------------------------------- scatter

def _scatter_module(operand_layout: str, update_layout: str) -> str:
    """XLA's dump style: a scatter wrapped in its own fusion, its value used by a loop fusion."""
    return f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
wrapped_scatter {{
  p0 = f32[6,5]{operand_layout} parameter(0)
  p1 = s32[4,1] parameter(1)
  p2 = f32[4,1,5]{update_layout} parameter(2)
  ROOT s = f32[6,5]{operand_layout} scatter(p0, p1, p2), update_window_dims={{1,2}}, inserted_window_dims={{}},
      scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
}}
consumer {{
  q0 = f32[6,5]{operand_layout} parameter(0)
  q1 = f32[6,5] parameter(1)
  ROOT m = f32[6,5] multiply(q0, q1)
}}
ENTRY e {{
  x = f32[6,5]{operand_layout} parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4,1,5]{update_layout} parameter(2)
  w = f32[6,5] parameter(3)
  s = f32[6,5]{operand_layout} fusion(x, i, u), kind=kLoop, calls=wrapped_scatter
  ROOT r = f32[6,5] fusion(s, w), kind=kLoop, calls=consumer
}}
"""


@pytest.mark.parametrize("operand_layout,update_layout", [("{1,0}", "{2,1,0}"), ("{0,1}", "{0,2,1}")])
def test_scatter_rooted_fusion_and_its_merge_into_the_consumer(operand_layout, update_layout):
    """RAW keeps the scatter as a fusion's root; the pipeline's fusion pass merges it into the
    multiply's fusion, where it is computed into scratch first."""
    indices = np.array([[0], [5], [2], [0]], np.int32)   # a repeated index: updates add up
    args = rand((6, 5), 1), indices, rand((4, 1, 5), 2), rand((6, 5), 3)
    check(_scatter_module(operand_layout, update_layout), *args)
    prepared_has_inner_scatter(_scatter_module(operand_layout, update_layout))


def prepared_has_inner_scatter(text: str) -> None:
    module = prepare(parse_module(text), CodegenOptions())
    inner = [i for c in module.computations for i in c.instructions
             if i.opcode == Op.SCATTER and c.root is not i]
    assert inner, "the pipeline no longer merges the scatter fusion; this test lost its point"


def test_variadic_scatter_and_a_scatter_feeding_another_inside_one_fusion():
    check("""HloModule m
pair_add {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  ROOT t = (f32[], s32[]) tuple(add(a, c), add(b, d))
}
take {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
fused {
  x = f32[8] parameter(0)
  n = s32[8] parameter(1)
  i = s32[3,1] parameter(2)
  u = f32[3] parameter(3)
  v = s32[3] parameter(4)
  s = (f32[8], s32[8]) scatter(x, n, i, u, v), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=pair_add
  g0 = f32[8] get-tuple-element(s), index=0
  g1 = s32[8] get-tuple-element(s), index=1
  again = f32[8] scatter(g0, i, u), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=take
  ROOT r = f32[8] add(again, f32[8] convert(g1))
}
ENTRY e {
  x = f32[8] parameter(0)
  n = s32[8] parameter(1)
  i = s32[3,1] parameter(2)
  u = f32[3] parameter(3)
  v = s32[3] parameter(4)
  ROOT f = f32[8] fusion(x, n, i, u, v), kind=kLoop, calls=fused
}
""", rand(8, 1), np.arange(8, dtype=np.int32), np.array([[1], [7], [1]], np.int32), rand(3, 2),
          np.array([5, 6, 7], np.int32), options=(RAW,))


@pytest.mark.slow
@pytest.mark.skipif(not MODELS.is_dir(), reason="the shared models are not beside this checkout")
@pytest.mark.parametrize("name", ["flax_nnx_cnn_dropout_bn_train_radam", "jraph_graphnet_gat_train_adagrad"])
def test_xla_dumps_with_scatter_fusions_match_the_interpreter(name):
    """XLA's optimised dumps whose scatter fusions the pipeline merges (the max-pool gradient)."""
    module = parse_module((MODELS / f"{name}.opt.hlo").read_text(), f"{name}.opt.hlo")
    inputs = values_io.load_arrays(str(MODELS / f"{name}.inputs.npz"))
    args = [inputs[f"arg{k}"] for k in range(len(inputs))]
    want = run(module, *args)
    got = JitExecutable(module).run(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = values_io.from_storage(np.asarray(g)), values_io.from_storage(np.asarray(w))
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-3, atol=2e-4)


# --------------------------------------------------------------------------- fft

FFT_CASES = [  # (type, input shape, fft_length)
    ("FFT", "c64[3,8]", (8,)), ("IFFT", "c64[2,7]", (7,)), ("FFT", "c64[5,1]", (1,)),
    ("FFT", "c64[2,17]", (17,)), ("IFFT", "c64[2,3,15]", (3, 15)), ("FFT", "c64[2,2,3,5]", (2, 3, 5)),
    ("RFFT", "f32[3,16]", (16,)), ("RFFT", "f32[4,9]", (9,)), ("RFFT", "f32[2,5,6]", (5, 6)),
    ("IRFFT", "c64[3,9]", (16,)), ("IRFFT", "c64[4,5]", (9,)), ("IRFFT", "c64[2,5,4]", (5, 6)),
    ("FFT", "c128[2,37]", (37,)), ("RFFT", "f64[3,12]", (12,)), ("IRFFT", "c128[3,7]", (13,)),
]


def _fft_shapes(kind: str, shape: str, lengths):
    t, dims = shape.split("[")
    dims = [int(d) for d in dims.rstrip("]").split(",")]
    lead = dims[:len(dims) - len(lengths)]
    wide = t in ("c128", "f64")
    out_t = ("f64" if wide else "f32") if kind == "IRFFT" else ("c128" if wide else "c64")
    out_dims = lead + list(lengths)
    if kind == "RFFT":
        out_dims[-1] = lengths[-1] // 2 + 1
    return t, dims, out_t, out_dims


def _fft_input(t: str, dims, seed: int):
    x = rand(dims, seed, np.float64)
    if t.startswith("c"):
        x = x + 1j * rand(dims, seed + 1, np.float64)
    return x.astype({"c64": np.complex64, "c128": np.complex128, "f32": np.float32, "f64": np.float64}[t])


@pytest.mark.parametrize("kind,shape,lengths", FFT_CASES)
def test_fft_of_every_type_and_awkward_lengths(kind, shape, lengths):
    t, dims, out_t, out_dims = _fft_shapes(kind, shape, lengths)
    text = (f"HloModule m\nENTRY e {{\n  x = {shape} parameter(0)\n  ROOT y = {out_t}[{','.join(map(str, out_dims))}] "
            f"fft(x), fft_type={kind}, fft_length={{{','.join(map(str, lengths))}}}\n}}\n")
    tol = 1e-10 if t in ("c128", "f64") else 2e-5
    check(text, _fft_input(t, dims, 3), rtol=tol, atol=tol, options=(RAW,))


def test_fft_with_column_major_operand_and_result_and_inside_a_fusion():
    text = """HloModule m
fused {
  p = c64[4,6]{0,1} parameter(0)
  n = c64[4,6]{0,1} negate(p)
  f = c64[4,6]{0,1} fft(n), fft_type=FFT, fft_length={6}
  ROOT s = c64[4,6] multiply(f, f)
}
ENTRY e {
  x = c64[4,6]{0,1} parameter(0)
  r = f32[4,6]{0,1} parameter(1)
  a = c64[4,6]{0,1} fft(x), fft_type=IFFT, fft_length={6}
  b = c64[4,4]{0,1} fft(r), fft_type=RFFT, fft_length={6}
  c = f32[4,6]{0,1} fft(b), fft_type=IRFFT, fft_length={6}
  d = c64[4,6] fusion(x), kind=kLoop, calls=fused
  ROOT t = (c64[4,6]{0,1}, c64[4,4]{0,1}, f32[4,6]{0,1}, c64[4,6]) tuple(a, b, c, d)
}
"""
    x = _fft_input("c64", (4, 6), 1)
    check(text, x, rand((4, 6), 5), rtol=2e-5, atol=2e-5)
