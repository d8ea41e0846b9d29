"""A run submitted in distributed mode has its first chunks in the broker before the
submit returns (a send-only pass in the request), on a real PostgreSQL and Redis; when
another node's pass holds the dispatch lock, the chunks stay pending and the loop is
asked for a pass instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import text

from engine.builtins import build_builtins
from engine.distributed.celery_app import create_celery
from engine.distributed.celery_dispatch import CeleryDispatch
from engine.distributed.ledger import DISPATCH_LOCK
from engine.runs.executors import CodeExecutor, Executors, RunnerHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.storage import SqlStore, new_id, open_store
from engine.tenancy.auth import Principal
from tests.api.conftest import api_settings

pytestmark = pytest.mark.postgres

Node = tuple[RunService, CeleryDispatch, SqlStore, Principal]


@pytest.fixture
def node(pg_url: str, redis_url: str, tmp_path: Path) -> Iterator[Node]:
    """A run service dispatching through Celery whose dispatch loop never runs."""
    redis.Redis.from_url(redis_url).flushdb()
    settings = api_settings(pg_url, tmp_path, broker_url=redis_url, job_max_rows=50)
    store = open_store(settings.effective_database_url)
    metrics = Metrics()
    dispatch = CeleryDispatch(settings, store, metrics, create_celery(settings), store.engine)
    service = RunService(
        settings,
        store,
        Executors(CodeExecutor(RunnerHolder(settings))),
        metrics,
        build_builtins(),
        dispatch=dispatch,
    )
    tenant = store.create_tenant(f"send-{new_id('t')}")
    try:
        yield service, dispatch, store, Principal(tenant, None)
    finally:
        dispatch.replies.close()
        store.engine.dispose()
        redis.Redis.from_url(redis_url).flushdb()


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"model_output": f"out {i}", "scenario_result": "out"} for i in range(n)]


def _broker_messages(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    return sum(int(client.llen(key)) for key in client.keys("scorebox.chunks*"))


def test_a_submitted_runs_chunks_are_sent_before_the_submit_returns(
    node: Node, redis_url: str
) -> None:
    service, dispatch, _, principal = node
    service.submit_run(principal, ["exact_match"], _rows(200))
    states = dispatch.ledger.counts()  # a fresh database: this run's chunks
    # four chunks of 50 rows; the tenant's concurrent jobs (the default quota) are sent
    concurrent = dispatch.dispatcher.quotas.concurrent_jobs(principal.tenant_id)
    assert states.get("queued") == min(4, concurrent), states
    assert sum(states.values()) == 4
    assert _broker_messages(redis_url) == states["queued"]
    assert not dispatch.dispatcher._wake.is_set()  # the loop has nothing to do at once


def test_a_submit_while_another_pass_holds_the_lock_asks_the_loop(
    node: Node, redis_url: str
) -> None:
    service, dispatch, store, principal = node
    with store.engine.connect() as other:  # another node's pass in progress
        other.execute(text("SELECT pg_advisory_lock(:k)"), {"k": DISPATCH_LOCK})
        try:
            service.submit_run(principal, ["exact_match"], _rows(120))
        finally:
            other.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": DISPATCH_LOCK})
            other.commit()
    assert dispatch.ledger.counts() == {"pending": 3}
    assert _broker_messages(redis_url) == 0
    assert dispatch.dispatcher._wake.is_set()
    # the loop's pass (run here, as its thread would) sends them
    assert dispatch.dispatcher.pass_once() > 0
    assert dispatch.ledger.counts().get("queued", 0) > 0
