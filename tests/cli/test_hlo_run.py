"""hlo-run as a user runs it: inputs, outputs, errors and exit statuses."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hlo_cli.hlo_run import main

DATA = Path(__file__).resolve().parents[1] / "data" / "corpus"

ADD = """HloModule m

ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = f32[3] add(x, y)
}
"""

TUPLE = """HloModule m

ENTRY e {
  x = s32[2] parameter(0)
  n = s32[2] negate(x)
  c = pred[] constant(true)
  ROOT t = (s32[2], (pred[], s32[2])) tuple(n, (pred[], s32[2]) tuple(c, x))
}
"""


def invoke(args, stdin=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


@pytest.fixture
def add_module(tmp_path):
    path = tmp_path / "add.hlo"
    path.write_text(ADD)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([1, 2, 3], np.float32), arg1=np.array([10, 20, 30], np.float32))
    return path, inputs


def test_prints_the_result_as_a_literal(add_module):
    path, inputs = add_module
    result = invoke([path, "--inputs", inputs])
    assert result.exit_code == 0, result.output
    assert result.stdout == "f32[3] {11, 22, 33}\n"


def test_writes_outputs_flattened_depth_first(tmp_path):
    path = tmp_path / "t.hlo"
    path.write_text(TUPLE)
    out = tmp_path / "out.npz"
    result = invoke([path, "--input", "arg0=" + str(_npy(tmp_path, "x", np.array([1, -2], np.int32))),
                     "--output", out, "--no-print"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    with np.load(out) as f:
        assert sorted(f.files) == ["out0", "out1", "out2"]
        np.testing.assert_array_equal(f["out0"], [-1, 2])
        assert f["out1"].dtype == np.bool_ and f["out1"].shape == () and bool(f["out1"])
        np.testing.assert_array_equal(f["out2"], [1, -2])


def _npy(tmp_path, name, array):
    path = tmp_path / f"{name}.npy"
    np.save(path, array)
    return path


def test_module_from_stdin_and_input_index_shorthand(tmp_path):
    x = _npy(tmp_path, "x", np.array([1, 1, 1], np.float32))
    result = invoke(["-", "--input", f"0={x}", "--input", f"arg1={x}"], stdin=ADD)
    assert result.exit_code == 0, result.output
    assert result.stdout == "f32[3] {2, 2, 2}\n"


def test_shape_mismatch_names_the_parameter_at_its_line(tmp_path, add_module):
    path, _ = add_module
    bad = tmp_path / "bad.npz"
    np.savez(bad, arg0=np.zeros(3, np.float32), arg1=np.zeros(4, np.float32))
    result = invoke([path, "--inputs", bad])
    assert result.exit_code == 1
    assert f"{path}:5:3: error:" in result.stderr
    assert "parameter 1 (%y)" in result.stderr and "expected f32[3], given f32[4]" in result.stderr
    assert "Traceback" not in result.output


def test_dtype_mismatch_is_reported(tmp_path, add_module):
    path, _ = add_module
    bad = tmp_path / "bad.npz"
    np.savez(bad, arg0=np.zeros(3, np.float64), arg1=np.zeros(3, np.float32))
    result = invoke([path, "--inputs", bad])
    assert result.exit_code == 1
    assert "parameter 0 (%x)" in result.stderr and "given f64[3]" in result.stderr


def test_missing_and_unknown_inputs(tmp_path, add_module):
    path, _ = add_module
    partial = tmp_path / "partial.npz"
    np.savez(partial, arg0=np.zeros(3, np.float32))
    result = invoke([path, "--inputs", partial])
    assert result.exit_code == 1
    assert "no input for parameter 1 (%y)" in result.stderr and f"{path}:5:3" in result.stderr
    extra = tmp_path / "extra.npz"
    np.savez(extra, arg0=np.zeros(3, np.float32), arg1=np.zeros(3, np.float32), arg2=np.zeros(1))
    result = invoke([path, "--inputs", extra])
    assert result.exit_code == 1
    assert "input 'arg2' matches no parameter" in result.stderr


def test_random_inputs_are_seeded(add_module):
    path, _ = add_module
    first = invoke([path, "--random-inputs", "--seed", "3"])
    second = invoke([path, "--random-inputs", "--seed", "3"])
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout and first.stdout.startswith("f32[3] {")


def test_refuses_to_overwrite_an_input(add_module):
    path, inputs = add_module
    before = inputs.read_bytes()
    result = invoke([path, "--inputs", inputs, "--output", inputs])
    assert result.exit_code == 1
    assert "refusing to overwrite" in result.stderr
    assert inputs.read_bytes() == before


def test_bf16_travels_as_raw_bits(tmp_path):
    path = tmp_path / "bf.hlo"
    path.write_text("""HloModule m

ENTRY e {
  x = bf16[2] parameter(0)
  ROOT n = bf16[2] negate(x)
}
""")
    x = _npy(tmp_path, "x", np.array([0x3F80, 0x4040], np.uint16))  # 1.0, 3.0
    out = tmp_path / "out.npz"
    result = invoke([path, "--input", f"arg0={x}", "-o", out])
    assert result.exit_code == 0, result.output
    assert result.stdout == "bf16[2] {-1, -3}\n"
    with np.load(out) as f:
        assert f["out0"].dtype == np.uint16
        np.testing.assert_array_equal(f["out0"], [0xBF80, 0xC040])


def test_corpus_case_end_to_end(tmp_path):
    out = tmp_path / "out.npz"
    result = invoke([DATA / "mlp_forward.hlo", "--inputs", DATA / "mlp_forward.inputs.npz", "-o", out,
                     "--no-print"])
    assert result.exit_code == 0, result.output
    with np.load(out) as got, np.load(DATA / "mlp_forward.expected.npz") as expected:
        np.testing.assert_allclose(got["out0"], expected["out0"], rtol=1e-5, atol=1e-5)


def test_time_and_profile_report_on_stderr(add_module):
    path, inputs = add_module
    result = invoke([path, "--inputs", inputs, "--time", "3", "--profile", "--no-print"])
    assert result.exit_code == 0, result.output
    assert "median" in result.stderr and "over 3 run(s)" in result.stderr
    assert "profile:" in result.stderr and "%s" in result.stderr


def test_backends(add_module, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path, inputs = add_module
    interpreted = invoke([path, "--inputs", inputs, "--backend", "interpreter"])
    assert interpreted.exit_code == 0
    cpu = invoke([path, "--inputs", inputs, "--backend", "cpu"])
    assert cpu.exit_code == 0 and cpu.stdout == interpreted.stdout
    other = invoke([path, "--inputs", inputs, "--backend", "tpu"])
    assert other.exit_code == 1 and "unknown backend 'tpu'" in other.stderr


def test_several_devices_use_prefixed_keys(tmp_path):
    path = tmp_path / "ar.hlo"
    path.write_text("""HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  ROOT s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
}
""")
    inputs = tmp_path / "in.npz"
    np.savez(inputs, dev0_arg0=np.array([1, 2], np.float32), dev1_arg0=np.array([10, 20], np.float32))
    out = tmp_path / "out.npz"
    result = invoke([path, "--inputs", inputs, "-o", out])
    assert result.exit_code == 0, result.output
    assert "device 1 (replica 1, partition 0):" in result.stdout
    with np.load(out) as f:
        assert sorted(f.files) == ["dev0_out0", "dev1_out0"]
        np.testing.assert_array_equal(f["dev1_out0"], [11, 22])


def test_infeed_and_outfeed_files(tmp_path):
    path = tmp_path / "feed.hlo"
    path.write_text("""HloModule m

ENTRY e {
  tok = token[] after-all()
  in = (f32[2], token[]) infeed(tok)
  x = f32[2] get-tuple-element(in), index=0
  t = token[] get-tuple-element(in), index=1
  n = f32[2] negate(x)
  o = token[] outfeed(n, t), outfeed_shape=f32[2]{0}
  ROOT r = f32[2] add(x, x)
}
""")
    feed = tmp_path / "feed.npz"
    np.savez(feed, infeed0=np.array([1, 2], np.float32))
    outfeed = tmp_path / "outfeed.npz"
    result = invoke([path, "--infeed", feed, "--outfeed", outfeed])
    assert result.exit_code == 0, result.output
    assert result.stdout == "f32[2] {2, 4}\n"
    with np.load(outfeed) as f:
        np.testing.assert_array_equal(f["outfeed0"], [-1, -2])


def test_user_errors_exit_1_without_traceback(tmp_path):
    missing = invoke([tmp_path / "nope.hlo"])
    assert missing.exit_code == 1 and "cannot read" in missing.stderr
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n")
    result = invoke([broken])
    assert result.exit_code == 1 and f"{broken}:3" in result.stderr
    not_npz = tmp_path / "junk.npz"
    not_npz.write_text("not a zip")
    path = tmp_path / "add.hlo"
    path.write_text(ADD)
    junk = invoke([path, "--inputs", not_npz])
    assert junk.exit_code == 1 and "cannot read" in junk.stderr
    for r in (missing, result, junk):
        assert "Traceback" not in r.output


def test_runtime_error_is_located(tmp_path):
    path = tmp_path / "cc.hlo"
    path.write_text("""HloModule m

ENTRY e {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="no_such_target"
}
""")
    result = invoke([path, "--random-inputs"])
    assert result.exit_code == 1
    assert f"{path}:5:" in result.stderr and '"no_such_target"' in result.stderr


def test_console_script_runs_in_a_subprocess(add_module):
    path, inputs = add_module
    proc = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", str(path), "--inputs", str(inputs)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "f32[3] {11, 22, 33}\n"
    bad = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_run", str(path)], capture_output=True, text=True)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


DEVICES = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  r = u32[] replica-id()
  p = u32[] partition-id()
  s = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[2], u32[], u32[]) tuple(s, r, p)
}
"""


def test_replicas_and_partitions_options_with_shared_and_per_device_inputs(tmp_path):
    # the module says nothing about devices: --replicas 2 --partitions 2 makes four, device d being
    # replica d // 2, partition d % 2; flattened-id groups {0,1} and {2,3} name devices directly
    path = tmp_path / "dev.hlo"
    path.write_text(DEVICES)
    shared = _npy(tmp_path, "shared", np.array([1, 2], np.float32))
    own = _npy(tmp_path, "own", np.array([10, 20], np.float32))
    out = tmp_path / "out.npz"
    result = invoke([path, "--replicas", 2, "--partitions", 2, "--input", f"arg0={shared}",
                     "--input", f"dev1_arg0={own}", "-o", out])
    assert result.exit_code == 0, result.output
    assert "device 3 (replica 1, partition 1):" in result.stdout
    with np.load(out) as f:
        assert sorted(f.files) == [f"dev{d}_out{i}" for d in range(4) for i in range(3)]
        np.testing.assert_array_equal(f["dev0_out0"], [11, 22])  # device 0 + device 1's own input
        np.testing.assert_array_equal(f["dev1_out0"], [11, 22])
        np.testing.assert_array_equal(f["dev2_out0"], [2, 4])    # devices 2 and 3 share arg0
        np.testing.assert_array_equal(f["dev3_out0"], [2, 4])
        assert [int(f[f"dev{d}_out1"]) for d in range(4)] == [0, 0, 1, 1]
        assert [int(f[f"dev{d}_out2"]) for d in range(4)] == [0, 1, 0, 1]
    # fewer devices than the groups name: a located user error, not a hang or a traceback
    fewer = invoke([path, "--replicas", 1, "--partitions", 2, "--input", f"arg0={shared}"])
    assert fewer.exit_code == 1 and f"{path}:13:3" in fewer.stderr and "Traceback" not in fewer.output


def test_per_device_input_mismatch_names_device_parameter_and_shapes(tmp_path):
    path = tmp_path / "dev.hlo"
    path.write_text(DEVICES)
    good = _npy(tmp_path, "good", np.zeros(2, np.float32))
    bad = _npy(tmp_path, "bad", np.zeros((2, 2), np.float32))
    result = invoke([path, "--replicas", 2, "--input", f"arg0={good}", "--input", f"dev1_arg0={bad}"])
    assert result.exit_code == 1
    assert "device 1: argument for parameter 0 (%x) does not match: expected f32[2], given f32[2,2]" \
        in result.stderr
    assert f"{path}:10:3" in result.stderr and "Traceback" not in result.output
    missing = invoke([path, "--replicas", 2, "--input", f"dev0_arg0={good}"])
    assert missing.exit_code == 1
    assert "no input for parameter 0 (%x) of shape f32[2]: give arg0 (or dev1_arg0)" in missing.stderr
    beyond = invoke([path, "--replicas", 2, "--input", f"dev2_arg0={good}", "--input", f"arg0={good}"])
    assert beyond.exit_code == 1 and "input 'dev2_arg0' matches no parameter" in beyond.stderr


def test_random_inputs_fill_only_what_is_missing(tmp_path, add_module):
    path, _ = add_module
    zeros = _npy(tmp_path, "zeros", np.zeros(3, np.float32))
    out = tmp_path / "out.npz"
    result = invoke([path, "--input", f"arg1={zeros}", "--random-inputs", "--seed", 5, "-o", out, "--no-print"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    with_x = tmp_path / "x.npz"
    with np.load(out) as f:
        x = f["out0"]  # x + 0 = the random x
    np.savez(with_x, arg0=x, arg1=np.ones(3, np.float32))
    again = invoke([path, "--inputs", with_x, "--random-inputs", "--seed", 99, "-o", out, "--no-print"])
    assert again.exit_code == 0
    with np.load(out) as f:
        np.testing.assert_array_equal(f["out0"], x + 1)  # nothing random once every input is given


def test_unwritable_output_is_a_user_error(tmp_path, add_module):
    path, inputs = add_module
    for target in (tmp_path / "in.npz" / "folder" / "out.npz", tmp_path):   # a file where a folder should be
        result = invoke([path, "--inputs", inputs, "--output", target])
        assert result.exit_code == 1, result.output
        assert f"cannot write {target}" in result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.output
    feed = tmp_path / "feed.hlo"
    feed.write_text("""HloModule m

ENTRY e {
  tok = token[] after-all()
  c = f32[] constant(1)
  ROOT o = token[] outfeed(c, tok), outfeed_shape=f32[]
}
""")
    result = invoke([feed, "--outfeed", tmp_path / "in.npz" / "of.npz"])
    assert result.exit_code == 1 and "cannot write" in result.stderr


def test_infeed_and_outfeed_files_per_device_and_mismatches(tmp_path):
    path = tmp_path / "feed.hlo"
    path.write_text("""HloModule m, replica_count=2

ENTRY e {
  tok = token[] after-all()
  in = ((f32[2], s32[]), token[]) infeed(tok)
  d = (f32[2], s32[]) get-tuple-element(in), index=0
  t = token[] get-tuple-element(in), index=1
  x = f32[2] get-tuple-element(d), index=0
  n = f32[2] negate(x)
  o = token[] outfeed(n, t), outfeed_shape=f32[2]{0}
  ROOT r = s32[] get-tuple-element(d), index=1
}
""")
    feed = tmp_path / "feed.npz"
    np.savez(feed, dev0_infeed0=np.array([1, 2], np.float32), dev0_infeed1=np.int32(7),
             dev1_infeed0=np.array([3, 4], np.float32), dev1_infeed1=np.int32(8))
    outfeed = tmp_path / "outfeed.npz"
    result = invoke([path, "--infeed", feed, "--outfeed", outfeed])
    assert result.exit_code == 0, result.output
    assert result.stdout == ("device 0 (replica 0, partition 0):\ns32[] 7\n"
                             "device 1 (replica 1, partition 0):\ns32[] 8\n")
    with np.load(outfeed) as f:
        assert sorted(f.files) == ["dev0_outfeed0", "dev1_outfeed0"]
        np.testing.assert_array_equal(f["dev0_outfeed0"], [-1, -2])
        np.testing.assert_array_equal(f["dev1_outfeed0"], [-3, -4])
    bad = tmp_path / "bad.npz"
    np.savez(bad, infeed0=np.array([1, 2, 3], np.float32), infeed1=np.int32(1))
    result = invoke([path, "--infeed", bad])
    assert result.exit_code == 1 and f"{path}:5:3" in result.stderr
    assert "the next infeed value is f32[3], expected f32[2]" in result.stderr
    short = tmp_path / "short.npz"
    np.savez(short, infeed0=np.array([1, 2], np.float32))
    result = invoke([path, "--infeed", short])
    assert result.exit_code == 1 and "the infeed queue is empty (it needs a value of shape s32[])" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_random_inputs_for_scalar_parameters_of_every_kind(tmp_path, backend):
    path = tmp_path / "scalars.hlo"
    path.write_text("""HloModule m
ENTRY e {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  y = f32[] parameter(2)
  i = s32[] parameter(3)
  s = f32[] select(p, x, y)
  c = f32[] convert(i)
  ROOT r = f32[] add(s, c)
}
""")
    result = invoke([path, "--random-inputs", "--seed", "5", "--backend", backend])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("f32[] ")
