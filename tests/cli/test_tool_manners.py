"""How the tools behave at a prompt (issue 17): --version, suggestions for typos, a terminal
as stdin, readable results, the real target triple, Graphviz named when it is missing."""
import os
import pty
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from user_session import ROOT, shell

TOOLS = ("hlo-opt", "hlo-run", "hlo-aot", "hlo-fmt", "hlo-lsp", "hlo-diff", "hlo-reduce")
AXPY = ROOT / "samples" / "axpy.hlo"
BIG = """\
HloModule big

ENTRY e {
  x = f32[1000,1000] parameter(0)
  y = s32[37] parameter(1)
  n = f32[1000,1000] negate(x)
  c = pred[] constant(true)
  ROOT t = (f32[1000,1000], (pred[], s32[37])) tuple(n, (pred[], s32[37]) tuple(c, y))
}
"""


def bin_dir() -> Path:
    return Path(sys.executable).parent


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_has_version(tool, tmp_path):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = shell(f"{tool} --version", tmp_path)
    assert result.returncode == 0 and result.stdout == f"{tool} {version}\n"


@pytest.mark.parametrize("command, suggestion", [
    (f"hlo-opt {AXPY} --passes=algsmp", "unknown pass 'algsmp' (did you mean 'algsimp'?)"),
    (f"hlo-opt {AXPY} --passes='fixpoint(cse,dcd)'", "unknown pass 'dcd' (did you mean 'dce'?)"),
    (f"hlo-opt {AXPY} --pipeline=defualt", "unknown pipeline 'defualt' (did you mean 'default'?)"),
    (f"hlo-opt {AXPY} --passes=dce --print-after=dcd", "unknown pass 'dcd' (did you mean 'dce'?)"),
    (f"hlo-opt {AXPY} --pipline=default", "No such option '--pipline'. Did you mean '--pipeline'?"),
    (f"hlo-run {AXPY} --random-input", "'--random-inputs'?"),
    (f"hlo-run {AXPY} --random-inputs --backend=cpy", "unknown backend 'cpy' (did you mean 'cpu'?)"),
    (f"hlo-opt {AXPY} --emit=lvm", "'lvm' is not one of 'hlo', 'dot', 'llvm', 'asm'"),
])
def test_typos_get_a_suggestion(command, suggestion, tmp_path):
    result = shell(command, tmp_path)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr
    assert suggestion in result.stderr, result.stderr


def test_hlo_opt_without_file_on_a_terminal_says_what_is_missing():
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run([str(bin_dir() / "hlo-opt")], stdin=terminal, capture_output=True, text=True,
                                timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert result.returncode == 2
    assert "Missing argument 'FILE' (an .hlo file, or '-' to read standard input)." in result.stderr


def test_hlo_opt_reads_a_pipe_without_file(tmp_path):
    result = shell(f"cat {AXPY} | hlo-opt", tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("HloModule axpy")


def test_a_dash_on_a_terminal_says_how_to_end_the_input():
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen([str(bin_dir() / "hlo-opt"), "-"], stdin=terminal, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        os.write(controller, AXPY.read_bytes().replace(b"\n", b"\r") + b"\r\x04")
        out, err = process.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert "reading HLO text from the terminal; end it with Ctrl-D" in err
    assert process.returncode == 0 and out.startswith("HloModule axpy"), err


def test_help_speaks_to_a_user():
    result = shell("hlo-run --help", ROOT)
    assert result.returncode == 0 and "corpus" not in result.stdout
    assert "np.savez" in result.stdout and "--full" in result.stdout


def test_emit_llvm_names_the_real_target(tmp_path):
    result = shell(f"hlo-opt {AXPY} --emit=llvm", tmp_path)
    assert result.returncode == 0
    triple = re.search(r'^target triple = "(.*)"$', result.stdout, re.M).group(1)
    assert triple == llvm.get_process_triple() and "unknown-unknown" not in triple
    assert re.search(r'^target datalayout = "e-.+"$', result.stdout, re.M)


def test_emit_dot_names_graphviz_when_it_is_missing(tmp_path):
    (tmp_path / "bin").mkdir()   # a PATH with the tools and bash's basics but no dot
    for tool in ("hlo-opt", "python", "bash", "cat"):
        found = shutil.which(tool, path=f"{bin_dir()}:/usr/bin:/bin")
        os.symlink(found, tmp_path / "bin" / tool)
    env = {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path), **{k: v for k, v in os.environ.items()
                                                                     if k.startswith("XDG_")}}
    result = subprocess.run(["bash", "-c", f"hlo-opt {AXPY} --emit=dot | dot -Tsvg > graph.svg"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 127
    assert "needs Graphviz's 'dot' program, which is not installed" in result.stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_emit_dot_draws_with_graphviz(tmp_path):
    result = shell(f"hlo-opt {AXPY} --emit=dot | dot -Tsvg > graph.svg", tmp_path)
    assert result.returncode == 0 and "Graphviz" not in result.stderr
    assert "<svg" in (tmp_path / "graph.svg").read_text()


def test_large_results_are_summarised_one_per_line(tmp_path):
    (tmp_path / "big.hlo").write_text(BIG)
    result = shell("hlo-run big.hlo --random-inputs", tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["out0 {0}", "out1 {1,0}", "out2 {1,1}"]
    assert lines[0].startswith("out0 {0}: f32[1000,1000] { { ") and lines[0].count("...") == 7
    assert len(result.stdout) < 1000
    assert re.fullmatch(r"out2 \{1,1\}: s32\[37\] \{(-?\d+, ){36}-?\d+\}", lines[2])   # small: in full
    assert "--full prints every element" in result.stderr


def test_full_prints_every_element(tmp_path):
    (tmp_path / "big.hlo").write_text(BIG.replace("1000,1000", "40,40"))   # 1600 elements
    summary = shell("hlo-run big.hlo --random-inputs", tmp_path)
    full = shell("hlo-run big.hlo --random-inputs --full", tmp_path)
    assert full.returncode == 0 and "..." not in full.stdout and "--full" not in full.stderr
    first = full.stdout.splitlines()[0]
    assert first.split("] ", 1)[1].count(",") == 40 * 40 - 1
    numbers = re.findall(r"-?\d[\d.e+-]*", summary.stdout.splitlines()[0].split(": ", 1)[1])
    assert numbers[1:4] == re.findall(r"-?\d[\d.e+-]*", first.split(": ", 1)[1])[1:4]   # same leading values
