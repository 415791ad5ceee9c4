"""hlo-reduce: planted bugs in large modules are reduced to a handful of instructions, the
checker sees every candidate before the predicate, the result is deterministic."""
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import hlo
from hlo.analysis.loading import load_module
from hlo.tools import reduce as R
from hlo.tools.backends import TEST_BACKEND_SWITCH, compare_outputs, default_tolerance
from hlo.tools.predicates import CommandPredicate, died_by_signal
from hlo_cli.hlo_reduce import main

from generated_modules import layered_module

GREP_PLANTED = 'grep -q "remainder(%planted.exp" {}'


def count(text: str) -> int:
    return sum(len(c.instructions) for c in hlo.parse_module(text, "m").computations)


def invoke(args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    path = tmp_path_factory.mktemp("reduce") / "big.hlo"
    path.write_text(layered_module(2000))
    return path


def test_the_generated_module_is_large_and_valid(big):
    module = load_module(big.read_text(), str(big))
    total = sum(len(c.instructions) for c in module.computations)
    assert total >= 2000
    assert {str(i.opcode) for i in module.instructions()} >= {"while", "fusion", "call", "reduce", "remainder"}


def test_reduces_a_2000_instruction_module_with_a_planted_bug(big, tmp_path):
    out = tmp_path / "small.hlo"
    result = invoke([big, "-o", out, "--test", GREP_PLANTED])
    assert result.exit_code == 0, result.output
    small = out.read_text()
    assert count(small) <= 20
    assert "remainder(%planted.exp" in small
    load_module(small, "small.hlo")                   # valid
    # progress and the final size on stderr
    assert "hlo-reduce: input: 2334 instructions" in result.stderr
    assert f"done: 2334 -> {count(small)} instructions" in result.stderr
    assert "(cut " in result.stderr and "(root: " in result.stderr
    # deterministic
    again = tmp_path / "again.hlo"
    assert invoke([big, "-o", again, "--test", GREP_PLANTED, "-q"]).exit_code == 0
    assert again.read_text() == small


def test_the_checker_sees_every_candidate_first(tmp_path):
    """A --test command that keeps every candidate it is shown: all of them pass the checker."""
    source = tmp_path / "mid.hlo"
    source.write_text(layered_module(300, seed=5))
    seen = tmp_path / "seen"
    seen.mkdir()
    script = tmp_path / "keep.py"
    script.write_text(textwrap.dedent(f"""
        import shutil, sys, pathlib
        folder = pathlib.Path({str(seen)!r})
        shutil.copy(sys.argv[1], folder / f"{{len(list(folder.iterdir())):05d}}.hlo")
        sys.exit(0 if "remainder(%planted.exp" in open(sys.argv[1]).read() else 1)
    """))
    result = invoke([source, "--test", f"{sys.executable} {script} {{}}"])
    assert result.exit_code == 0, result.output
    candidates = sorted(seen.iterdir())
    assert len(candidates) > 5
    for path in candidates:
        load_module(path.read_text(), str(path))      # raises if the checker refuses it
    assert count(result.stdout) <= 5


def test_crash_by_signal(tmp_path):
    source = tmp_path / "m.hlo"
    source.write_text(layered_module(400, seed=2))
    crasher = tmp_path / "crash.py"
    crasher.write_text(textwrap.dedent("""
        import os, signal, sys
        text = open(sys.argv[1]).read()
        if "exponential(" in text and "while(" in text:
            os.kill(os.getpid(), signal.SIGSEGV)       # a backend dying on a loop next to an exponential
        sys.exit(0)
    """))
    result = invoke([source, "--crash", "--run", f"{sys.executable} {crasher}"])
    assert result.exit_code == 0, result.output
    small = result.stdout
    assert "exponential(" in small and "while(" in small
    assert count(small) <= 20


def test_crash_by_exit_status_70_and_error_text(tmp_path):
    source = tmp_path / "m.hlo"
    source.write_text(layered_module(300, seed=4))
    script = tmp_path / "tool.py"
    script.write_text(textwrap.dedent("""
        import sys
        text = open(sys.argv[1]).read()
        if "cosine(" in text:
            print("internal error: cosine is broken", file=sys.stderr)
            sys.exit(70)
    """))
    crash = invoke([source, "--crash", "--run", f"{sys.executable} {script} {{}}"])
    assert crash.exit_code == 0, crash.output
    assert "cosine(" in crash.stdout and count(crash.stdout) <= 3
    error = invoke([source, "--error-contains", "cosine is broken", "--run", f"{sys.executable} {script}"])
    assert error.exit_code == 0 and error.stdout == crash.stdout


def test_mismatch_between_backends_with_a_planted_wrong_kernel(tmp_path):
    source = tmp_path / "m.hlo"
    source.write_text(layered_module(300, seed=3, tuple_root=True))
    result = invoke([source, "--mismatch", "interpreter,planted-bug"], env={TEST_BACKEND_SWITCH: "1"})
    assert result.exit_code == 0, result.output
    small = result.stdout
    assert "exponential(" in small and count(small) <= 3
    # the test backend exists only behind its switch
    hidden = invoke([source, "--mismatch", "interpreter,planted-bug"], env={TEST_BACKEND_SWITCH: ""})
    assert hidden.exit_code == 1 and "--mismatch takes two backends" in hidden.output


def test_agreeing_backends_are_not_interesting(tmp_path):
    source = Path(__file__).resolve().parents[2] / "samples" / "mlp_layer.hlo"
    result = invoke([source, "--mismatch", "interpreter,cpu"])
    assert result.exit_code == 1
    assert "the input is not interesting" in result.output and "the outputs agree" in result.output


def test_loop_trip_counts_and_constants_shrink(tmp_path):
    source = tmp_path / "loop.hlo"
    source.write_text(textwrap.dedent("""
        HloModule loop
        %cond (s: (s32[], f32[64])) -> pred[] {
          %s = (s32[], f32[64]) parameter(0)
          %i = s32[] get-tuple-element(%s), index=0
          %n = s32[] constant(100000)
          ROOT %lt = pred[] compare(%i, %n), direction=LT
        }
        %body (t: (s32[], f32[64])) -> (s32[], f32[64]) {
          %t = (s32[], f32[64]) parameter(0)
          %j = s32[] get-tuple-element(%t), index=0
          %one = s32[] constant(1)
          %j1 = s32[] add(%j, %one)
          %v = f32[64] get-tuple-element(%t), index=1
          %v1 = f32[64] sine(%v)
          ROOT %next = (s32[], f32[64]) tuple(%j1, %v1)
        }
        ENTRY %main (x: f32[64]) -> f32[64] {
          %x = f32[64] parameter(0)
          %zero = s32[] constant(0)
          %init = (s32[], f32[64]) tuple(%zero, %x)
          %loop = (s32[], f32[64]) while(%init), condition=%cond, body=%body
          ROOT %r = f32[64] get-tuple-element(%loop), index=1
        }
    """))
    result = invoke([source, "--test", "grep -q 'while(' {}"])
    assert result.exit_code == 0, result.output
    small = result.stdout
    assert "constant(100000)" not in small and "f32[64]" not in small     # trip count and shapes shrank
    assert "while(" in small


def test_usage_errors(big, tmp_path):
    assert "exactly one predicate" in invoke([big]).output
    assert invoke([big, "--crash", "--test", "true"]).exit_code == 1
    assert "--run gives the command" in invoke([big, "--test", "true", "--run", "x"]).output
    not_interesting = invoke([big, "--test", "false"])
    assert not_interesting.exit_code == 1 and "not interesting" in not_interesting.output
    invalid = tmp_path / "bad.hlo"
    invalid.write_text("HloModule m\nENTRY e {\n  ROOT r = f32[2] negate(f32[3] parameter(0))\n}\n")
    assert invoke([invalid, "--test", "true"]).exit_code == 1


# --------------------------------------------------------------------------- pieces

def test_signals_as_the_shell_reports_them():
    assert died_by_signal(-11) == 11
    assert died_by_signal(139) == 11
    assert died_by_signal(70) is None and died_by_signal(0) is None


def test_command_predicate_substitutes_the_file(tmp_path):
    p = CommandPredicate("test \"$HLO_REDUCE_FILE\" = {} && grep -q hello {}", "test")
    try:
        assert p("hello") and not p("goodbye")
    finally:
        p.close()


def test_tolerances_by_element_type():
    assert default_tolerance(np.int32) == (0.0, 0.0)
    assert default_tolerance(np.float32) == (1e-4, 1e-5)
    assert default_tolerance(np.float16) == (1e-2, 1e-2)
    assert compare_outputs([np.array([1.0, np.nan], np.float32)], [np.array([1.00001, np.nan], np.float32)]) is None
    message = compare_outputs([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)])
    assert message.startswith("output 0: 1 of 2 elements differ; first at [1]")


def test_shrink_dimension_touches_only_shapes():
    text = "%c = f32[16,8]{1,0} slice(%a), slice={[0:16], [0:8]}"
    assert R.shrink_dimension(text, 16, 4) == "%c = f32[4,8]{1,0} slice(%a), slice={[0:16], [0:8]}"
