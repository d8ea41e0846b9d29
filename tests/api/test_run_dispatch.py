"""RunService decides, its Dispatch runs the work: a recording dispatch (as httpx's
MockTransport is to a Client) sees exactly what the policy hands it (SQLite, PostgreSQL).

A run is cut into chunks once, of ``job_max_rows`` rows, checks interleaved, each chunk
with its check's limits lowered once; the chunk ledger of distributed mode is made from
those same chunks; a request's batch is chunked the same way; completion finishes a run,
names the chunks to run again once, then fails; a cancel is stored before the dispatch
drops the run's work.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.builtins import build_builtins
from engine.contract import Status
from engine.distributed.chunks import ledger_rows, plan_chunks
from engine.models import RowResult
from engine.runs.dispatch import BatchResults, RunHooks, RunIncomplete, RunPlan, ScoreBatch
from engine.runs.executors import CodeExecutor, Executors, RunnerHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.runs.work import ChunkSpec
from engine.settings import Settings
from engine.storage import Run, RunStatus, SqlStore, new_id, open_store
from engine.tenancy.auth import Principal
from tests.api.conftest import api_settings


class RecordingDispatch:
    """A dispatch that runs nothing: it records what the service hands it."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.plans: list[RunPlan] = []
        self.batches: list[ScoreBatch] = []
        self.cancelled: list[tuple[str, str]] = []  # (run id, its stored status then)
        self.hooks: RunHooks | None = None

    def attach(self, hooks: RunHooks) -> None:
        self.hooks = hooks

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def submit_run(self, plan: RunPlan) -> None:
        self.plans.append(plan)

    def cancel_run(self, run: Run) -> None:
        stored = self.store.get_run(run.tenant_id, run.id)
        self.cancelled.append((run.id, stored.status.value))

    def score(self, batch: ScoreBatch) -> BatchResults:
        self.batches.append(batch)
        # the first row of each check answered, the rest left without a result
        ok = RowResult(status=Status.OK, score=True)
        return [[ok if i == 0 else None for i in range(len(batch.rows))] for _ in batch.checks]

    def queue_depth(self) -> int:
        return 7

    def jobs_in_flight(self) -> int:
        return 3

    def workers(self) -> dict[str, dict[str, Any]] | None:
        return {"w1": {}}


Node = tuple[RunService, RecordingDispatch, Principal]


@pytest.fixture
def node(
    database_url: str, tmp_path: Any
) -> Iterator[tuple[RunService, RecordingDispatch, Principal]]:
    settings: Settings = api_settings(database_url, tmp_path).model_copy(
        update={"job_max_rows": 500}
    )
    store = open_store(settings.effective_database_url)
    dispatch = RecordingDispatch(store)
    service = RunService(
        settings,
        store,
        Executors(CodeExecutor(RunnerHolder(settings))),
        Metrics(),
        build_builtins(),
        dispatch=dispatch,
    )
    tenant = store.create_tenant(f"dispatch-{new_id('t')}")
    try:
        yield service, dispatch, Principal(tenant, None)
    finally:
        store.engine.dispose()


CHECKS = ["exact_match", "is_json"]


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"model_output": f"out {i}", "scenario_result": "out"} for i in range(n)]


def test_a_run_is_chunked_once_with_its_limits_lowered_once(
    node: Node,
) -> None:
    service, dispatch, principal = node
    run = service.submit_run(principal, CHECKS, _rows(1201), limits={"memory_mb": 64})
    (plan,) = dispatch.plans
    assert plan.run.id == run.id
    assert [(c.check_index, c.rows[0], c.rows[-1]) for c in plan.chunks] == [
        (0, 0, 499),
        (1, 0, 499),
        (0, 500, 999),
        (1, 500, 999),
        (0, 1000, 1200),
        (1, 1000, 1200),
    ]
    assert {c.limits.memory_mb for c in plan.chunks} == {64}
    assert [limits.memory_mb for limits in plan.limits] == [64, 64]
    # distributed mode's ledger is made from the same chunks, as it was planned before
    made = sorted(ledger_rows(plan.chunks), key=lambda r: (r["check_index"], r["chunk_no"]))
    assert made == plan_chunks(plan.run, plan.limits, 500)


def test_completion_finishes_or_names_the_missing_rows_once(
    node: Node,
) -> None:
    service, dispatch, principal = node
    run = service.submit_run(principal, CHECKS[:1], _rows(3))
    (plan,) = dispatch.plans
    ok = RowResult(status=Status.OK, score=True)
    service.store.save_results(run.id, [(0, 0, ok), (0, 2, ok)])
    again = service.settle(plan, retried=False)
    assert [(c.check_index, c.rows) for c in again] == [(0, (1,))]
    assert all(isinstance(c, ChunkSpec) for c in again)
    with pytest.raises(RunIncomplete, match="1 results are missing after a retry"):
        service.settle(plan, retried=True)
    service.store.save_results(run.id, [(0, 1, ok)])
    assert service.settle(plan, retried=True) == []
    assert service.store.get_run(principal.tenant_id, run.id).status is RunStatus.SUCCEEDED


def test_a_cancel_is_stored_before_the_dispatch_drops_the_runs_work(
    node: Node,
) -> None:
    service, dispatch, principal = node
    run = service.submit_run(principal, CHECKS[:1], _rows(2))
    cancelled = service.cancel(principal, run.id)
    assert cancelled.status is RunStatus.CANCELLED
    assert dispatch.cancelled == [(run.id, "cancelled")]


def test_a_request_is_one_batch_chunked_as_a_run_and_its_gaps_filled(
    node: Node,
) -> None:
    service, dispatch, principal = node
    answer = service.score(principal, CHECKS, _rows(999), limits={"row_timeout_seconds": 2})
    (batch,) = dispatch.batches
    assert batch.tenant_id == principal.tenant_id
    assert [(ci, rows[0][0], rows[-1][0]) for ci, rows in batch.chunks] == [
        (0, 0, 499),
        (0, 500, 998),
        (1, 0, 499),
        (1, 500, 998),
    ]
    assert [limits.row_timeout_seconds for limits in batch.limits] == [2, 2]
    first, rest = answer.results[0][0], answer.results[0][1:]
    assert first.status is Status.OK
    assert {r.status for r in rest} == {Status.SANDBOX_ERROR}  # no result: never a gap
    # the gauges and the workers are the dispatch's
    assert (service.queue_depth(), service.jobs_in_flight(), service.workers()) == (
        7,
        3,
        {"w1": {}},
    )


def test_run_chunk_rows_is_deprecated_and_only_caps_the_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().chunk_rows == 500
    assert Settings(job_max_rows=200).chunk_rows == 200
    assert Settings(job_max_rows=200, run_chunk_rows=50).chunk_rows == 50
    assert Settings(job_max_rows=200, run_chunk_rows=1000).chunk_rows == 200
    monkeypatch.setenv("SCOREBOX_RUN_CHUNK_ROWS", "100")  # an older configuration still reads
    assert Settings().chunk_rows == 100


def test_no_subclass_of_the_run_service_remains() -> None:
    import engine.distributed.celery_dispatch  # noqa: F401 (distributed mode's dispatch, loaded)

    assert RunService.__subclasses__() == []
