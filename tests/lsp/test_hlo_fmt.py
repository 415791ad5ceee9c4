"""hlo-fmt: formats files in place, to stdout, or checks them (exit 1 when a file would change)."""
from __future__ import annotations

import subprocess
import sys

import pytest

CANONICAL = """\
// comment
HloModule f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %e (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%p)  // negated
}
"""
MESSY = CANONICAL.replace("%p = f32[2]{0} parameter(0)", "%p = f32[2]   parameter(0)").replace(
    "HloModule f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}", "HloModule f")


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "hlo_cli.hlo_fmt", *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def messy(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MESSY)
    return path


def test_check_reports_a_file_that_would_change(messy, tmp_path):
    result = run("--check", str(messy))
    assert result.returncode == 1 and "would reformat" in result.stderr
    assert messy.read_text() == MESSY   # nothing written
    clean = tmp_path / "c.hlo"
    clean.write_text(CANONICAL)
    assert run("--check", str(clean)).returncode == 0


def test_in_place(messy):
    result = run(str(messy))
    assert result.returncode == 0 and "reformatted" in result.stderr
    assert messy.read_text() == CANONICAL
    assert not [p for p in messy.parent.iterdir() if p.name.endswith(".tmp")]   # written atomically


def test_to_stdout(messy):
    result = run("--stdout", str(messy))
    assert result.returncode == 0 and result.stdout == CANONICAL
    assert messy.read_text() == MESSY
    assert run("-", stdin=MESSY).stdout == CANONICAL


def test_errors_and_refusals_leave_the_file_alone(tmp_path):
    broken = tmp_path / "b.hlo"
    broken.write_text(MESSY.replace("negate(%p)", "negate(%q)"))
    result = run(str(broken))
    assert result.returncode == 1
    assert "b.hlo:6:" in result.stderr and "undefined instruction '%q'" in result.stderr
    inside = tmp_path / "i.hlo"
    inside.write_text(MESSY.replace("negate(%p)", "negate(/* x */ %p)"))
    result = run(str(inside))
    assert result.returncode == 1 and "i.hlo:6:" in result.stderr and "'/* x */'" in result.stderr
    assert inside.read_text() == MESSY.replace("negate(%p)", "negate(/* x */ %p)")
