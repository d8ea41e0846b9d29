"""engine.runs.local.LocalDispatch.score: a one-chunk /v1/score batch runs on the request's
own thread when an idle scoring thread would have taken it at once, else on a scoring
thread after the queue (its tenant's concurrency and the threads' number still hold)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from engine.contract import Status
from engine.models import Row, RowResult
from engine.runs import local
from engine.runs.dispatch import ScoreBatch
from engine.runs.local import LocalDispatch
from engine.runs.metrics import Metrics
from engine.runs.scheduler import WorkItem
from engine.settings import Settings


def _batch(tenant: str, chunks: int = 1) -> ScoreBatch:
    rows = [Row(model_output=f"row {i}") for i in range(chunks)]
    return ScoreBatch(
        tenant_id=tenant,
        checks=[object()],  # type: ignore[list-item]  # the patched score_batch ignores it
        limits=[object()],  # type: ignore[list-item]
        rows=rows,
        chunk_rows=1,
        chunks=[(0, [(i, row)]) for i, row in enumerate(rows)],
        started_at=time.monotonic(),
    )


@pytest.fixture
def ran_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each thread a chunk of a batch ran on (the sandbox is not involved)."""
    names: list[str] = []

    def score_batch(*args: Any) -> None:
        rows: Sequence[tuple[int, Row]] = args[3]
        deliver = args[-1]
        names.append(threading.current_thread().name)
        for index, _ in rows:
            deliver(index, RowResult(status=Status.OK, score=True))

    monkeypatch.setattr(local, "score_batch", score_batch)
    return names


@pytest.fixture
def dispatch(tmp_path: Any) -> Iterator[LocalDispatch]:
    settings = Settings(
        data_dir=tmp_path, max_parallel_jobs=2, score_wait_seconds=5.0, quota_concurrent_jobs=1
    )
    it = LocalDispatch(settings, store=None, executors=None, metrics=Metrics())  # type: ignore[arg-type]
    for n in range(it.thread_count):  # the scoring threads alone (start() also resumes runs)
        thread = threading.Thread(target=it._work, name=f"scorebox-run-{n}", daemon=True)
        thread.start()
        it._threads.append(thread)
    yield it
    it.stop()


def test_one_chunk_runs_on_the_requests_thread_when_a_scoring_thread_is_idle(
    dispatch: LocalDispatch, ran_on: list[str]
) -> None:
    results = dispatch.score(_batch("a"))
    assert ran_on == [threading.current_thread().name]
    assert [r.status for r in results[0] if r is not None] == [Status.OK]
    assert dispatch.jobs_in_flight() == 0  # its place is given back


def test_chunks_go_to_the_scoring_threads_when_several_or_when_the_tenant_is_busy(
    dispatch: LocalDispatch, ran_on: list[str]
) -> None:
    results = dispatch.score(_batch("a", chunks=3))
    assert len(ran_on) == 3 and all(n.startswith("scorebox-run-") for n in ran_on)
    assert all(r is not None for r in results[0])
    ran_on.clear()
    hold = threading.Event()
    busy = WorkItem("b", "run", fn=hold.wait)  # tenant "b"'s one slot (concurrency 1)
    dispatch.scheduler.submit(busy)
    assert busy.started.wait(5)
    answer: list[Any] = []
    waiter = threading.Thread(target=lambda: answer.append(dispatch.score(_batch("b"))))
    waiter.start()
    time.sleep(0.1)
    assert ran_on == []  # queued behind the tenant's busy slot, not run on the side
    hold.set()
    waiter.join(5)
    assert len(ran_on) == 1 and ran_on[0].startswith("scorebox-run-")
    assert answer and answer[0][0][0].status is Status.OK
