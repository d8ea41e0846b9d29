"""How a worker's chunk task ends: settled done, dropped, or dropped with its run failed."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine.distributed import worker as module
from engine.distributed.after import Settled
from engine.distributed.chunks import Along, ChunkKey
from engine.distributed.known_runs import KnownRuns
from engine.errors import SandboxError, StorageError
from engine.models import Limits
from engine.runs.metrics import Metrics
from engine.runs.work import ChunkOutcome, ChunkSpec, ChunkStopped
from engine.settings import Settings
from engine.storage import RunCheck, RunStatus


class Ledger:
    def __init__(self, along: list[Along] | None = None) -> None:
        self.dropped: list[str] = []
        self.along = along or []
        self.asked: list[int] = []  # how many chunks each claim_along asked for

    def claim(self, key: ChunkKey, epoch: int, worker: str, lease: float) -> bool:
        return epoch == 3

    def claim_along(self, key: ChunkKey, most: int, worker: str, lease: float) -> list[Along]:
        self.asked.append(most)
        return self.along[:most]

    def drop_run(self, run_id: str) -> int:
        self.dropped.append(run_id)
        return 0


class Store:
    def __init__(self) -> None:
        self.statuses: list[tuple[str, RunStatus, str | None]] = []

    def set_run_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        self.statuses.append((run_id, status, error))


class After:
    def __init__(self) -> None:
        self.settled: list[Settled] = []

    def add(self, chunk: Settled) -> None:
        self.settled.append(chunk)


def _worker() -> Any:
    runtime: Any = module.WorkerRuntime.__new__(module.WorkerRuntime)
    runtime.settings = Settings()
    runtime.name = "host:1"
    runtime.ledger, runtime.store, runtime._after = Ledger(), Store(), After()
    runtime.metrics = Metrics()
    runtime.executors = None
    runtime._runs = KnownRuns()
    runtime._held = {}
    runtime._lock = threading.Lock()
    runtime.resolve = lambda tenant_id, rc: None
    return runtime


MESSAGE = {
    "key": ["run_1", 0, 2],
    "epoch": 3,
    "spec": ChunkSpec(
        "tnt_1", "run_1", 0, RunCheck("code", "c", 1, "chk_1"), (0, 1), Limits()
    ).to_json(),
}
KEY = ChunkKey("run_1", 0, 2)


@pytest.mark.parametrize(
    ("raised", "state", "error"),
    [
        (None, "done", None),
        (ChunkStopped(), "dropped", None),
        (SandboxError("no sandbox here: start Docker"), "dropped", "no sandbox here: start Docker"),
        (KeyError("x"), "dropped", "internal error: KeyError: 'x'"),
    ],
)
def test_a_chunk_is_settled_once_with_the_state_decided_and_a_failure_fails_its_run(
    monkeypatch: pytest.MonkeyPatch, raised: Exception | None, state: str, error: str | None
) -> None:
    def execute(*args: object) -> ChunkOutcome:
        if raised is not None:
            raise raised
        return ChunkOutcome(2, 2, {})

    monkeypatch.setattr(module, "execute_chunk", execute)
    runtime = _worker()
    assert runtime.run_chunk(MESSAGE) == state
    assert runtime._after.settled == [Settled(KEY, 3, state, "tnt_1", "run_1")]
    running = ("run_1", RunStatus.RUNNING, None)
    if error is None:
        assert runtime.store.statuses == [running] and runtime.ledger.dropped == []
    else:
        assert runtime.store.statuses == [running, ("run_1", RunStatus.FAILED, error)]
        assert runtime.ledger.dropped == ["run_1"]
        assert runtime._stopper("run_1")()  # its other chunks here stop without asking


def test_a_stale_message_is_not_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = _worker()
    assert runtime.run_chunk({**MESSAGE, "epoch": 2}) == "stale"
    assert runtime._after.settled == [] and runtime.store.statuses == []


ALONG = [
    Along(ChunkKey("run_1", 0, 3), 1, (2, 4)),  # starts where the claimed chunk (0, 1) ends
    Along(ChunkKey("run_1", 0, 7), 5, (8, 10)),  # after a gap: a job of its own
]


@pytest.mark.parametrize(("pace", "asked"), [(None, []), (0.1, []), (1e-4, [1249])])
def test_a_fast_checks_next_chunks_are_taken_along_as_jobs_of_consecutive_rows(
    monkeypatch: pytest.MonkeyPatch, pace: float | None, asked: list[int]
) -> None:
    """With its check's pace known here and fast, the slot takes chunks along (a quarter
    of a second of rows, at most ``table_job_max_rows``, in chunks of the claimed size) and
    runs them with its own as jobs of consecutive rows; each chunk settles under its own
    epoch. A check's first chunk here, or a slow check's, runs alone."""
    jobs: list[tuple[int, ...]] = []

    def execute(
        store: object, executors: object, metrics: object, spec: ChunkSpec, *_: object
    ) -> ChunkOutcome:
        jobs.append(spec.rows)
        return ChunkOutcome(len(spec.rows), len(spec.rows), {})

    monkeypatch.setattr(module, "execute_chunk", execute)
    runtime = _worker()
    runtime.ledger = Ledger(list(ALONG))
    if pace is not None:
        runtime._runs.set_pace("run_1", 0, pace)
    assert runtime.run_chunk(MESSAGE) == "done"
    assert runtime.ledger.asked == asked
    if not asked:
        assert jobs == [(0, 1)]
        assert runtime._after.settled == [Settled(KEY, 3, "done", "tnt_1", "run_1")]
        return
    assert jobs == [(0, 1, 2, 3), (8, 9)]
    assert runtime._after.settled == [
        Settled(KEY, 3, "done", "tnt_1", "run_1"),
        *(Settled(a.key, a.epoch, "done", "tnt_1", "run_1") for a in ALONG),
    ]
    assert set(runtime._held) == {KEY, *(a.key for a in ALONG)}  # renewed until settled
    assert runtime._runs.pace("run_1", 0) is not None


def test_chunks_taken_along_share_their_chunks_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure fails the run once and drops every chunk of the job; a database outage
    hands them all back to the ledger."""

    def fail(*args: object) -> ChunkOutcome:
        raise SandboxError("no sandbox here: start Docker")

    monkeypatch.setattr(module, "execute_chunk", fail)
    runtime = _worker()
    runtime.ledger = Ledger(list(ALONG))
    runtime._runs.set_pace("run_1", 0, 1e-4)
    assert runtime.run_chunk(MESSAGE) == "dropped"
    assert [(c.key.chunk_no, c.state) for c in runtime._after.settled] == [
        (2, "dropped"),
        (3, "dropped"),
        (7, "dropped"),
    ]
    assert runtime.ledger.dropped == ["run_1"]

    released: list[tuple[ChunkKey, int]] = []

    def unavailable(*args: object) -> ChunkOutcome:
        raise StorageError("the database is restarting")

    monkeypatch.setattr(module, "execute_chunk", unavailable)
    runtime = _worker()
    runtime.ledger = Ledger(list(ALONG))
    runtime.ledger.release = released.extend
    runtime._runs.set_pace("run_1", 0, 1e-4)
    assert runtime.run_chunk(MESSAGE) == "deferred"
    assert released == [(KEY, 3), *((a.key, a.epoch) for a in ALONG)]
    assert runtime._held == {} and runtime._after.settled == []
