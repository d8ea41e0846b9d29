"""``SandboxRunner.iter_check``: a dataset scored as it is read, in order, in bounded memory
(on the fake backend; ``tests/integration/test_sandbox.py`` runs it on Docker)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.errors import InvalidRequestError
from engine.sandbox.fake import FakeBackend
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings

SIZE = 10  # rows a job


def _runner(backend: FakeBackend) -> SandboxRunner:
    return SandboxRunner(Settings(pool_size=0, job_max_rows=SIZE), backend=backend)


def _source(total: int, read: list[int]) -> Iterator[dict[str, Any]]:
    for i in range(total):
        read.append(i)
        yield {"id": i, "model_output": "x" * (i % 7)}


def test_results_come_in_row_order_and_equal_run_check() -> None:
    backend = FakeBackend(lambda job, row: len(row.model_output) * 1.0)
    with _runner(backend) as runner:
        rows = list(_source(95, []))
        streamed = list(runner.iter_check("def evaluate(model_output): ...", rows))
        assert [r.score for r in streamed] == [float(i % 7) for i in range(95)]
        listed = runner.run_check("def evaluate(model_output): ...", rows)
        drop = {"duration_ms"}
        assert [r.model_dump(exclude=drop) for r in streamed] == [
            r.model_dump(exclude=drop) for r in listed
        ]
    assert len(backend.calls) == 2 * 10  # 95 rows: ten jobs, twice


def test_rows_are_read_a_few_jobs_ahead_of_the_results() -> None:
    read: list[int] = []
    with _runner(FakeBackend()) as runner:
        results = runner.iter_check(
            "def evaluate(model_output): ...", _source(10_000, read), jobs_ahead=2
        )
        first = next(results)
        assert first.status.value == "ok"
        # the first result is yielded once two jobs are queued: not a row of the 10,000 more
        assert len(read) <= 2 * SIZE, len(read)
        count = 1 + sum(1 for _ in results)
    assert count == 10_000 and len(read) == 10_000


def test_a_bad_row_raises_after_the_results_before_it() -> None:
    def rows() -> Iterator[Any]:
        yield from _source(35, [])
        yield {"model_output": 3}  # not a string
        yield from _source(5, [])

    got: list[Any] = []
    with (
        _runner(FakeBackend()) as runner,
        pytest.raises(InvalidRequestError, match=r"row 36 \(rows\[35\]\)"),
    ):
        for result in runner.iter_check("def evaluate(model_output): ...", rows(), jobs_ahead=1):
            got.append(result)
    assert [r.row_id for r in got] == list(range(35))  # every row before the bad one


def test_a_bad_row_raises_after_the_results_before_it_however_far_ahead_rows_are_read() -> None:
    # With jobs queued ahead (the default: twice max_parallel_jobs), the rows before the bad
    # one are still scored and yielded before it raises, not dropped with their jobs.
    def rows() -> Iterator[Any]:
        yield from _source(25, [])
        yield {"model_output": 3}  # not a string

    got: list[Any] = []
    with (
        _runner(FakeBackend()) as runner,
        pytest.raises(InvalidRequestError, match=r"row 26 \(rows\[25\]\)"),
    ):
        for result in runner.iter_check("def evaluate(model_output): ...", rows(), jobs_ahead=8):
            got.append(result)
    assert [r.row_id for r in got] == list(range(25))


def test_leaving_the_loop_early_cancels_the_jobs_not_started() -> None:
    backend = FakeBackend(row_seconds=0.001)
    with _runner(backend) as runner:
        for _ in runner.iter_check(
            "def evaluate(model_output): ...", _source(10_000, []), jobs_ahead=2
        ):
            break
    assert len(backend.calls) <= 3, len(backend.calls)  # of 1,000 jobs


def _waiting_in_run_check(thread_id: int) -> bool:
    """Whether the thread is blocked waiting for run_check's results (every job queued)."""
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename.endswith("runner.py"):
            return True
        frame = frame.f_back
    return False


def test_ctrl_c_while_run_check_waits_cancels_the_jobs_not_started() -> None:
    # `scorebox run` (local) waits in run_check: Ctrl-C there must not leave every queued
    # job to run before the runner closes (close() waits for the pool) and the CLI exits.
    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main
    interrupted = threading.Event()
    # results arrive on several threads at once: only the first may send the signal (a
    # second one would land in whatever the main thread runs after the test)
    first = threading.Lock()

    def ctrl_c(_index: int, _result: Any) -> None:
        if not first.acquire(blocking=False):
            return
        interrupted.set()
        for _ in range(6000):  # every job is queued once run_check waits for them
            if _waiting_in_run_check(main):
                break
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)

    backend = FakeBackend(row_seconds=0.001)
    with _runner(backend) as runner, pytest.raises(KeyboardInterrupt):
        runner.run_check("def evaluate(model_output): ...", _source(10_000, []), on_result=ctrl_c)
    assert interrupted.is_set()
    assert len(backend.calls) < 1_000, len(backend.calls)  # of 1,000 jobs
