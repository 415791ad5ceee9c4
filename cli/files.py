"""Writing output files the way a careful command-line tool does.

* Atomic: the bytes go to a temporary file in the target's folder, which is then renamed
  over the target, so a reader never sees half a file and a failed run leaves the old one.
* Modes: a new file gets the mode the umask gives (0666 & ~umask), as `>` in a shell
  would; rewriting an existing file keeps its mode, and its owner and group where the
  process may set them.
* Symlinks: writing to a symlink writes the file it points to (the link stays a link).
* Missing folders: the folders an output path names are created (like `mkdir -p`).
* Never over an input: a target that is one of the tool's input files is refused.
* Special files (`/dev/null`, `/dev/stdout`, a fifo) are written directly: they cannot
  be replaced by a rename.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class OutputError(Exception):
    """An output that cannot be written; the message names the path and the reason."""


def current_umask() -> int:
    """The process's umask (reading it means setting it; tools are single-threaded here)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def refuse_inputs(path: str, inputs=()) -> None:
    """OutputError if `path` (through symlinks) is one of `inputs` ('-' and None are skipped)."""
    if not os.path.exists(path):
        return
    for inp in inputs:
        if inp and inp != "-" and os.path.exists(inp) and os.path.samefile(inp, path):
            raise OutputError(f"refusing to overwrite the input file {path}")


def write_atomic(path: str, data: bytes | str, inputs=()) -> None:
    """Write `data` to `path` atomically, keeping an existing file's mode; see the module doc."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    refuse_inputs(path, inputs)
    existing = _existing_status(path)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        _write_special(path, data)
        return
    target = Path(os.path.realpath(path))       # through symlinks: the file a link names
    _make_folders(path, target.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        _apply_mode(fd, existing)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        _remove_quietly(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def _existing_status(path: str):
    """The status of the file `path` names (through symlinks), None if there is none."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OutputError(f"cannot write {path}: {_file_in_the_way(Path(path).parent)} is a file, "
                          f"not a folder") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror}") from None


def _write_special(path: str, data: bytes) -> None:
    """A folder is refused; a device, a fifo or /dev/stdout is written in place."""
    if os.path.isdir(path):
        raise OutputError(f"cannot write {path}: it is a folder; give a file name")
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _make_folders(path: str, folder: Path) -> None:
    """Create the missing folders of an output path, naming the one that cannot be made."""
    if folder.is_dir():
        return
    blocker = _file_in_the_way(folder)
    if blocker is not None:
        raise OutputError(f"cannot write {path}: {blocker} is a file, not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: cannot create the folder {_missing_folder(folder)}: "
                          f"{exc.strerror}") from None


def _file_in_the_way(folder: Path):
    """The first existing non-folder among `folder` and its parents, or None."""
    for candidate in [folder, *folder.parents]:
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _missing_folder(folder: Path) -> Path:
    """The outermost folder of `folder`'s path that does not exist."""
    missing = folder
    for candidate in folder.parents:
        if candidate.exists():
            break
        missing = candidate
    return missing


def _apply_mode(fd: int, existing) -> None:
    """mkstemp makes 0600 files: give the umask's mode, or keep the replaced file's."""
    if existing is None:
        os.fchmod(fd, 0o666 & ~current_umask())
        return
    try:
        os.fchown(fd, existing.st_uid, existing.st_gid)
    except OSError:   # only root may give a file away; the group may still be settable
        try:
            os.fchown(fd, -1, existing.st_gid)
        except OSError:
            pass
    os.fchmod(fd, stat.S_IMODE(existing.st_mode))   # after chown, which may clear set-id bits


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
