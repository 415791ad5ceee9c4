"""Forked worker processes, each fed one task at a time through its own pipe.

concurrent.futures' process pool hands every task to a queue thread of its own, which must get
the GIL to pass it on: while this process lowers the next kernels in Python, a submitted part
waited up to the interpreter's 5 ms switch interval (measured: 2 to 6 ms before a worker started
a small module's heaviest kernel, which then finished last). Here `submit` writes the task to an
idle worker's pipe in the calling thread. Tasks beyond the idle workers wait in this process; a
collector thread receives every result and sends the next waiting task to the worker it came
from, so that workers are fed while this process is busy (lowering, or compiling a part itself:
`run_one_here`). Only idle workers are written to, and a worker's result is read as soon as it
is sent, so neither side ever blocks on a full pipe.

A worker that dies (out of memory, a crash in LLVM) breaks the pool: its task, and every task
still out, fail with concurrent.futures' BrokenProcessPool, as with the standard pool, and the
pool takes no more tasks.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection, wait
from typing import Callable, Iterable, Iterator, Optional


class TaskFuture:
    """The result of one submitted task: `result()` waits for it."""

    def __init__(self, pool: "WorkerPool"):
        self._pool = pool
        self._done = False
        self._value = None
        self._error: Optional[BaseException] = None

    def done(self) -> bool:
        return self._done

    def result(self):
        with self._pool._changed:
            self._pool._changed.wait_for(self.done)
        if self._error is not None:
            raise self._error
        return self._value

    def _finish(self, ok: bool, value) -> None:   # with the pool's lock held
        self._done = True
        if ok:
            self._value = value
        else:
            self._error = value


class WorkerPool:
    def __init__(self, workers: int):
        context = multiprocessing.get_context("fork")
        self._processes = []
        self._idle: deque[Connection] = deque()
        for _ in range(workers):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, ours), daemon=True)
            process.start()
            theirs.close()
            self._processes.append(process)
            self._idle.append(ours)
        self._queue: deque = deque()                  # (future, function, args) waiting for a worker
        self._busy: dict[Connection, TaskFuture] = {}
        self._changed = threading.Condition(threading.Lock())   # guards all of the above
        self._wake_read, self._wake_write = os.pipe()   # tells the collector its busy set grew
        self.broken = False
        self._closed = False
        self._collector = threading.Thread(target=self._collect, name="hlo-compile-collector", daemon=True)
        self._collector.start()

    def submit(self, function: Callable, *args) -> TaskFuture:
        with self._changed:
            if self.broken or self._closed:
                raise BrokenProcessPool("a worker process died" if self.broken else "the pool is shut down")
            future = TaskFuture(self)
            self._queue.append((future, function, args))
            if self._send_queued():
                os.write(self._wake_write, b"x")
            return future

    def run_one_here(self) -> bool:
        """Run the first task still waiting for a worker in this process (a process with nothing
        else to do compiles too); False when none waits."""
        with self._changed:
            if not self._queue:
                return False
            future, function, args = self._queue.popleft()
        try:
            ok, value = True, function(*args)
        except Exception as error:
            ok, value = False, error
        with self._changed:
            future._finish(ok, value)
            self._changed.notify_all()
        return True

    def _send_queued(self) -> bool:
        """Waiting tasks to idle workers (with the lock held); whether any was sent."""
        sent = False
        while self._queue and self._idle:
            future, function, args = self._queue.popleft()
            connection = self._idle.popleft()
            try:
                connection.send((function, args))
            except (EOFError, OSError):
                self._busy[connection] = future
                self._break()
                return sent
            self._busy[connection] = future
            sent = True
        return sent

    def _collect(self) -> None:
        """The collector thread: each result to its future, the worker given the next task."""
        wake = _Readable(self._wake_read)
        while True:
            with self._changed:
                if self._closed:
                    return
                busy = list(self._busy)
            for ready in wait(busy + [wake]):
                with self._changed:
                    if ready is wake:
                        os.read(self._wake_read, 4096)
                        continue
                    future = self._busy.pop(ready, None)
                    if future is None:
                        continue
                    try:
                        ok, value = ready.recv()
                    except (EOFError, OSError):
                        self._busy[ready] = future
                        self._break()
                        return
                    future._finish(ok, value)
                    self._idle.append(ready)
                    self._send_queued()
                    self._changed.notify_all()

    def _break(self) -> None:
        """A worker died (with the lock held): every task out or waiting fails."""
        self.broken = True
        error = BrokenProcessPool("a worker process died")
        for future in list(self._busy.values()) + [task[0] for task in self._queue]:
            future._finish(False, error)
        self._busy.clear()
        self._queue.clear()
        self._changed.notify_all()
        self._stop_workers()

    def shutdown(self) -> None:
        """Stop the workers and the collector (a task still running is abandoned)."""
        with self._changed:
            self._closed = True
            self._stop_workers()
        os.write(self._wake_write, b"x")

    def _stop_workers(self) -> None:
        for connection in list(self._idle) + list(self._busy):
            try:
                connection.send(None)
            except (EOFError, OSError):
                pass
        for process in self._processes:
            process.join(timeout=0.1)
            if process.is_alive():
                process.kill()


class _Readable:
    """A file descriptor multiprocessing.connection.wait can watch."""

    def __init__(self, fd: int):
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def as_completed(futures: Iterable[TaskFuture]) -> Iterator[TaskFuture]:
    """The futures, each as soon as it is done."""
    pending = list(futures)
    while pending:
        condition = pending[0]._pool._changed
        with condition:
            condition.wait_for(lambda: any(f.done() for f in pending))
            finished = [f for f in pending if f.done()]
        for future in finished:
            pending.remove(future)
            yield future


def _serve(connection: Connection, parents_end: Connection) -> None:
    """A worker: run each task received until told to stop (None) or the pipe closes."""
    parents_end.close()
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        function, args = task
        try:
            reply = (True, function(*args))
        except BaseException as error:   # sent back and raised where the result is asked for
            reply = (False, error)
        try:
            connection.send(reply)
        except Exception as error:       # an unpicklable result or error
            connection.send((False, RuntimeError(f"a compile worker could not send its result: {error}")))
