"""What every command-line tool shares: reading inputs, reporting errors, writing outputs.

* User errors (hlo.HloError) print as `file:line:col: error: ...` with the source
  line and a caret, and exit with status 1.
* Anything else is a bug in this toolchain: it is reported as an internal error
  and the tool exits with status 70 (EX_SOFTWARE). HLO_DEBUG=1 shows the traceback.
* Outputs are written atomically (temporary file + rename), never over an input.
"""
from __future__ import annotations

import functools
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Callable

import click

from hlo.diagnostics import HloError, SourceFile, error

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 70


class UsageError(Exception):
    """A user error that is not about HLO text (bad option combination, unreadable file)."""


def tool_main(fn: Callable) -> Callable:
    """Wrap a click command body: map errors to messages and exit statuses."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except HloError as err:
            click.echo(err.render(), err=True)
            sys.exit(EXIT_USER_ERROR)
        except UsageError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_USER_ERROR)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)
        except Exception as exc:  # a bug of ours, never the user's fault
            click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
            click.echo("This is a bug in the HLO toolchain; please report it with the input that caused it.",
                       err=True)
            if os.environ.get("HLO_DEBUG"):
                traceback.print_exc()
            sys.exit(EXIT_INTERNAL_ERROR)
    return wrapper


def read_text(path: str) -> tuple[str, str]:
    """(display name, text) of a file, or of standard input for '-'."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return path, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Located like any other error: the line as far as it decodes, the caret on the bad byte.
        before = data[:exc.start].decode("utf-8", errors="replace")
        shown = data.decode("utf-8", errors="replace")
        offset = len(before)
        raise error(f"the file is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
                    SourceFile(path, shown).loc(offset)) from None


def write_atomic(path: str, data: bytes | str, inputs=()) -> None:
    """Write `data` to `path` via a temporary file and a rename; refuse to overwrite an input."""
    target = Path(path)
    for inp in inputs:
        if inp and inp != "-" and Path(inp).exists() and target.exists() and os.path.samefile(inp, target):
            raise UsageError(f"refusing to overwrite the input file {path}")
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        raise


def emit(text: str, output: str | None, inputs=()) -> None:
    """Print to stdout, or write atomically to `output`."""
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(output, text, inputs)
