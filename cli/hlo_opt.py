"""hlo-opt: parse, check, transform and print HLO modules (like mlir-opt)."""
from __future__ import annotations

import click

from hlo import format_module, parse_module
from .common import UsageError, emit, read_text, tool_main


def _check(module) -> None:
    from hlo.checker import check_module
    check_module(module)


def _list_passes() -> str:
    from hlo.passes.pass_manager import available_passes
    passes = available_passes()
    width = max(len(name) for name in passes)
    return "".join(f"  {name:<{width}}  {cls.description}\n" for name, cls in passes.items())


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("input_file", default="-", metavar="FILE")
@click.option("-o", "--output", default=None, help="Write the result here (atomically) instead of stdout.")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Run the shape checker on the parsed module.")
@click.option("--passes", "pipeline", default=None, metavar="PIPELINE",
              help="Passes to run, e.g. 'call-inliner,fixpoint(tuple-simplifier,cse,dce)'.")
@click.option("--verify-each/--no-verify-each", default=True, show_default=True,
              help="Run the checker after every pass that changed the module.")
@click.option("--list-passes", is_flag=True, help="List the available passes and exit.")
@tool_main
def main(input_file: str, output: str | None, verify: bool, pipeline: str | None, verify_each: bool,
         list_passes: bool) -> None:
    """Parse FILE ('-' for stdin), check it, run passes and print its canonical text."""
    if list_passes:
        click.echo(_list_passes(), nl=False)
        return
    name, text = read_text(input_file)
    module = parse_module(text, name)
    if verify:
        _check(module)
    if pipeline is not None:
        from hlo.passes.pass_manager import run_pipeline
        if not verify and verify_each:
            raise UsageError("--no-verify needs --no-verify-each: passes are checked only on a valid module")
        run_pipeline(module, pipeline, verify_each=verify_each)
    emit(format_module(module), output, inputs=[input_file])


if __name__ == "__main__":
    main()
