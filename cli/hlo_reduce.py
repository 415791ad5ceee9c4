"""hlo-reduce: shrink a module that shows a bug to a small one that still shows it.

Exactly one predicate says what "still shows the bug" means:

    --mismatch A,B          backends A and B (interpreter, cpu) give different outputs on
                            the same random inputs (--seed, --rtol, --atol)
    --crash                 the --run command exits 70 (an internal error of this
                            toolchain) or dies by a signal
    --error-contains TEXT   the --run command's output contains TEXT
    --test CMD              the shell command CMD exits 0

Commands see the candidate as `{}` (or appended to the command), and as $HLO_REDUCE_FILE.
Every candidate passes the checker before the predicate sees it. Progress and the final
size go to stderr; the result to -o (atomically) or stdout. Exit status 0 when a module was
written, 1 when the input is not interesting or not valid, 70 on an internal error.
"""
from __future__ import annotations

import sys
from typing import Optional

import click

from hlo.tools.backends import available_backends
from hlo.tools.predicates import CommandPredicate, MismatchPredicate, default_run_command
from hlo.tools.reduce import NotInteresting, Reducer
from hlo_cli.common import UsageError, emit, read_text, tool_main, version_option


def _log(message: str) -> None:
    sys.stderr.write(f"hlo-reduce: {message}\n")
    sys.stderr.flush()


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("module_file", metavar="MODULE")
@click.option("-o", "--output", default=None, help="Write the reduced module here (atomically) instead of stdout.")
@click.option("--mismatch", default=None, metavar="A,B", help="Interesting when backends A and B disagree.")
@click.option("--crash", is_flag=True, help="Interesting when the --run command exits 70 or dies by a signal.")
@click.option("--error-contains", default=None, metavar="TEXT",
              help="Interesting when the --run command's output contains TEXT.")
@click.option("--test", "test_command", default=None, metavar="CMD",
              help="Interesting when the shell command CMD exits 0 ({} is the candidate file).")
@click.option("--run", "run_command", default=None, metavar="CMD",
              help="The command --crash and --error-contains run (default: hlo-run {} --random-inputs).")
@click.option("--seed", type=int, default=0, show_default=True, help="--mismatch: seed of the random inputs.")
@click.option("--rtol", type=float, default=None, help="--mismatch: relative tolerance (default by element type).")
@click.option("--atol", type=float, default=None, help="--mismatch: absolute tolerance (default by element type).")
@click.option("--timeout", type=float, default=None,
              help="Seconds a candidate may run; longer is not interesting (default: ten times what the "
                   "input took, at least 10).")
@click.option("--max-rounds", type=click.IntRange(min=1), default=20, show_default=True,
              help="Rounds of all strategies at most.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr, only the final size.")
@tool_main
def main(module_file: str, output: Optional[str], mismatch: Optional[str], crash: bool,
         error_contains: Optional[str], test_command: Optional[str], run_command: Optional[str], seed: int,
         rtol: Optional[float], atol: Optional[float], timeout: Optional[float], max_rounds: int, quiet: bool) -> None:
    """Reduce MODULE ('-' for stdin) while the chosen predicate holds."""
    predicate = _predicate(mismatch, crash, error_contains, test_command, run_command, seed, rtol, atol, timeout)
    name, text = read_text(module_file)
    log = (lambda m: None) if quiet else _log
    try:
        reducer = Reducer(text, predicate, log, name, max_rounds)
        try:
            result = reducer.run()
        except NotInteresting:
            raise UsageError(f"the input is not interesting: {predicate.describe()} does not hold for it "
                             f"({predicate.last})") from None
    finally:
        predicate.close()
    if quiet:
        _log(f"{reducer.original_size[0]} -> {reducer.best_size[0]} instructions")
    emit(result, output, inputs=[module_file])


def _predicate(mismatch, crash, error_contains, test_command, run_command, seed, rtol, atol, timeout):
    chosen = [flag for flag, given in (("--mismatch", mismatch), ("--crash", crash),
                                       ("--error-contains", error_contains), ("--test", test_command)) if given]
    if len(chosen) != 1:
        raise UsageError("give exactly one predicate: --mismatch A,B, --crash, --error-contains TEXT or --test CMD"
                         + (f" (got {', '.join(chosen)})" if chosen else ""))
    if run_command is not None and not (crash or error_contains):
        raise UsageError("--run gives the command of --crash and --error-contains")
    if (rtol is not None or atol is not None) and not mismatch:
        raise UsageError("--rtol and --atol go with --mismatch")
    if mismatch:
        backends = [b.strip() for b in mismatch.split(",")]
        known = available_backends()
        if len(backends) != 2 or any(b not in known for b in backends):
            raise UsageError(f"--mismatch takes two backends A,B from: {', '.join(known)}")
        return MismatchPredicate(backends[0], backends[1], seed, rtol, atol, timeout)
    if test_command is not None:
        return CommandPredicate(test_command, "test", timeout=timeout)
    command = run_command or default_run_command()
    if crash:
        return CommandPredicate(command, "crash", timeout=timeout)
    return CommandPredicate(command, "error", error_contains, timeout=timeout)


if __name__ == "__main__":
    main()
