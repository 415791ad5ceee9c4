"""hlo-opt: parse, check, transform and print HLO modules (like mlir-opt).

Passes come from `--passes TEXT` or a named pipeline (`--pipeline default`).
Instrumentation goes to stderr so that stdout (or -o) carries only the result:
`--print-after-all`, `--print-after NAME` print the module after passes,
`--print-changed` prints a unified diff after each pass that changed something,
`--time-passes` a table of seconds per pass, `--stats` instruction counts by
opcode before and after. `--print-changed=structural` prints hlo-diff's structural
diff instead of a text diff. `--emit dot` writes a Graphviz drawing instead of HLO
(Graphviz's `dot` program turns it into a picture; a note says so when it is missing),
`--emit html` a self-contained interactive page (hlo.tools.graph_page).
"""
from __future__ import annotations

import collections
import difflib
import enum
import re
import shutil
import sys
from dataclasses import dataclass, field

import click

from hlo import format_module
from hlo.analysis.loading import load_module
from hlo.opcodes import Op
from hlo.passes.pass_manager import PassRunner, available_passes, parse_pipeline
from hlo.passes.pipelines import PIPELINE_SPECS, pipeline_text
from hlo.text.dot import module_to_dot
from hlo.passes.spmd_stats import collective_stats, format_stats
from hlo.progress import Progress
from hlo.text.parser import parse_module
from hlo.tools.diff import pass_change_report
from hlo_cli.common import UsageError, did_you_mean, emit, read_text, report, tool_main, version_option


class Emit(enum.StrEnum):
    """What --emit writes."""
    HLO = "hlo"      # the canonical text
    DOT = "dot"      # a Graphviz drawing of one computation
    LLVM = "llvm"    # the compiled backend's LLVM IR
    ASM = "asm"      # the compiled backend's host assembly
    HTML = "html"    # a self-contained interactive page of the graphs


def _list_passes() -> str:
    passes = available_passes()
    width = max(len(name) for name in passes)
    lines = [f"  {name:<{width}}  {cls.description}\n" for name, cls in passes.items()]
    lines.append("\npipelines (--pipeline NAME):\n")
    lines += [f"  {name}: {pipeline_text(name)}\n" for name in PIPELINE_SPECS]
    return "".join(lines)


def _err(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


# --------------------------------------------------------------------------- instrumentation

def top_level_opcode_counts(module) -> collections.Counter:
    """Instructions by opcode outside fused computations (a fusion counts as one `fusion`)."""
    fused = {id(i.attrs["calls"]) for c in module.computations for i in c.instructions if i.opcode == Op.FUSION}
    return collections.Counter(i.opcode for c in module.computations if id(c) not in fused
                               for i in c.instructions)


def stats_table(before: collections.Counter, after: collections.Counter) -> str:
    opcodes = sorted(set(before) | set(after))
    width = max([len("opcode"), len("total")] + [len(o) for o in opcodes])
    lines = ["instruction counts (outside fused computations):",
             f"  {'opcode':<{width}}  {'before':>7}  {'after':>7}  {'change':>7}"]
    for opcode in opcodes:
        b, a = before.get(opcode, 0), after.get(opcode, 0)
        lines.append(f"  {opcode:<{width}}  {b:>7}  {a:>7}  {a - b:>+7}")
    b, a = sum(before.values()), sum(after.values())
    lines.append(f"  {'total':<{width}}  {b:>7}  {a:>7}  {a - b:>+7}")
    return "\n".join(lines) + "\n"


@dataclass
class PassTimes:
    runs: int = 0
    changed: int = 0
    seconds: float = 0.0


def time_table(events) -> str:
    totals: dict[str, PassTimes] = {}
    for event in events:
        t = totals.setdefault(event.name, PassTimes())
        t.runs += 1
        t.changed += event.changed
        t.seconds += event.seconds
    width = max([len("pass"), len("total")] + [len(n) for n in totals])
    lines = ["pass timings:", f"  {'pass':<{width}}  {'runs':>5}  {'changed':>7}  {'seconds':>9}  {'%':>6}"]
    grand = sum(t.seconds for t in totals.values()) or 1e-12
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1].seconds):
        lines.append(f"  {name:<{width}}  {t.runs:>5}  {t.changed:>7}  {t.seconds:>9.4f}  "
                     f"{100 * t.seconds / grand:>5.1f}%")
    total = sum(t.seconds for t in totals.values())
    lines.append(f"  {'total':<{width}}  {sum(t.runs for t in totals.values()):>5}  "
                 f"{sum(t.changed for t in totals.values()):>7}  {total:>9.4f}  {100.0:>5.1f}%")
    return "\n".join(lines) + "\n"


@dataclass
class Printer:
    """Pass observer printing modules and diffs to stderr."""
    after_all: bool = False
    after: tuple[str, ...] = ()
    changed_diff: str | None = None     # None, "unified" or "structural"
    last_text: str = ""
    runs: collections.Counter = field(default_factory=collections.Counter)

    def __call__(self, event, module) -> None:
        self.runs[event.name] += 1
        label = f"{event.name} (run {self.runs[event.name]})"
        text = None
        if self.after_all or event.name in self.after:
            text = format_module(module)
            state = "changed" if event.changed else "unchanged"
            _err(f"// ----- module after {label}, {state} -----\n{text}")
        if self.changed_diff == "structural" and event.changed:
            text = text if text is not None else format_module(module)
            _err(pass_change_report(parse_module(self.last_text, "before"), module, label, color=sys.stderr.isatty()))
            self.last_text = text
        elif self.changed_diff:
            if event.changed:
                text = text if text is not None else format_module(module)
                diff = difflib.unified_diff(self.last_text.splitlines(keepends=True), text.splitlines(keepends=True),
                                            fromfile=f"before {label}", tofile=f"after {label}")
                _err("".join(diff))
                self.last_text = text


# --------------------------------------------------------------------------- the command

@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("input_file", required=False, metavar="FILE")
@click.option("-o", "--output", default=None, help="Write the result here (atomically; missing folders are "
              "created) instead of stdout.")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Run the shape checker on the parsed module.")
@click.option("--passes", "pipeline", default=None, metavar="PIPELINE",
              help="Passes to run, e.g. 'call-inliner,fixpoint(tuple-simplifier,cse,dce)'.")
@click.option("--pipeline", "pipeline_name", default=None, metavar="NAME",
              help="Run a named pipeline (e.g. 'default'); --list-passes shows them.")
@click.option("--verify-each/--no-verify-each", default=None,
              help="Run the checker after every pass that changed the module, naming a pass that breaks it "
                   "(default: only once the passes are done, unless $HLO_VERIFY_EACH is set).")
@click.option("--list-passes", is_flag=True, help="List the available passes and pipelines and exit.")
@click.option("--print-after-all", is_flag=True, help="Print the module to stderr after every pass.")
@click.option("--print-after", multiple=True, metavar="PASS",
              help="Print the module to stderr after each run of PASS (repeatable).")
@click.option("--print-changed", type=click.Choice(["unified", "structural"]), is_flag=False, flag_value="unified",
              default=None, help="After every pass that changed the module, print to stderr a unified text diff "
                                 "(--print-changed) or hlo-diff's structural diff (--print-changed=structural).")
@click.option("--time-passes", is_flag=True, help="Print seconds spent per pass to stderr.")
@click.option("--stats", is_flag=True, help="Print instruction counts by opcode before and after, and the "
              "collectives with the bytes each device moves, to stderr.")
@click.option("--emit", "emit_kind", type=click.Choice([kind.value for kind in Emit]), default=Emit.HLO.value,
              show_default=True,
              help="Output HLO text, a Graphviz dot drawing of one computation (render it with Graphviz), "
                   "a self-contained interactive HTML page of the graphs (needs nothing but a browser), "
                   "or the cpu backend's LLVM IR / host assembly (after the 'default' pipeline unless "
                   "--passes/--pipeline ran).")
@click.option("--computation", default=None, metavar="NAME",
              help="With --emit=dot: the computation to draw (default: the entry).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line on stderr (it shows, on a terminal, for work "
              "taking over a second).")
@tool_main
def main(input_file: str | None, output: str | None, verify: bool, pipeline: str | None, pipeline_name: str | None,
         verify_each: bool | None, list_passes: bool, print_after_all: bool, print_after: tuple[str, ...],
         print_changed: str | None, time_passes: bool, stats: bool, emit_kind: str, computation: str | None,
         quiet: bool) -> None:
    """Parse FILE ('-' for stdin), check it, run passes and print its canonical text."""
    if list_passes:
        click.echo(_list_passes(), nl=False)
        return
    input_file = _input_or_stdin(input_file)
    steps_text = _pipeline_text(pipeline, pipeline_name)
    _check_options(steps_text, verify, verify_each, print_after, print_after_all or print_changed or
                   time_passes, emit_kind, computation)
    name, text = read_text(input_file)
    with Progress("loading", quiet=bool(quiet or print_after_all or print_after or print_changed)) as progress:
        module = load_module(text, name, verify=verify, progress=progress)
        before = top_level_opcode_counts(module) if stats else None
        if steps_text is not None:
            events = _run(module, steps_text, verify, verify_each, print_after_all, print_after, print_changed,
                          progress)
    if steps_text is not None and time_passes:
        _err(time_table(events))
    if stats:
        _err(stats_table(before, top_level_opcode_counts(module)))
        devices = module.config.replica_count * module.config.num_partitions
        moved = collective_stats(format_module(module), devices)
        if moved["counts"]:
            _err(format_stats(moved))
    emit_output(module, output, input_file, emit_kind, computation, run_default=steps_text is None)


def emit_output(module, output, input_file, kind: str, computation: str | None, run_default: bool = True) -> None:
    if kind in (Emit.LLVM, Emit.ASM):
        # llvmlite and the code generator load only for --emit llvm/asm.
        from hlo.codegen import CodegenOptions, compile_assembly, lower_module  # lazy: llvmlite
        options = CodegenOptions(run_pipeline=run_default)
        lowered = lower_module(module, options)
        text = with_target(lowered.llvm_ir, options) if kind == Emit.LLVM else compile_assembly(lowered, options)
        emit(text, output, inputs=[input_file])
    elif kind == Emit.DOT:
        if shutil.which("dot") is None:   # said first: a `| dot` that fails closes the pipe early
            report("note: this is Graphviz text; drawing it (dot -Tsvg > graph.svg) needs Graphviz's 'dot' "
                   "program, which is not installed (https://graphviz.org/download/, e.g. apt install graphviz); "
                   "--emit=html writes a page that needs only a browser")
        emit(module_to_dot(module, computation), output, inputs=[input_file])
    elif kind == Emit.HTML:
        from hlo.tools.graph_page import graph_page  # lazy: the page's assets load only for --emit=html
        emit(graph_page(module, input_file if input_file != "-" else ""), output, inputs=[input_file])
    else:
        emit(format_module(module), output, inputs=[input_file])


def with_target(llvm_ir: str, options) -> str:
    """The IR as code generation sees it: the target's triple and data layout, not llvmlite's
    placeholders (`unknown-unknown-unknown`)."""
    from hlo.codegen.target import create_target_machine, resolved_target  # lazy: llvmlite
    triple = resolved_target(options)[0]
    layout = str(create_target_machine(options).target_data)
    llvm_ir = re.sub(r'^target triple = ".*"$', f'target triple = "{triple}"', llvm_ir, count=1, flags=re.M)
    if re.search(r'^target datalayout = ', llvm_ir, flags=re.M):
        return re.sub(r'^target datalayout = ".*"$', f'target datalayout = "{layout}"', llvm_ir, count=1, flags=re.M)
    # the parts linked into one module carry no data layout line: add it before the triple
    return re.sub(r'^(target triple = )', f'target datalayout = "{layout}"\n\\1', llvm_ir, count=1, flags=re.M)


def _input_or_stdin(input_file: str | None) -> str:
    """FILE, or '-' when it is left out and stdin is a pipe; on a terminal it is a usage error
    (waiting for typed HLO would look like a hang)."""
    if input_file is not None:
        return input_file
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("Missing argument 'FILE' (an .hlo file, or '-' to read standard input).")
    return "-"


def _pipeline_text(passes: str | None, pipeline_name: str | None) -> str | None:
    if passes is not None and pipeline_name is not None:
        raise UsageError("--passes and --pipeline are exclusive: give one pipeline")
    if pipeline_name is None:
        return passes
    if pipeline_name not in PIPELINE_SPECS:
        raise UsageError(f"unknown pipeline '{pipeline_name}'{did_you_mean(pipeline_name, PIPELINE_SPECS)}; "
                         f"pipelines: {', '.join(sorted(PIPELINE_SPECS))}")
    return pipeline_text(pipeline_name)


def _check_options(pipeline, verify, verify_each, print_after, needs_pipeline, emit_kind, computation) -> None:
    if pipeline is not None and not verify and verify_each:  # (None: not asked for)
        raise UsageError("--no-verify needs --no-verify-each: passes are checked only on a valid module")
    if (print_after or needs_pipeline) and pipeline is None:
        raise UsageError("--print-after*, --print-changed and --time-passes need --passes or --pipeline")
    if print_after:
        unknown = [p for p in print_after if p not in available_passes()]
        if unknown:
            raise UsageError(f"--print-after: unknown pass '{unknown[0]}'{did_you_mean(unknown[0], available_passes())}"
                             "; --list-passes shows the passes")
    if computation is not None and emit_kind != Emit.DOT:
        raise UsageError("--computation selects what --emit=dot draws; add --emit=dot")


def _run(module, steps_text, verify, verify_each, print_after_all, print_after, print_changed, progress=None):
    steps = parse_pipeline(steps_text)
    observers = []
    if print_after_all or print_after or print_changed:
        printer = Printer(print_after_all, tuple(print_after), print_changed)
        if print_changed:
            printer.last_text = format_module(module)
        observers.append(printer)
    runner = PassRunner(verify_each if verify else False, observers, verify=verify, progress=progress)
    runner.run(module, steps)
    return runner.events


if __name__ == "__main__":
    main()
