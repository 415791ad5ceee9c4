"""hlo-diff: the structural difference between two HLO modules.

Instructions are matched by graph structure and opcode, never by name, so a module and a
renamed or renumbered copy of it are equal. Exit status as diff(1): 0 when the modules
are equal, 1 when they differ, 2 on trouble (a file that cannot be read or parsed, a bad
option); 70 when hlo-diff itself fails (a bug of ours).
"""
from __future__ import annotations

import sys

import click

from hlo.analysis.loading import load_module
from hlo.diagnostics import HloError
from hlo.tools.diff import diff_modules, format_json, format_text
from hlo.tools.diff_html import format_html
from hlo_cli.common import UsageError, emit, read_text, report, tool_main, version_option
from hlo_cli.files import OutputError
from hlo_cli.source import InputUsageError

EXIT_EQUAL = 0
EXIT_DIFFERENT = 1
EXIT_TROUBLE = 2


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("file_a", metavar="A.hlo")
@click.argument("file_b", metavar="B.hlo")
@click.option("--json", "as_json", is_flag=True, help="Write the difference as JSON.")
@click.option("--html", "as_html", is_flag=True, help="Write a side-by-side HTML page (use -o FILE.html).")
@click.option("-o", "--output", default=None, help="Write the report here (atomically) instead of stdout.")
@click.option("--all", "show_all", is_flag=True, help="Text: list unchanged instructions and computations too.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the text report (auto: when stdout is a terminal).")
@click.option("--verify/--no-verify", default=False, show_default=True,
              help="Run the shape checker on both modules before comparing.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells.")
@tool_main
def main(file_a: str, file_b: str, as_json: bool, as_html: bool, output: str | None, show_all: bool, color: str,
         verify: bool, quiet: bool) -> None:
    """Compare A.hlo with B.hlo ('-' for stdin): exit 0 when equal, 1 when different, 2 on trouble."""
    try:
        status = _compare(file_a, file_b, as_json, as_html, output, show_all, color, verify, quiet)
    except HloError as err:
        report(err.render())
        sys.exit(EXIT_TROUBLE)
    except (UsageError, OutputError, InputUsageError) as err:
        report(f"error: {err}")
        sys.exit(EXIT_TROUBLE)
    sys.exit(status)


def _compare(file_a, file_b, as_json, as_html, output, show_all, color, verify, quiet) -> int:
    if as_json and as_html:
        raise UsageError("--json and --html are exclusive: choose one report")
    if file_a == "-" and file_b == "-":
        raise UsageError("only one of the two modules can come from stdin")
    name_a, text_a = read_text(file_a)
    name_b, text_b = read_text(file_b)
    diff = diff_modules(load_module(text_a, name_a, verify=verify), load_module(text_b, name_b, verify=verify))
    status = EXIT_EQUAL if diff.equal else EXIT_DIFFERENT
    if quiet:
        return status
    if as_json:
        report = format_json(diff, name_a, name_b)
    elif as_html:
        report = format_html(diff, name_a, name_b)
    else:
        painted = color == "always" or (color == "auto" and output is None and sys.stdout.isatty())
        report = format_text(diff, name_a, name_b, painted, show_all)
    if report or output:
        emit(report, output, inputs=[file_a, file_b])
    return status


if __name__ == "__main__":
    main()
