"""Input mistakes a new user makes (issue 17), each answered with what is wrong and the fix:
StableHLO/MHLO text, binary files, and the usual .npz mistakes. Driven through the tools."""
import ml_dtypes
import numpy as np
import pytest

from user_session import ROOT, shell

# What JAX's default `jax.jit(f).lower(x, y).as_text()` prints: StableHLO, not HLO.
STABLEHLO = """\
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<4x8xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}
"""
MHLO = """\
// an older dump
module @jit_f {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = mhlo.sine %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
MUL = """\
HloModule m

ENTRY e {
  x = f32[4,8] parameter(0)
  y = f32[4,8] parameter(1)
  ROOT m = f32[4,8] multiply(x, y)
}
"""
BF16 = MUL.replace("f32", "bf16")
HOW_TO = 'as_text(dialect="hlo")'


@pytest.fixture
def work(tmp_path):
    (tmp_path / "stable.mlir").write_text(STABLEHLO)
    (tmp_path / "mhlo.mlir").write_text(MHLO)
    (tmp_path / "mul.hlo").write_text(MUL)
    (tmp_path / "bf16.hlo").write_text(BF16)
    return tmp_path


@pytest.mark.parametrize("tool", ["hlo-opt", "hlo-run", "hlo-fmt --check", "hlo-aot -o out"])
@pytest.mark.parametrize("file, dialect", [("stable.mlir", "StableHLO"), ("mhlo.mlir", "MHLO")])
def test_mlir_text_is_named_with_how_to_get_hlo(work, tool, file, dialect):
    result = shell(f"{tool} {file}", work)
    assert result.returncode == 1
    line = 2 if file == "mhlo.mlir" else 1
    assert result.stderr.startswith(f"{file}:{line}:1: error: this is {dialect} (MLIR) text, not HLO text; ")
    assert HOW_TO in result.stderr and "--xla_dump_to" in result.stderr
    assert result.stderr.count("error:") == 1, result.stderr   # one error, not one per line


def test_a_binary_file_is_named_and_its_bytes_are_not_echoed(work):
    (work / "bin.hlo").write_bytes(b"\x00\x01\x1b[31mred\x07\n")
    result = shell("hlo-opt bin.hlo", work)
    assert result.returncode == 1 and "this is a binary file, not UTF-8 HLO text" in result.stderr
    assert not any(ch in result.stderr for ch in "\x00\x01\x1b\x07"), repr(result.stderr)
    assert "\u2400\u2401\u241b[31mred\u2407" in result.stderr   # shown as control pictures


def test_an_npz_given_as_the_module_says_where_it_goes(work):
    np.savez(work / "in.npz", arg0=np.zeros(3))
    result = shell("hlo-run in.npz", work)
    assert result.returncode == 1 and "it looks like a zip archive (an .npz file?): inputs go to --inputs" \
        in result.stderr


def test_positional_savez_names_the_fix(work):
    np.savez(work / "pos.npz", np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
    result = shell("hlo-run mul.hlo --inputs pos.npz", work)
    assert result.returncode == 1
    assert "input 'arr_0' matches no parameter" in result.stderr
    assert "np.savez(f, arg0=..., arg1=...)" in result.stderr


def test_bf16_arrays_from_ml_dtypes_are_read_as_their_bits(work):
    x = (np.arange(32).reshape(4, 8) / 4).astype(ml_dtypes.bfloat16)
    np.savez(work / "void.npz", arg0=x, arg1=x)                     # loads as |V2
    np.savez(work / "bits.npz", arg0=x.view(np.uint16), arg1=x.view(np.uint16))
    from_void = shell("hlo-run bf16.hlo --inputs void.npz --output void_out.npz", work)
    from_bits = shell("hlo-run bf16.hlo --inputs bits.npz --output bits_out.npz", work)
    assert from_void.returncode == 0, from_void.stderr
    assert from_void.stdout == from_bits.stdout
    got = np.load(work / "void_out.npz")["out0"].view(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(got, (x.astype(np.float32) ** 2).astype(ml_dtypes.bfloat16).astype(np.float32))


def test_bf16_bits_given_for_f32_say_how_to_convert(work):
    np.savez(work / "void.npz", arg0=np.ones((4, 8), ml_dtypes.bfloat16), arg1=np.ones((4, 8), np.float32))
    result = shell("hlo-run mul.hlo --inputs void.npz", work)
    assert result.returncode == 1
    assert "expected f32[4,8], given <V2[4,8]" in result.stderr or "given |V2[4,8]" in result.stderr
    assert "x.astype(np.float32)" in result.stderr


def test_f32_given_for_bf16_says_how_to_store_bf16(work):
    np.savez(work / "f32.npz", arg0=np.ones((4, 8), np.float32), arg1=np.ones((4, 8), np.float32))
    result = shell("hlo-run bf16.hlo --inputs f32.npz", work)
    assert result.returncode == 1 and "x.astype(ml_dtypes.bfloat16)" in result.stderr
    assert ".view(np.uint16)" in result.stderr


def test_float64_for_f32_says_numpy_defaults_to_float64(work):
    np.savez(work / "f64.npz", arg0=np.ones((4, 8)), arg1=np.ones((4, 8), np.float32))
    result = shell("hlo-run mul.hlo --inputs f64.npz", work)
    assert result.returncode == 1
    assert result.stderr.startswith("mul.hlo:4:3: error: argument for parameter 0 (%x) does not match: "
                                    "expected f32[4,8], given f64[4,8] (input arg0); numpy makes float64 arrays "
                                    "by default; save x.astype(np.float32)")


def test_a_transposed_input_is_suspected(work):
    np.savez(work / "t.npz", arg0=np.ones((8, 4), np.float32), arg1=np.ones((4, 8), np.float32))
    result = shell("hlo-run mul.hlo --inputs t.npz", work)
    assert result.returncode == 1 and "transposed? save x.T" in result.stderr


@pytest.mark.parametrize("content, what", [(b"", "it is empty"), (b"arg0 = 1, 2, 3\n", "it is text"),
                                           (b"\x80\x04\x95junk", "it is a Python pickle")])
def test_a_file_that_is_not_npz_says_how_to_write_one(work, content, what):
    (work / "in.npz").write_bytes(content)
    result = shell("hlo-run mul.hlo --inputs in.npz", work)
    assert result.returncode == 1
    assert result.stderr == (f"error: cannot read in.npz: it is not an .npz or .npy file ({what}); save inputs "
                             "with np.savez(PATH, arg0=x, arg1=y) or one array with np.save(PATH, x)\n")
    assert "allow_pickle" not in result.stderr


def test_inputs_from_process_substitution(work):
    np.save(work / "x.npy", np.full((4, 8), 3, np.float32))
    result = shell("hlo-run mul.hlo --input arg0=<(cat x.npy) --input arg1=<(cat x.npy) --output out.npz", work)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(work / "out.npz")["out0"], np.full((4, 8), 9, np.float32))


def test_hlo_fmt_reports_an_opcode_typo_once(work):
    (work / "typo.hlo").write_text("HloModule m\n\nENTRY e {\n  p = f32[] parameter(0)\n"
                                   "  multiply = f32[] multiplyy(p, p)\n  ROOT r = f32[] add(multiply, p)\n}\n")
    result = shell("hlo-fmt --check typo.hlo", work)
    assert result.returncode == 1
    assert "unknown opcode 'multiplyy'; did you mean 'multiply'?" in result.stderr
    assert "undefined instruction" not in result.stderr, result.stderr


def test_the_samples_still_run(work):
    result = shell(f"hlo-run {ROOT / 'samples' / 'axpy.hlo'} --random-inputs", work)
    assert result.returncode == 0 and result.stdout.startswith("f32[4] {")


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_random_inputs_refuse_an_unbounded_dimension_at_its_parameter(work, backend):
    # found by the mutation fuzzer: `?` has no size, and drawing one was an internal error
    (work / "unbounded.hlo").write_text("HloModule m\n\nENTRY e {\n  x = f32[<=8,?] parameter(0)\n"
                                        "  ROOT y = f32[] parameter(1)\n}\n")
    result = shell(f"hlo-run --backend {backend} --random-inputs unbounded.hlo", work)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("unbounded.hlo:4:3: error: no random input for parameter 0 (%x) of shape "
                                    "f32[<=8,?]: an unbounded dimension ('?') has no size to draw")
