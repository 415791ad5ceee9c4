"""hlo-aot objects with the ops compiled since issue 11 (fft, scan, reduce-precision, a merged
scatter fusion, complex functions, rng's counter): built into the C driver of tests/aot,
run, and compared with the interpreter; they still need nothing but libc and libm."""
import shutil
import subprocess

import numpy as np
import pytest

from aot.test_aot import ALLOWED_UNDEFINED, CC, buffer_specs, compile_driver, decode_results, encode, run_cli
from corpus_cases import check_close, decode
from hlo import parse_module
from hlo.interpreter import run
from hlo_cli.hlo_aot import default_name

pytestmark = pytest.mark.skipif(CC is None, reason="no system C compiler")

MODULE = """HloModule new_ops
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
step {
  x = f32[4] parameter(0)
  c = f32[4] parameter(1)
  s = f32[4] add(x, c)
  ROOT t = (f32[4], f32[4]) tuple(s, s)
}
wrapped_scatter {
  p0 = f32[6,4] parameter(0)
  p1 = s32[3,1] parameter(1)
  p2 = f32[3,1,4] parameter(2)
  ROOT s = f32[6,4] scatter(p0, p1, p2), update_window_dims={1,2}, inserted_window_dims={},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
ENTRY main {
  x = f32[6,4] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,1,4] parameter(2)
  z = c64[6,4] parameter(3)
  sc = f32[6,4] fusion(x, i, u), kind=kLoop, calls=wrapped_scatter
  m = f32[6,4] multiply(sc, x)
  spectrum = c64[6,3] fft(x), fft_type=RFFT, fft_length={4}
  back = f32[6,4] fft(spectrum), fft_type=IRFFT, fft_length={4}
  scanned = (f32[6,4], f32[4]) scan(x, f32[4] constant({0, 1, 2, 3})), dimensions={0}, num_carries=1,
      to_apply=step
  prefix = f32[6,4] get-tuple-element(scanned), index=0
  rounded = f32[6,4] reduce-precision(m), exponent_bits=5, mantissa_bits=3
  roots = c64[6,4] sqrt(z)
  state = u64[2] rng-get-and-update-state(), delta=7
  ROOT t = (f32[6,4], f32[6,4], f32[6,4], f32[6,4], c64[6,4], u64[2]) tuple(m, back, prefix, rounded, roots, state)
}
"""


def test_aot_object_with_new_ops_matches_the_interpreter(tmp_path):
    path = tmp_path / "new_ops.hlo"
    path.write_text(MODULE)
    prefix = tmp_path / "new_ops"
    result = run_cli([str(path), "-o", str(prefix)])
    assert result.exit_code == 0, result.output
    name = default_name(str(prefix))
    exe = compile_driver("driver.c.in", CC, "-std=c99", prefix, name, ".c")
    rng = np.random.default_rng(2)
    args = [rng.uniform(-1, 1, (6, 4)).astype(np.float32), np.array([[0], [5], [0]], np.int32),
            rng.uniform(-1, 1, (3, 1, 4)).astype(np.float32),
            (rng.uniform(-1, 1, (6, 4)) + 1j * rng.uniform(-1, 1, (6, 4))).astype(np.complex64)]
    header = (tmp_path / "new_ops.h").read_text()
    arg_specs, result_specs = buffer_specs(header, name, "arg"), buffer_specs(header, name, "result")
    inputs, out = tmp_path / "in.bin", tmp_path / "out.bin"
    inputs.write_bytes(b"".join(encode(a, s) for a, s in zip(args, arg_specs)))
    done = subprocess.run([str(exe), str(inputs), str(out)], capture_output=True)
    assert done.returncode == 0, done.stderr
    got = decode_results(out.read_bytes(), result_specs)
    want = run(parse_module(MODULE), *args)
    for j, (type_name, _, _) in enumerate(result_specs):
        check_close(decode(got[f"out{j}"], type_name), decode(np.asarray(want[j]), type_name), 1e-5, 1e-5,
                    type_name == "u64", f"out{j}")
    nm = shutil.which("nm")
    if nm is not None:
        listing = subprocess.run([nm, "-u", f"{prefix}.o"], capture_output=True, text=True, check=True).stdout
        undefined = {line.split()[-1] for line in listing.splitlines() if line.strip()}
        assert undefined <= ALLOWED_UNDEFINED, sorted(undefined - ALLOWED_UNDEFINED)
