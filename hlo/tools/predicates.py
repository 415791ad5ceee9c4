"""What makes a candidate module "interesting" to hlo-reduce.

Each predicate takes the candidate's text (already printed canonically and accepted by the
checker) and answers True when the candidate still shows the bug:

* `CommandPredicate(cmd, "test")`: a shell command exits 0 (--test 'CMD');
* `CommandPredicate(cmd, "crash")`: the command exits 70 (this toolchain's internal-error
  status) or dies by a signal (--crash; CMD defaults to hlo-run on random inputs);
* `CommandPredicate(cmd, "error", text)`: the command's output contains TEXT (--error-contains);
* `MismatchPredicate(a, b)`: backends a and b both run the candidate on the same random
  inputs and their outputs differ beyond tolerances (--mismatch A,B).

The candidate is written to a file in a private temporary folder; `{}` in CMD stands for its
path (shell-quoted), or the path is appended when CMD has no `{}`; the environment variable
HLO_REDUCE_FILE names it too. A candidate that runs longer than the timeout is not interesting
(`timeout` None: no limit; hlo-reduce sets it from the input's own time, see hlo.tools.reduce).
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .backends import BackendWorker, compare_outputs

EXIT_INTERNAL_ERROR = 70


def default_run_command() -> str:
    """What --crash and --error-contains run unless --run says otherwise."""
    return f"{shlex.quote(sys.executable)} -m hlo_cli.hlo_run {{}} --random-inputs --no-print"


def command_line(cmd: str, path: str) -> str:
    quoted = shlex.quote(path)
    return cmd.replace("{}", quoted) if "{}" in cmd else f"{cmd} {quoted}"


def died_by_signal(returncode: int) -> Optional[int]:
    """The signal that ended the process (directly, or as a shell reports it: 128 + N)."""
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65 and returncode - 128 in {s.value for s in signal.Signals}:
        return returncode - 128
    return None


@dataclass
class CommandPredicate:
    command: str
    mode: str                        # test, crash, error
    text: str = ""
    timeout: Optional[float] = None
    last: str = field(default="", init=False)      # what the last run showed, for messages
    _folder: Optional[tempfile.TemporaryDirectory] = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if self.mode not in ("test", "crash", "error"):
            raise ValueError(self.mode)

    def __call__(self, text: str) -> bool:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="hlo-reduce-")
        path = str(Path(self._folder.name) / "candidate.hlo")
        Path(path).write_text(text)
        env = dict(os.environ, HLO_REDUCE_FILE=path)
        try:
            done = subprocess.run(command_line(self.command, path), shell=True, capture_output=True, env=env,
                                  timeout=self.timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.last = f"timed out after {self.timeout:g} s"
            return False
        output = (done.stdout + done.stderr).decode("utf-8", errors="replace")
        sig = died_by_signal(done.returncode)
        self.last = f"exit status {done.returncode}" + (f" (signal {signal.Signals(sig).name})" if sig else "")
        if self.mode == "test":
            return done.returncode == 0
        if self.mode == "crash":
            return done.returncode == EXIT_INTERNAL_ERROR or sig is not None
        return self.text in output

    def describe(self) -> str:
        what = {"test": "exits 0", "crash": "exits 70 or dies by a signal",
                "error": f"prints {self.text!r}"}[self.mode]
        return f"'{self.command}' {what}"

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


@dataclass
class MismatchPredicate:
    backend_a: str
    backend_b: str
    seed: int = 0
    rtol: Optional[float] = None
    atol: Optional[float] = None
    timeout: Optional[float] = None
    last: str = field(default="", init=False)
    _worker: Optional[BackendWorker] = field(default=None, init=False, repr=False)

    def __call__(self, text: str) -> bool:
        if self._worker is None:
            self._worker = BackendWorker()
        outcomes = []
        for backend in (self.backend_a, self.backend_b):
            outcome = self._worker.run(text, backend, self.seed, self.timeout)
            if outcome.status != "ok":      # an error, a crash or a timeout is another bug, not this one
                first = (outcome.message.strip().splitlines() or [""])[0]
                self.last = f"{backend}: {outcome.status}: {first}"
                return False
            outcomes.append(outcome)
        difference = compare_outputs(outcomes[0].outputs, outcomes[1].outputs, self.rtol, self.atol)
        self.last = difference or "the outputs agree"
        return difference is not None

    def describe(self) -> str:
        return f"{self.backend_a} and {self.backend_b} disagree (seed {self.seed})"

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
