"""The progress line (hlo.progress): drawn on a terminal once work runs over its delay, erased when
done, never on a pipe or with quiet; the tools' --quiet; and what parse and pipelines report."""
from __future__ import annotations

import io
import time

from click.testing import CliRunner

from hlo.analysis.loading import load_module
from hlo.passes.pass_manager import PassRunner, parse_pipeline
from hlo.progress import Progress
from hlo_cli.hlo_opt import main as hlo_opt

MODULE = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  ROOT a = f32[4] add(n, x)
}
"""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _wait_for(stream: io.StringIO, text: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while text not in stream.getvalue():
        assert time.monotonic() < deadline, f"{text!r} never drawn: {stream.getvalue()!r}"
        time.sleep(0.01)


def test_a_bar_is_drawn_on_a_terminal_after_the_delay_and_erased_when_done():
    screen = Terminal()
    with Progress("compiling", total=412, unit="kernels", stream=screen, delay=0.0, interval=0.01) as progress:
        progress.advance(152)
        _wait_for(screen, "compiling 412 kernels [=======>            ]  36%")
    drawn = screen.getvalue()
    assert drawn.endswith("\r")
    assert drawn.rstrip("\r").split("\r")[-1].strip() == ""  # the last thing written blanks the line


def test_without_a_total_the_line_says_what_and_how_long():
    screen = Terminal()
    with Progress("parsing big.hlo", stream=screen, delay=0.0, interval=0.01) as progress:
        progress.stage("checking big.hlo")
        _wait_for(screen, "checking big.hlo ... 0 s")


def test_nothing_is_drawn_before_the_delay_on_a_pipe_or_when_quiet():
    for stream, quiet, delay in ((Terminal(), False, 30.0), (io.StringIO(), False, 0.0), (Terminal(), True, 0.0)):
        with Progress("optimizing", total=3, stream=stream, quiet=quiet, delay=delay, interval=0.01) as progress:
            progress.advance(2, "fusion")
            time.sleep(0.05)
        assert stream.getvalue() == ""


def test_loading_and_pipelines_say_what_they_do():
    seen = []

    class Recorder(Progress):
        def stage(self, what, total=None, unit=""):
            seen.append(what)
            super().stage(what, total, unit)

        def advance(self, count=1, detail=None):
            seen.append(detail)
            super().advance(count, detail)

    with Recorder("loading", stream=io.StringIO()) as progress:
        module = load_module(MODULE, "m.hlo", progress=progress)
        PassRunner(progress=progress).run(module, parse_pipeline("fixpoint(cse,dce),dce"))
    assert seen[:3] == ["parsing m.hlo", "checking m.hlo", "optimizing"]
    assert [s for s in seen[3:] if s is not None] == ["cse", "dce", "dce", "checking"]


def test_tools_take_quiet():
    result = CliRunner().invoke(hlo_opt, ["-", "--passes=dce", "--quiet"], input=MODULE)
    assert result.exit_code == 0, result.output
    assert "negate" in result.stdout
