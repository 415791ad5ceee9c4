"""hlo-fmt: format HLO files with the canonical printer, keeping their comments.

    hlo-fmt FILE...            rewrite each file in place (atomically, keeping its mode;
                               a symlink's target is rewritten) when it changes
    hlo-fmt --stdout FILE...   print the formatted text instead
    hlo-fmt -                  read standard input, print to standard output
    hlo-fmt --check FILE...    change nothing; exit 1 if some file would be reformatted

The rules are those of the language server's formatting (hlo.lsp.formatting): a
comment on its own line stays before the next statement, a comment at the end of
a line stays at the end of that line, and a file with a comment inside a
statement (or with errors) is left alone and reported. Exit status: 0 when every
file is formatted (or, with --check, already was), 1 otherwise.
"""
from __future__ import annotations

import sys

import click

from hlo.diagnostics import HloError
from hlo.lsp.formatting import FormatResult, format_text
from hlo_cli.common import EXIT_USER_ERROR, UsageError, read_text, report, tool_main, version_option, write_atomic
from hlo_cli.source import InputUsageError


def _location(name: str, text: str, offset: int) -> str:
    if offset < 0:
        return name
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{name}:{line}:{column}"


def _report_refusal(name: str, text: str, result: FormatResult) -> None:
    if result.errors:
        # Only the errors to fix: not those that follow from another (a name whose line failed).
        from hlo.analysis.loading import without_cascades  # lazy: the checker loads only for files with errors
        report(HloError(without_cascades(result.errors, text)).render())
        report(f"{name}: error: not formatted: fix the errors above first")
        return
    report(f"{_location(name, text, result.offset)}: error: cannot format: {result.reason}")


def _format_one(path: str, check: bool, to_stdout: bool) -> bool:
    """Format one file; False if it could not be formatted (or, with check, would change)."""
    try:
        name, text = read_text(path)
    except HloError as err:   # binary or MLIR: say so and go on with the other files
        report(err.render())
        return False
    except InputUsageError as err:
        report(f"error: {err}")
        return False
    result = format_text(text, name)
    if result.text is None:
        _report_refusal(name, text, result)
        return False
    if check:
        if result.text != text:
            report(f"would reformat {name}")
            return False
        return True
    if to_stdout or path == "-":
        sys.stdout.write(result.text)
        sys.stdout.flush()
    elif result.text != text:
        write_atomic(path, result.text)
        report(f"reformatted {name}")
    return True


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("files", nargs=-1, required=True)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file would be reformatted.")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print formatted text instead of rewriting files.")
@tool_main
def main(files, check, to_stdout):
    """Format HLO files in place (or to stdout) with the canonical printer, keeping comments."""
    if files.count("-") > 1:
        raise UsageError("standard input ('-') can be given only once")
    ok = True
    for path in files:
        ok = _format_one(path, check, to_stdout) and ok
    if not ok:
        sys.exit(EXIT_USER_ERROR)


if __name__ == "__main__":
    main()
