"""How a worker's chunk task ends: settled done, dropped, or dropped with its run failed."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine.distributed import worker as module
from engine.distributed.after import Settled
from engine.distributed.known_runs import KnownRuns
from engine.distributed.ledger import ChunkKey
from engine.errors import SandboxError
from engine.models import Limits
from engine.runs.metrics import Metrics
from engine.runs.work import ChunkOutcome, ChunkSpec, ChunkStopped
from engine.settings import Settings
from engine.storage import RunCheck, RunStatus


class Ledger:
    def __init__(self) -> None:
        self.dropped: list[str] = []

    def claim(self, key: ChunkKey, epoch: int, worker: str, lease: float) -> bool:
        return epoch == 3

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
