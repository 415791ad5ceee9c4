"""Every command in the README's code blocks runs, verbatim, in a fresh copy of the repository.

`MODULE.hlo` and `model.hlo` (the README's placeholders) are copies of samples/mlp_layer.hlo
there, `model.renamed.hlo` the same with two instructions renamed, and `my-check.sh` an
hlo-reduce test that holds while the module has a maximum; hlo-reduce's bug predicates
(--mismatch, --crash...) do not hold for the sample, so those commands must run and say
that the input is not interesting. Python blocks run with `python -`, in order with the shell commands (one of them
writes the in.npz the commands after it read). The quick test uses the installed tools and
leaves out `pip install` and `python -m pytest`; the slow one starts from a fresh virtual
environment and runs them too (the suite collected only: running it would run this test).
"""
import pytest

from user_session import readme_commands, fresh_copy, fresh_venv, run_all

COMMANDS = readme_commands()


def test_the_readme_has_commands_for_every_tool():
    text = "\n".join(c.text for c in COMMANDS)
    for tool in ("hlo-opt", "hlo-run", "hlo-aot", "hlo-fmt", "hlo-lsp", "hlo-diff", "hlo-reduce", "pip install",
                 "np.savez"):
        assert tool in text, f"the README shows no {tool} command"


def test_readme_commands_run_in_a_fresh_copy(tmp_path):
    repo = fresh_copy(tmp_path / "repo")
    failures = run_all([c for c in COMMANDS if not c.installs], repo)
    assert not failures, "\n\n".join(failures)
    assert (repo / "build" / "model.o").exists() and (repo / "out" / "result.npz").exists()
    assert "maximum" in (repo / "small.hlo").read_text()   # hlo-reduce kept what my-check.sh asks for


@pytest.mark.slow
def test_readme_from_a_fresh_clone_and_a_fresh_venv(tmp_path):
    repo = fresh_copy(tmp_path / "repo")
    bin_dir = fresh_venv(tmp_path / "venv")
    failures = run_all(COMMANDS, repo, bin_dir)
    assert not failures, "\n\n".join(failures)
