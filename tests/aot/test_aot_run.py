"""hlo-run --backend aot: the module's hlo-aot object linked with a C driver and run in a process
of its own (hlo/codegen/aot_run.py), reported like the other backends; what it refuses."""
import numpy as np
import pytest
from click.testing import CliRunner

import hlo.codegen.aot_run as aot_run
from corpus_cases import DATA as CORPUS, MANIFEST as CORPUS_MANIFEST
from hlo_cli.hlo_run import main as hlo_run

pytestmark = pytest.mark.skipif(aot_run.c_compiler() is None, reason="no system C compiler")

# A tuple result, a column-major parameter and result, an integer output: every buffer is
# written and read in its physical order.
MODULE = """HloModule m
ENTRY e {
  x = f32[3,5]{0,1} parameter(0)
  y = f32[5,4] parameter(1)
  d = f32[3,4]{0,1} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[3,4]{0,1} tanh(d)
  i = s32[3,4]{0,1} convert(d)
  ROOT r = (f32[3,4]{0,1}, s32[3,4]{0,1}) tuple(t, i)
}
"""


def run(args):
    return CliRunner().invoke(hlo_run, [str(a) for a in args])


@pytest.fixture
def module_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    np.savez(tmp_path / "in.npz", arg0=np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5),
             arg1=np.linspace(3, -1, 20, dtype=np.float32).reshape(5, 4))
    return path


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_aot_backend_gives_the_other_backends_results(module_file, backend):
    folder = module_file.parent
    outputs = {}
    for side in ("aot", backend):
        out = folder / f"{side}.npz"
        result = run([module_file, "--inputs", folder / "in.npz", "--backend", side, "-o", out])
        assert result.exit_code == 0, result.output
        outputs[side] = (result.stdout, dict(np.load(out)))
    np.testing.assert_array_equal(outputs["aot"][1]["out1"], outputs[backend][1]["out1"])
    np.testing.assert_allclose(outputs["aot"][1]["out0"], outputs[backend][1]["out0"], rtol=1e-6, atol=1e-6)
    if backend == "cpu":   # the same compiled code: the same bits, printed the same way
        assert outputs["aot"][0] == outputs[backend][0]


def test_aot_backend_links_lapack_when_the_module_calls_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    name = "cholesky_lapack_customcall"
    out = tmp_path / "out.npz"
    result = run([CORPUS / f"{name}.hlo", "--inputs", CORPUS / f"{name}.inputs.npz", "--backend", "aot", "-o", out,
                  "--no-print"])
    assert result.exit_code == 0, result.output
    expected, got = np.load(CORPUS / f"{name}.expected.npz"), np.load(out)
    entry = CORPUS_MANIFEST[name]
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=entry["rtol"], atol=entry["atol"])


@pytest.mark.parametrize("extra, message", [
    (["--time", "3"], "--time cannot be combined with --backend aot"),
    (["--profile"], "--profile cannot be combined with --backend aot"),
    (["--compare", "interpreter"], "observe the backends interpreter and cpu, not aot"),
    (["--check-finite"], "observe the backends interpreter and cpu, not aot"),
    (["--replicas", "2"], "--backend aot runs one device"),
])
def test_aot_backend_refuses_what_it_cannot_do(module_file, extra, message):
    result = run([module_file, "--random-inputs", "--backend", "aot", *extra])
    assert result.exit_code == 1 and message in result.output, result.output


def test_missing_c_compiler_is_a_usage_error(module_file, monkeypatch):
    monkeypatch.setattr(aot_run, "c_compiler", lambda: None)
    result = run([module_file, "--random-inputs", "--backend", "aot"])
    assert result.exit_code == 1 and "needs a C compiler" in result.output


def test_a_failing_driver_is_an_internal_error_with_its_status(module_file, monkeypatch):
    monkeypatch.setattr(aot_run, "DRIVER", "#include <stdlib.h>\nint main(void) { abort(); }\n")
    result = run([module_file, "--random-inputs", "--backend", "aot"])
    assert result.exit_code == 70
    assert "internal error" in result.output and "running the AOT object failed (signal 6)" in result.output


# One object calling LAPACK (a Cholesky factorisation) and computing FFTs (a real transform and its
# inverse): the driver links the library the header names and nothing else.
LAPACK_AND_FFT = """HloModule lapack_fft
ENTRY e {
  a = f32[4,4] parameter(0)
  x = f32[3,8] parameter(1)
  at = f32[4,4] transpose(a), dimensions={1,0}
  s = f32[4,4] dot(a, at), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  eye = f32[4,4] constant({{4,0,0,0},{0,4,0,0},{0,0,4,0},{0,0,0,4}})
  spd = f32[4,4] add(s, eye)
  chol = (f32[4,4]{0,1}, s32[]) custom-call(spd), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[4,4]{0,1}}, output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l = f32[4,4]{0,1} get-tuple-element(chol), index=0
  spectrum = c64[3,5] fft(x), fft_type=RFFT, fft_length={8}
  back = f32[3,8] fft(spectrum), fft_type=IRFFT, fft_length={8}
  ROOT r = (f32[4,4]{0,1}, c64[3,5], f32[3,8]) tuple(l, spectrum, back)
}
"""


def test_one_object_using_lapack_and_fft_runs_in_its_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "lf.hlo"
    path.write_text(LAPACK_AND_FFT)
    rng = np.random.default_rng(5)
    np.savez(tmp_path / "in.npz", arg0=rng.standard_normal((4, 4)).astype(np.float32),
             arg1=rng.standard_normal((3, 8)).astype(np.float32))
    got = {}
    for backend in ("aot", "interpreter"):
        out = tmp_path / f"{backend}.npz"
        result = run([path, "--inputs", tmp_path / "in.npz", "--backend", backend, "-o", out, "--no-print"])
        assert result.exit_code == 0, result.output
        got[backend] = dict(np.load(out))
    lower = np.tril(got["aot"]["out0"])       # potrf leaves the upper triangle as it was
    np.testing.assert_allclose(lower, np.tril(got["interpreter"]["out0"]), rtol=1e-5, atol=1e-5)
    for key in ("out1", "out2"):
        np.testing.assert_allclose(got["aot"][key], got["interpreter"][key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["aot"]["out2"], np.load(tmp_path / "in.npz")["arg1"], rtol=1e-5, atol=1e-5)
