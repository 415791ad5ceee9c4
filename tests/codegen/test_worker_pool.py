"""The compile workers' pool: tasks sent at once to idle workers, the rest fed by the collector
thread while the submitting thread is busy, run by the submitting process when asked, and a
dead worker failing what it had instead of hanging."""
import os
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from hlo.codegen.worker_pool import WorkerPool, as_completed


def _pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


def _fail():
    raise ValueError("from the worker")


def _exit():
    os._exit(3)


@pytest.fixture
def pool():
    workers = WorkerPool(1)
    yield workers
    workers.shutdown()


def test_results_come_back_from_a_worker_process(pool):
    futures = [pool.submit(pow, 2, n) for n in range(6)]
    assert [f.result() for f in futures] == [2 ** n for n in range(6)]
    assert pool.submit(_pid_after, 0).result() != os.getpid()


def test_queued_tasks_reach_the_worker_while_the_submitter_is_busy(pool):
    futures = [pool.submit(_pid_after, 0.02) for _ in range(3)]
    deadline = time.monotonic() + 5
    while not all(f.done() for f in futures) and time.monotonic() < deadline:
        sum(range(10_000))   # Python work, never waiting on the pool
    assert all(f.done() for f in futures)


def test_the_submitting_process_runs_waiting_tasks_when_asked(pool):
    first = pool.submit(_pid_after, 0.3)     # keeps the one worker busy
    second = pool.submit(_pid_after, 0)
    assert pool.run_one_here()
    assert second.result() == os.getpid()
    assert not pool.run_one_here()           # nothing waits any more
    assert first.result() != os.getpid()


def test_errors_are_raised_where_the_result_is_asked_for(pool):
    future = pool.submit(_fail)
    with pytest.raises(ValueError, match="from the worker"):
        future.result()
    assert pool.submit(pow, 3, 2).result() == 9   # the worker goes on


def test_as_completed_yields_each_future_once(pool):
    futures = [pool.submit(_pid_after, 0.01 * (3 - n)) for n in range(3)]
    assert sorted(map(id, as_completed(futures))) == sorted(map(id, futures))


def test_a_dead_worker_fails_its_task_and_the_pool(pool):
    dead = pool.submit(_exit)
    waiting = pool.submit(pow, 2, 2)
    with pytest.raises(BrokenProcessPool):
        dead.result()
    with pytest.raises(BrokenProcessPool):
        waiting.result()
    assert pool.broken
    with pytest.raises(BrokenProcessPool):
        pool.submit(pow, 2, 3)
