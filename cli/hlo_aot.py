"""hlo-aot: compile an HLO module ahead of time into PREFIX.o and PREFIX.h."""
from __future__ import annotations

import os
import re
from typing import Optional

import click
import llvmlite.binding as llvm

from hlo.analysis.loading import load_module
from hlo.codegen import CodegenOptions
from hlo.codegen.aot import compile_aot, is_c_identifier
from hlo.codegen.target import resolved_target
from hlo_cli.common import UsageError, read_text, tool_main, version_option, write_atomic
from hlo_cli.files import refuse_inputs

HELP = """Compile MODULE (an .hlo file, '-' for stdin) to PREFIX.o and PREFIX.h.

\b
The object defines   void NAME(void** args, void** results, void* temp);
and needs only libc/libm (link with -lm). The header gives each argument's and
result's element type, rank, dimensions, layout and byte size, the temp size,
and a C++ wrapper class NAME_Class (arg_data(i), result_data(i), Run()).
Buffers hold elements in their layout's physical order: row-major for the default
layouts, column-major for {0,1} (JAX's gradients often come back so); the header
says which for each buffer and defines NAME_arg<i>_index(i, j, ...) and
NAME_result<j>_index(...), the position of an element in its buffer.
NAME defaults to PREFIX's file name made a C identifier; missing folders of
PREFIX are created.
The host CPU and its features are targeted unless --target-triple/--cpu/--features say otherwise.
"""


def default_name(prefix: str) -> str:
    """PREFIX's base name as a C identifier."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(prefix)) or "hlo_entry"
    return base if not base[0].isdigit() else "_" + base


@click.command(help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("module_file", metavar="MODULE")
@click.option("-o", "--output", "prefix", required=True, metavar="PREFIX",
              help="Write PREFIX.o and PREFIX.h (atomically).")
@click.option("--name", help="The C function's name (default: from PREFIX).")
@click.option("--target-triple", "triple", metavar="T", help="Target triple (default: the host's).")
@click.option("--cpu", metavar="C", help="Target CPU (default: the host's for the host triple, generic otherwise).")
@click.option("--features", metavar="F", help="Target features, e.g. +avx2,+fma (default: the host CPU's).")
@click.option("-O", "opt_level", type=click.IntRange(0, 3), default=3, show_default=True,
              help="LLVM optimisation level.")
@click.option("--verify/--no-verify", default=True, show_default=True, help="Check the module before compiling.")
@tool_main
def main(module_file: str, prefix: str, name: Optional[str], triple: Optional[str], cpu: Optional[str],
         features: Optional[str], opt_level: int, verify: bool) -> None:
    name = name or default_name(prefix)
    if not is_c_identifier(name):
        raise UsageError(f"--name {name!r} is not a C identifier")
    outputs = (prefix + ".o", prefix + ".h")
    for out in outputs:   # before compiling, so that a refused run writes neither file
        refuse_inputs(out, (module_file,))
    filename, text = read_text(module_file)
    module = load_module(text, filename, verify=verify)
    options = CodegenOptions(opt_level=opt_level, triple=triple, cpu=cpu, features=features)
    artifacts = compile_aot(module, name, _checked_target(options))
    write_atomic(outputs[0], artifacts.object_code, (module_file,))
    write_atomic(outputs[1], artifacts.header, (module_file,))


def _checked_target(options: CodegenOptions) -> CodegenOptions:
    """Reject an unknown triple as a user error rather than an internal one."""
    if options.triple:
        resolved_target(options)  # initialises the targets
        try:
            llvm.Target.from_triple(options.triple)
        except RuntimeError as exc:
            raise UsageError(f"unknown target triple {options.triple!r}: {exc}") from None
    return options


if __name__ == "__main__":
    main()
