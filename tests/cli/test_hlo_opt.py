"""hlo-opt as a user runs it: output, errors, exit statuses, atomic writes."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hlo_cli.hlo_opt import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

VALID = """HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
}
"""

CANONICAL = """HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %e (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%a)
}
"""


def run(args, stdin=None):
    return CliRunner().invoke(main, args, input=stdin)


def test_prints_canonical_text_from_stdin():
    result = run(["-"], VALID)
    assert result.exit_code == 0, result.output
    assert result.output == CANONICAL


def test_canonical_output_is_a_fixed_point(tmp_path):
    first = run(["-"], VALID).output
    assert run(["-"], first).output == first


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.hlo")))
def test_samples_round_trip(sample):
    text = (SAMPLES / sample).read_text()
    first = run(["-"], text)
    assert first.exit_code == 0, first.output
    assert run(["-"], first.output).output == first.output


def test_writes_output_file_atomically(tmp_path):
    src = tmp_path / "in.hlo"
    src.write_text(VALID)
    out = tmp_path / "out.hlo"
    result = run([str(src), "-o", str(out)])
    assert result.exit_code == 0
    assert out.read_text() == CANONICAL
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_refuses_to_overwrite_its_input(tmp_path):
    src = tmp_path / "in.hlo"
    src.write_text(VALID)
    result = run([str(src), "-o", str(src)])
    assert result.exit_code == 1
    assert "refusing to overwrite the input file" in result.output
    assert src.read_text() == VALID


def test_syntax_error_is_located_with_caret(tmp_path):
    src = tmp_path / "bad.hlo"
    src.write_text("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a,\n}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{src}:5:1: error: unexpected '}}'")
    assert lines[1] == "  }"
    assert lines[2] == "  ^"


def test_no_output_file_on_error(tmp_path):
    src = tmp_path / "bad.hlo"
    src.write_text("HloModule m\nENTRY e {\n  ROOT n = f32[2] negate(undefined)\n}\n")
    out = tmp_path / "out.hlo"
    result = run([str(src), "-o", str(out)])
    assert result.exit_code == 1
    assert "use of undefined instruction '%undefined'" in result.output
    assert not out.exists()


def test_missing_file_is_a_user_error(tmp_path):
    result = run([str(tmp_path / "nope.hlo")])
    assert result.exit_code == 1
    assert "cannot read" in result.output


def test_binary_input_is_a_user_error(tmp_path):
    src = tmp_path / "bin.hlo"
    src.write_bytes(b"\xff\xfe\x00garbage")
    result = run([str(src)])
    assert result.exit_code == 1
    assert "not UTF-8" in result.output


def test_a_bad_byte_is_located_with_a_caret(tmp_path):
    src = tmp_path / "bad.hlo"
    src.write_bytes(b"HloModule m\nENTRY e {\n  %x = f32[] par\xffameter(0)\n}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"{src}:3:17: error: the file is not UTF-8 text: byte 0xff at offset 38"
    assert lines[2].index("^") == lines[1].index("\ufffd")


@pytest.mark.parametrize("where", ["m.hlo/out.hlo", "."])   # a file in the way of a folder; a folder
def test_an_unwritable_output_is_a_user_error(tmp_path, where):
    src = tmp_path / "m.hlo"
    src.write_text(VALID)
    result = run([str(src), "-o", str(tmp_path / where)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"error: cannot write {tmp_path / where}: ")
    assert list(tmp_path.iterdir()) == [src]   # no temporary file left behind


def test_internal_errors_exit_70(monkeypatch):
    import hlo_cli.hlo_opt as tool

    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(tool, "format_module", broken)
    result = run(["-"], VALID)
    assert result.exit_code == 70
    assert "internal error: RuntimeError: boom" in result.output
    assert "Traceback" not in result.output


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "hlo_cli.hlo_opt", "-"], input=VALID, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == CANONICAL


def test_syntax_undefined_name_and_shape_errors_are_reported_together(tmp_path):
    src = tmp_path / "many.hlo"
    src.write_text("HloModule m\n"
                   "ENTRY e {\n"
                   "  a = f32[2] parameter(0)\n"
                   "  b = f32[3] parameter(1)\n"
                   "  c = f32[2] add(a, b)\n"
                   "  d = f32[2] multiply(c, zz)\n"
                   "  e = f32[2] negate(a b)\n"
                   "  ROOT r = f32[2,2] negate(c)\n"
                   "}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    headlines = [line for line in result.output.splitlines() if ": error: " in line]
    assert [h.split(": error: ")[0] for h in headlines] == [
        f"{src}:5:21", f"{src}:6:26", f"{src}:7:23", f"{src}:8:8"]
    assert "must have identical dimensions" in headlines[0]
    assert "use of undefined instruction '%zz'" in headlines[1]
    assert "unexpected 'b'" in headlines[2]
    assert "shape mismatch: 'negate' produces f32[2]" in headlines[3]


def test_uses_of_a_broken_definition_are_not_reported_again(tmp_path):
    src = tmp_path / "cascade.hlo"
    src.write_text("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  n = f32[2] negate(a a)\n"
                   "  ROOT r = f32[2] exponential(n)\n}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    assert result.output.count(": error: ") == 1
    assert "undefined instruction" not in result.output


def test_missing_closing_brace_is_reported_beside_a_semantic_error(tmp_path):
    src = tmp_path / "open.hlo"
    src.write_text("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] add(a, a), window={size=2}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    headlines = [line for line in result.output.splitlines() if ": error: " in line]
    assert headlines == [
        f"{src}:4:30: error: unexpected attribute 'window' for opcode 'add'; allowed: none besides the generic ones",
        f"{src}:4:44: error: unexpected end of input: a '}}' is missing"]


def test_a_computation_whose_only_line_is_broken_is_not_also_reported_empty(tmp_path):
    src = tmp_path / "one.hlo"
    src.write_text("HloModule m\nENTRY e {\n  ROOT n = f32[2] parameter(0 0)\n}\n")
    result = run([str(src)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == f"{src}:3:31: error: unexpected '0'; expected ')' or ','"
    assert "no instructions" not in result.output
    empty = tmp_path / "empty.hlo"
    empty.write_text("HloModule m\nENTRY e {\n}\n")
    assert run([str(empty)]).output.splitlines()[0] == f"{empty}:2:7: error: computation 'e' has no instructions"


MALFORMED = {
    "nul and junk": "\x00\x01garbage{{{{",
    "empty": "",
    "only a header": "HloModule m\n",
    "deep nesting": "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(" + "(" * 5000 + ")\n",
    "deep braces": "HloModule m\nENTRY e {\n  ROOT c = f32[2] constant(" + "{" * 3000 + "1" + "}" * 3000 + ")\n}\n",
    "bad layout and literal": ("HloModule m\nENTRY e {\n  a = f32[2]{5} parameter(0)\n  b = f32[<=-1] parameter(1)\n"
                               "  c = pred[2] constant({2, 3})\n  ROOT t = (f32[2]) tuple(a), sharding={devices=[3]0,1}\n}\n"),
    "huge integer": "HloModule m\nENTRY e {\n  ROOT c = s32[2] constant({99999999999999999999, 1})\n}\n",
    "wrong shape": "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[3] negate(a)\n}\n",
    "unknown opcode": "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] frob(a), x=y\n}\n",
    "bad window": ("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                   "  ROOT r = f32[2] reduce-window(a, z), window={size=0x3 stride=-1}, to_apply=q\n}\n"),
    "unterminated string": 'HloModule m\nENTRY e {\n  ROOT c = f32[] constant(0), backend_config="abc\n}\n',
    "unterminated comment": "HloModule m\nENTRY e {\n  /* ROOT c = f32[] constant(0)\n}\n",
    "huge dimension": "HloModule m\nENTRY e {\n  ROOT p = f32[99999999999999999999999] parameter(0)\n}\n",
    "negative tuple index": ("HloModule m\nENTRY e {\n  p = (f32[], f32[]) parameter(0)\n"
                             "  ROOT g = f32[] get-tuple-element(p), index=-1\n}\n"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_input_gives_located_errors_and_exit_1(tmp_path, name):
    src = tmp_path / "bad.hlo"
    src.write_text(MALFORMED[name])
    result = run([str(src)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    lines = result.output.splitlines()
    assert lines and lines[0].startswith(f"{src}:")
    for i, line in enumerate(lines):
        if ": error: " in line:
            assert re.match(rf"{re.escape(str(src))}:\d+:\d+: error: \S", line), line
            assert lines[i + 2].rstrip().endswith("^"), "\n".join(lines[i:i + 3])
