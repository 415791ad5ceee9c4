"""What every command-line tool shares: reading inputs, reporting errors, writing outputs.

* User errors (hlo.HloError) print as `file:line:col: error: ...` with the source
  line and a caret, and exit with status 1.
* Anything else is a bug in this toolchain: it is reported as an internal error
  and the tool exits with status 70 (EX_SOFTWARE). HLO_DEBUG=1 shows the traceback.
* Control characters from the input are shown as visible symbols, never sent raw.
* Outputs are written atomically, never over an input (hlo_cli.files has the rules:
  modes, symlinks, missing folders); module text is read by hlo_cli.source.
"""
from __future__ import annotations

import difflib
import functools
import os
import sys
import traceback
from importlib import metadata
from typing import Callable, Iterable

import click

from hlo.diagnostics import HloError
from hlo_cli.files import OutputError, write_atomic
from hlo_cli.source import InputUsageError, read_text

__all__ = ["EXIT_USER_ERROR", "EXIT_INTERNAL_ERROR", "UsageError", "tool_main", "read_text", "write_atomic",
           "emit", "report", "did_you_mean", "version_option"]

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 70


class UsageError(Exception):
    """A user error that is not about HLO text (bad option combination, unreadable file)."""


def visible(text: str) -> str:
    """`text` with control characters (but newlines and tabs) as Unicode control pictures,
    one column each so that carets stay aligned."""
    return text.translate(_CONTROL_PICTURES)


_CONTROL_PICTURES = {c: 0x2400 + c for c in range(32) if chr(c) not in "\n\t"} | {0x7F: 0x2421}


def report(text: str) -> None:
    """Print a message for the user on stderr."""
    click.echo(visible(text), err=True)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest choice, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def tool_version() -> str:
    try:
        return metadata.version("hlo-toolchain")
    except metadata.PackageNotFoundError:   # run from a source tree without installing
        return "unknown"


def version_option(fn: Callable) -> Callable:
    """--version: 'hlo-opt 0.1.0'."""
    return click.version_option(tool_version(), "--version", message="%(prog)s %(version)s")(fn)


def tool_main(fn: Callable) -> Callable:
    """Wrap a click command body: map errors to messages and exit statuses."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except HloError as err:
            report(err.render())
            sys.exit(EXIT_USER_ERROR)
        except (UsageError, OutputError, InputUsageError) as err:
            report(f"error: {err}")
            sys.exit(EXIT_USER_ERROR)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            report("interrupted")
            sys.exit(130)
        except BrokenPipeError:
            _quiet_stdout()
            sys.exit(0)
        except Exception as exc:  # a bug of ours, never the user's fault
            report(f"internal error: {type(exc).__name__}: {exc}")
            report("This is a bug in the HLO toolchain; please report it with the input that caused it.")
            if os.environ.get("HLO_DEBUG"):
                traceback.print_exc()
            sys.exit(EXIT_INTERNAL_ERROR)
    return wrapper


def _quiet_stdout() -> None:
    """After a closed pipe (`| head`), send what is left to /dev/null so exit does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def emit(text: str, output: str | None, inputs=()) -> None:
    """Print to stdout, or write atomically to `output`."""
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(output, text, inputs)
