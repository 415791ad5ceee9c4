"""What the user-level CLI tests share: a fresh copy of the repository, a fresh virtual
environment, shell commands run the way a person types them, and the README's commands."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "samples/mlp_layer.hlo"
COMMAND_TIMEOUT = 600
# hlo-reduce's bug predicates do not hold for a sample without the bug: such a command must
# still run end to end and say so (the --test example gets a check that holds, and reduces).
NOT_INTERESTING = "error: the input is not interesting: "


def placeholders(sample_text: str) -> dict[str, tuple[str, int]]:
    """The README's placeholder files: name -> (content, mode)."""
    renamed = re.sub(r"%(dot|relu)\b", lambda m: {"dot": "%matmul", "relu": "%activation"}[m.group(1)],
                     sample_text)
    check = '#!/bin/sh\n# still interesting while the module computes a maximum\ngrep -q maximum "$1"\n'
    return {"MODULE.hlo": (sample_text, 0o644), "model.hlo": (sample_text, 0o644),
            "model.renamed.hlo": (renamed, 0o644), "my-check.sh": (check, 0o755)}


@dataclass
class Command:
    """One command of the README: shell text or a Python block, and any output it shows."""
    text: str
    kind: str                 # "shell" or "python"
    line: int                 # where it is in the README
    shown_output: list[str]   # lines the README prints after a `$ command` (may end with "...")

    @property
    def installs(self) -> bool:
        """pip install / the test suite: run only in a fresh virtual environment."""
        return self.kind == "shell" and bool(re.match(r"\s*(pip install|python -m pytest)\b", self.text))


_FENCE = re.compile(r"^```([\w+-]*)\n(.*?)^```", re.M | re.S)


def readme_commands(readme: Path = ROOT / "README.md") -> list[Command]:
    """Every command in the README's code blocks, in order."""
    text = readme.read_text()
    commands = []
    for block in _FENCE.finditer(text):
        language, body = block.group(1), block.group(2)
        line = text.count("\n", 0, block.start(2)) + 1
        if language == "python":
            commands.append(Command(body, "python", line, []))
        elif language in ("", "sh", "bash", "console"):
            commands += _shell_commands(body, line)
    return commands


def _shell_commands(body: str, first_line: int) -> list[Command]:
    lines = body.splitlines()
    if any(line.startswith("$ ") for line in lines):   # a transcript: commands and what they print
        commands = []
        for i, line in enumerate(lines):
            if line.startswith("$ "):
                commands.append(Command(line[2:], "shell", first_line + i, []))
            elif commands:
                commands[-1].shown_output.append(line)
        return commands
    return [Command(line, "shell", first_line + i, []) for i, line in enumerate(lines)
            if line.strip() and not line.lstrip().startswith("#")]


def fresh_copy(destination: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) copied to `destination`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name, (content, mode) in placeholders((destination / SAMPLE).read_text()).items():
        (destination / name).write_text(content)
        (destination / name).chmod(mode)
    return destination


def fresh_venv(where: Path) -> Path:
    """A new virtual environment (nothing installed); its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True)
    return where / "bin"


def shell(command: str, cwd: Path, bin_dir: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    """`command` as typed at a bash prompt (a failing stage of a pipeline fails the command)."""
    env = dict(os.environ)
    bin_dir = bin_dir or Path(sys.executable).parent
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


def run_command(command: Command, cwd: Path, bin_dir: Path | None = None) -> str | None:
    """Run one README command; None if it did what the README says, else what went wrong."""
    if command.kind == "python":
        result = shell("python -", cwd, bin_dir, stdin=command.text)
    else:
        text = command.text
        if re.match(r"\s*python -m pytest\s*$", text):
            text += " --collect-only -q"   # the suite itself would run this test again: collect it only
        result = shell(text, cwd, bin_dir)
    if result.returncode == 127 and "dot: command not found" in result.stderr and "--emit=dot" in command.text:
        # Graphviz is an optional system tool: without it the tool must say that it is needed.
        return None if "needs Graphviz" in result.stderr else "no note that Graphviz is needed"
    if result.returncode == 1 and command.text.startswith("hlo-reduce ") and NOT_INTERESTING in result.stderr \
            and "./my-check.sh" not in command.text:
        return None
    if result.returncode != 0:
        return f"exit status {result.returncode}\n{result.stderr[-3000:]}"
    shown = [line for line in command.shown_output if line.strip() not in ("", "...")]
    printed = [line for line in result.stdout.splitlines() if line.strip()]
    if shown and printed[:len(shown)] != shown:
        return "prints\n" + "\n".join(printed[:len(shown)]) + "\nbut the README shows\n" + "\n".join(shown)
    return None


def run_all(commands: list[Command], cwd: Path, bin_dir: Path | None = None) -> list[str]:
    """Run commands in order; a report line for each that failed."""
    failures = []
    for command in commands:
        problem = run_command(command, cwd, bin_dir)
        if problem is not None:
            failures.append(f"README.md:{command.line}: {command.text.strip().splitlines()[0]}\n{problem}")
    return failures
