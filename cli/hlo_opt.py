"""hlo-opt: parse, check, transform and print HLO modules (like mlir-opt)."""
from __future__ import annotations

import click

from hlo import format_module, parse_module
from .common import emit, read_text, tool_main


def _check(module) -> None:
    from hlo.checker import check_module
    check_module(module)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("input_file", default="-", metavar="FILE")
@click.option("-o", "--output", default=None, help="Write the result here (atomically) instead of stdout.")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Run the shape checker on the parsed module.")
@tool_main
def main(input_file: str, output: str | None, verify: bool) -> None:
    """Parse FILE ('-' for stdin), check it and print its canonical text."""
    name, text = read_text(input_file)
    module = parse_module(text, name)
    if verify:
        _check(module)
    emit(format_module(module), output, inputs=[input_file])


if __name__ == "__main__":
    main()
