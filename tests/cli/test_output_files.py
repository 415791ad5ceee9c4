"""Output files as a user meets them (issue 17): modes from the umask, in-place rewrites that
keep the mode and write through symlinks, missing folders, never over an input, atomic.
Every test runs the installed tools in a shell with a set umask."""
import os
import stat

import numpy as np
import pytest

from user_session import ROOT, shell

AXPY = (ROOT / "samples" / "axpy.hlo").read_text()
MESSY = AXPY.replace("\n  ", "\n      ")   # indented differently: hlo-fmt rewrites it


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def work(tmp_path):
    (tmp_path / "axpy.hlo").write_text(AXPY)
    return tmp_path


def run_ok(command: str, cwd):
    result = shell(command, cwd)
    assert result.returncode == 0, (command, result.stderr)
    return result


@pytest.mark.parametrize("umask, expected", [("022", 0o644), ("002", 0o664), ("077", 0o600)])
def test_new_outputs_get_the_mode_the_umask_gives(work, umask, expected):
    run_ok(f"umask {umask} && hlo-opt axpy.hlo -o opt.hlo && hlo-run axpy.hlo --random-inputs --no-print "
           f"--output out.npz && hlo-aot axpy.hlo -o model", work)
    for name in ("opt.hlo", "out.npz", "model.o", "model.h"):
        assert mode(work / name) == expected, name


def test_rewriting_an_output_keeps_its_mode(work):
    run_ok("umask 022 && hlo-opt axpy.hlo -o opt.hlo && chmod 640 opt.hlo && hlo-opt axpy.hlo --pipeline=default "
           "-o opt.hlo", work)
    assert mode(work / "opt.hlo") == 0o640 and "fusion" in (work / "opt.hlo").read_text()


def test_formatting_in_place_keeps_the_mode_and_writes_through_a_symlink(work):
    target = work / "real" / "messy.hlo"
    target.parent.mkdir()
    target.write_text(MESSY)
    os.chmod(target, 0o664)
    (work / "link.hlo").symlink_to(target)
    result = run_ok("umask 077 && hlo-fmt link.hlo", work)
    assert "reformatted link.hlo" in result.stderr
    assert (work / "link.hlo").is_symlink(), "the link was replaced by a file"
    assert target.read_text() == AXPY, "the file the link points to was not formatted"
    assert mode(target) == 0o664
    assert sorted(os.listdir(target.parent)) == ["messy.hlo"], "a temporary file was left behind"


@pytest.mark.parametrize("command, outputs", [
    ("hlo-opt axpy.hlo -o new/dir/opt.hlo", ["new/dir/opt.hlo"]),
    ("hlo-run axpy.hlo --random-inputs --output new/dir/out.npz", ["new/dir/out.npz"]),
    ("hlo-aot axpy.hlo -o new/dir/model", ["new/dir/model.o", "new/dir/model.h"]),
])
def test_missing_output_folders_are_created(work, command, outputs):
    run_ok(f"umask 027 && {command}", work)
    for output in outputs:
        assert (work / output).is_file()
    assert mode(work / "new") == 0o750 and mode(work / "new" / "dir") == 0o750


def test_a_file_in_the_way_of_an_output_folder_is_named(work):
    result = shell("hlo-opt axpy.hlo -o axpy.hlo/sub/opt.hlo", work)
    assert result.returncode == 1
    assert result.stderr == "error: cannot write axpy.hlo/sub/opt.hlo: axpy.hlo is a file, not a folder\n"


def test_an_output_folder_that_cannot_be_created_is_named(work):
    (work / "locked").mkdir(mode=0o555)
    if os.access(work / "locked", os.W_OK):   # root may write anywhere, but not make folders in /sys
        command, missing = "hlo-opt axpy.hlo -o /sys/hlo-test/a/opt.hlo", "/sys/hlo-test"
    else:
        command, missing = "hlo-opt axpy.hlo -o locked/a/b/opt.hlo", "locked/a"
    result = shell(command, work)
    assert result.returncode == 1
    assert f"cannot create the folder {missing}: " in result.stderr and "Traceback" not in result.stderr


def test_outputs_never_overwrite_an_input_even_through_a_symlink(work):
    (work / "alias.hlo").symlink_to(work / "axpy.hlo")
    (work / "model.h").symlink_to(work / "axpy.hlo")
    np.savez(work / "in.npz", arg0=np.float32(2), arg1=np.ones(4, np.float32), arg2=np.ones(4, np.float32))
    for command in ("hlo-opt axpy.hlo -o alias.hlo", "hlo-run axpy.hlo --inputs in.npz --output in.npz",
                    "hlo-aot axpy.hlo -o model"):
        before = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()}
        assert "model.o" not in before
        result = shell(command, work)
        assert result.returncode == 1 and "refusing to overwrite the input file" in result.stderr, command
        assert {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()} == before, command


def test_special_files_are_written_in_place(work):
    """/dev/stdout and fifos cannot be renamed over: they are written directly (as root, a
    rename would even replace a device such as /dev/null by a regular file)."""
    result = run_ok("hlo-opt axpy.hlo -o /dev/stdout", work)
    assert result.stdout.startswith("HloModule axpy")
    os.mkfifo(work / "pipe")
    result = run_ok("cat pipe > copied.hlo & hlo-opt axpy.hlo -o pipe; wait", work)
    assert stat.S_ISFIFO(os.stat(work / "pipe").st_mode)
    assert (work / "copied.hlo").read_text().startswith("HloModule axpy")


def test_a_folder_as_output_is_refused(work):
    result = shell("hlo-opt axpy.hlo -o .", work)
    assert result.returncode == 1 and "cannot write .: it is a folder" in result.stderr
