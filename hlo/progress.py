"""Progress on standard error for work that takes a while (parsing a large file, a pipeline, a compile).

    with Progress("compiling", total=len(kernels), unit="kernels") as progress:
        for kernel in kernels:
            ...
            progress.advance()

draws, once the work has run for `delay` seconds (1 s), a line such as

    compiling 412 kernels [=====>              ] 37%

and redraws it at most ten times a second, from a background thread, so that steps of any
length (a single long parse) keep it moving. Without a total the line shows what is being
done and the seconds so far (`parsing big.hlo ... 3 s`). Nothing is drawn unless the stream
is a terminal, nor with quiet=True (the tools' --quiet); the line is erased when the work is
done, so that what the tool prints next starts on a clean line.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Optional, TextIO

BAR_WIDTH = 20


class Progress:
    def __init__(self, what: str, total: Optional[int] = None, unit: str = "", *, stream: Optional[TextIO] = None,
                 quiet: bool = False, delay: float = 1.0, interval: float = 0.1):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and _is_terminal(self.stream)
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self.detail = ""
        self.delay, self.interval = delay, interval
        self.started = time.monotonic()
        self._drawn = 0            # characters of the line on the screen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if self.enabled:
            self._thread = threading.Thread(target=self._draw_until_done, name="progress", daemon=True)
            self._thread.start()

    # -- what the work reports
    def advance(self, count: int = 1, detail: Optional[str] = None) -> None:
        with self._lock:
            self.done += count
            if detail is not None:
                self.detail = detail

    def stage(self, what: str, total: Optional[int] = None, unit: str = "") -> None:
        """A new step of the work (its own label and count)."""
        with self._lock:
            self.what, self.total, self.unit, self.done, self.detail = what, total, unit, 0, ""

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._erase()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- drawing
    def line(self) -> str:
        """The progress line as it is drawn now."""
        with self._lock:
            return self._line()

    def _line(self) -> str:
        what = f"{self.what} {self.total} {self.unit}".rstrip() if self.total is not None and self.unit else self.what
        detail = f" {self.detail}" if self.detail else ""
        if self.total:
            fraction = min(max(self.done / self.total, 0.0), 1.0)
            filled = int(fraction * BAR_WIDTH)
            bar = "=" * filled + (">" if filled < BAR_WIDTH else "") + " " * (BAR_WIDTH - filled - 1)
            return f"{what} [{bar}] {int(fraction * 100):3d}%{detail}"
        return f"{what} ... {int(time.monotonic() - self.started)} s{detail}"

    def _draw_until_done(self) -> None:
        if self._stop.wait(self.delay):
            return  # done before it was worth showing
        while not self._stop.is_set():
            with self._lock:
                self._draw(self._line())
            self._stop.wait(self.interval)

    def _draw(self, text: str) -> None:
        width = _terminal_width(self.stream)
        text = text[:width - 1]
        try:
            self.stream.write("\r" + text + " " * max(self._drawn - len(text), 0))
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self._stop.set()
            return
        self._drawn = len(text)

    def _erase(self) -> None:
        if self._drawn:
            try:
                self.stream.write("\r" + " " * self._drawn + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._drawn = 0


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_width(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
