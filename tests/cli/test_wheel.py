"""A wheel built with `python -m build` installs into a fresh virtual environment and runs
the samples with every tool, from a folder that is not the source tree (so nothing is
imported from the checkout). Needs `build` (in the `test` extra) and the package index."""
import shutil
import subprocess
import sys
import tomllib
import zipfile

import numpy as np
import pytest

from user_session import ROOT, fresh_copy, fresh_venv, shell

pytestmark = pytest.mark.slow

TOOLS = ("hlo-opt", "hlo-run", "hlo-aot", "hlo-fmt", "hlo-lsp", "hlo-diff", "hlo-reduce")
SAMPLES = sorted(p.name for p in (ROOT / "samples").glob("*.hlo"))
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

LINK_CHECK = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mlp.h"
int main(void) {
  void* args[mlp_NUM_ARGS];
  void* results[mlp_NUM_RESULTS];
  int i;
  for (i = 0; i < mlp_NUM_ARGS; ++i) args[i] = calloc(1, mlp_arg_sizes[i]);
  for (i = 0; i < mlp_NUM_RESULTS; ++i) results[i] = calloc(1, mlp_result_sizes[i]);
  mlp(args, results, calloc(1, mlp_TEMP_SIZE + 64));
  printf("%g\n", ((float*)results[0])[mlp_result0_index(7, 31)]);
  return 0;
}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin folder of a fresh venv with the wheel installed, a work folder with the samples)."""
    base = tmp_path_factory.mktemp("wheel")
    repo = fresh_copy(base / "repo")
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(base / "dist"), str(repo)],
                           capture_output=True, text=True)
    assert built.returncode == 0, f"python -m build failed (pip install -e '.[test]' installs build):\n" \
                                  f"{built.stdout[-2000:]}\n{built.stderr[-2000:]}"
    wheels = list((base / "dist").glob("hlo_toolchain-*.whl"))
    assert len(wheels) == 1, wheels
    bin_dir = fresh_venv(base / "venv")
    install = subprocess.run([str(bin_dir / "pip"), "install", str(wheels[0])], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    work = base / "work"
    shutil.copytree(ROOT / "samples", work / "samples")
    return bin_dir, work, wheels[0]


def test_the_wheel_holds_the_grammar_and_no_tests(installed):
    names = zipfile.ZipFile(installed[2]).namelist()
    assert "hlo_grammar/hlo.lark" in names and "hlo_cli/hlo_run.py" in names
    assert not any(n.startswith("tests/") for n in names)


def test_every_tool_says_its_version(installed):
    bin_dir, work, _ = installed
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for tool in TOOLS:
        result = shell(f"{tool} --version", work, bin_dir)
        assert result.returncode == 0 and result.stdout.strip() == f"{tool} {version}", (tool, result)


@pytest.mark.parametrize("sample", SAMPLES)
def test_samples_run_on_both_backends(installed, sample):
    bin_dir, work, _ = installed
    path = f"samples/{sample}"
    for command in (f"hlo-opt {path} --pipeline=default -o out/{sample}",
                    f"hlo-run {path} --random-inputs --seed 3 --output out/{sample}.interpreter.npz",
                    f"hlo-run {path} --random-inputs --seed 3 --backend cpu --output out/{sample}.cpu.npz"):
        result = shell(command, work, bin_dir)
        assert result.returncode == 0, (command, result.stderr)
    interpreted = np.load(work / "out" / f"{sample}.interpreter.npz")
    compiled = np.load(work / "out" / f"{sample}.cpu.npz")
    assert sorted(interpreted.files) == sorted(compiled.files)
    for key in interpreted.files:
        np.testing.assert_allclose(compiled[key], interpreted[key], rtol=1e-5, atol=1e-5)


def test_formatter_and_language_server_start(installed):
    bin_dir, work, _ = installed
    assert shell("hlo-fmt --check samples/*.hlo", work, bin_dir).returncode == 0
    assert shell("hlo-lsp --help", work, bin_dir).returncode == 0


@pytest.mark.skipif(CC is None, reason="no system C compiler")
def test_an_aot_object_links_with_a_c_program(installed):
    bin_dir, work, _ = installed
    made = shell("hlo-aot samples/mlp_layer.hlo -o build/mlp", work, bin_dir)
    assert made.returncode == 0, made.stderr
    (work / "main.c").write_text(LINK_CHECK)
    linked = shell(f"{CC} -std=c89 -Wall -Werror -Ibuild main.c build/mlp.o -lm -o main && ./main", work, bin_dir)
    assert linked.returncode == 0 and float(linked.stdout) == 0.0, linked   # zero inputs: relu(0) = 0
