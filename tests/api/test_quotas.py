"""Each quota's 429 with Retry-After."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from engine.builtins import build_builtins
from engine.errors import QuotaExceededError
from engine.runs.executors import CodeExecutor, Executors, RunnerHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.storage import open_store
from engine.tenancy import auth
from engine.tenancy.auth import Principal
from tests.api.conftest import SLOW_CHECK, TRIVIAL_CHECK, Api, AppFactory, api_settings


def _is_429(reply: object) -> None:
    assert reply.status_code == 429, reply.text  # type: ignore[attr-defined]
    assert int(reply.headers["Retry-After"]) >= 1  # type: ignore[attr-defined]
    assert reply.headers["content-type"].startswith("application/problem+json")  # type: ignore[attr-defined]


def test_rows_per_run_quota(api: Api) -> None:
    h = api.tenant(rows_per_run=5)
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "yes"}] * 6
    _is_429(api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows}))
    assert api.client.get("/v1/runs", headers=h).json()["runs"] == []


def test_source_size_quota(api: Api) -> None:
    h = api.tenant(source_bytes=100)
    big = TRIVIAL_CHECK + "# padding\n" * 20
    _is_429(api.client.post("/v1/checks", headers=h, json={"name": "big", "source": big}))
    files = {"file": ("big.py", big.encode())}
    _is_429(api.client.post("/v1/checks/upload", headers=h, files=files))
    other = api.tenant()
    assert (
        api.client.post(
            "/v1/checks", headers=other, json={"name": "big", "source": big}
        ).status_code
        == 201
    )


def test_score_row_cap_is_a_clear_422(api: Api) -> None:
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "x"}] * 1001
    reply = api.client.post("/v1/score", headers=h, json={"checks": ["t"], "rows": rows})
    assert reply.status_code == 422
    assert "/v1/runs" in reply.json()["detail"]


@pytest.mark.docker
def test_queued_runs_and_concurrent_jobs_quotas(
    docker_settings: object, make_api: AppFactory
) -> None:
    api = make_api(score_wait_seconds=1.0, run_chunk_rows=4, job_max_rows=4)
    h = api.tenant(queued_runs=1, concurrent_jobs=1)
    api.push(h, "slow", SLOW_CHECK)
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "x"}] * 40  # 10 chunks of 1s each, one at a time
    first = api.client.post("/v1/runs", headers=h, json={"checks": ["slow"], "rows": rows})
    assert first.status_code == 202
    run_id = first.json()["id"]
    # queued runs: one is active, a second is refused
    _is_429(api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows[:1]}))
    # concurrent jobs: the slow run holds the tenant's only slot past score_wait_seconds
    deadline = time.monotonic() + 60
    while api.client.get(f"/v1/runs/{run_id}", headers=h).json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    _is_429(api.client.post("/v1/score", headers=h, json={"checks": ["t"], "rows": rows[:1]}))
    # another tenant is not affected
    other = api.tenant()
    api.push(other, "t", TRIVIAL_CHECK)
    ok = api.client.post("/v1/score", headers=other, json={"checks": ["t"], "rows": rows[:1]})
    assert ok.status_code == 200, ok.text
    cancelled = api.client.post(f"/v1/runs/{run_id}/cancel", headers=h).json()
    assert cancelled["status"] == "cancelled"
    # the slot frees once the chunk in flight ends; the quota no longer blocks
    assert (
        api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows[:1]}).status_code
        == 202
    )


def test_queued_runs_quota_holds_for_simultaneous_submissions_on_two_nodes(
    database_url: str, tmp_path: Any
) -> None:
    """Two API nodes (two run services on one database) take eight submissions at once."""
    settings = api_settings(database_url, tmp_path)
    stores = [open_store(settings.effective_database_url) for _ in range(2)]
    try:
        nodes = [
            RunService(
                settings,
                store,
                Executors(CodeExecutor(RunnerHolder(settings))),
                Metrics(),
                build_builtins(),
            )
            for store in stores
        ]  # not started: the runs stay queued, so only the quota decides
        tenant = auth.create_tenant(stores[0], "racer", {"queued_runs": 2}).tenant
        principal = Principal(tenant, None)
        rows = [{"model_output": "x", "scenario_result": "x"}] * 3000
        barrier = threading.Barrier(8)
        outcomes: list[str] = []

        def submit(node: RunService) -> None:
            barrier.wait()
            try:
                node.submit_run(principal, ["exact_match"], rows)
                outcomes.append("accepted")
            except QuotaExceededError:
                outcomes.append("429")

        threads = [threading.Thread(target=submit, args=(nodes[i % 2],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sorted(outcomes) == ["429"] * 6 + ["accepted"] * 2, outcomes
        assert stores[0].count_active_runs(tenant.id) == 2
    finally:
        for store in stores:
            store.engine.dispose()


# PostgreSQL only: SQLite has one writer at a time, so there every write waits for the upload.
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_long_upload_does_not_lock_the_tenant_out_of_other_writes(database_url: str) -> None:
    """The quota lock serialises a tenant's submissions only: while a big run's rows are
    stored, the tenant can still save checks and keys (rows referencing its tenant row)."""
    import secrets
    from datetime import UTC, datetime

    from sqlalchemy import insert, text

    from engine.storage import new_id
    from engine.storage.tables import ApiKeyRow
    from tests.conftest import queued_run

    store = open_store(database_url)
    try:
        tenant = store.create_tenant("uploader")
        inside, release = threading.Event(), threading.Event()
        admitted: list[int] = []

        def rows() -> Any:
            yield {"model_output": "first"}
            inside.set()
            release.wait(timeout=120)
            yield {"model_output": "second"}

        run = queued_run(tenant.id, 2)
        upload = threading.Thread(
            target=store.create_run, args=(run, rows(), None), kwargs={"admit": admitted.append}
        )
        upload.start()
        try:
            assert inside.wait(timeout=120), "the upload never started storing rows"
            assert admitted == [0]  # the quota was counted, under the tenant's lock
            with store.engine.connect() as conn:
                conn.execute(text("SET lock_timeout = '10s'"))  # a write that waits fails
                conn.execute(
                    insert(ApiKeyRow).values(
                        id=new_id("key"),
                        tenant_id=tenant.id,
                        prefix="sbx_test",
                        key_hash=secrets.token_hex(32),
                        name=None,
                        created_at=datetime.now(UTC),
                        revoked_at=None,
                    )
                )
                conn.commit()
        finally:
            release.set()
            upload.join(timeout=120)
        assert store.get_run(tenant.id, run.id).row_count == 2
    finally:
        store.engine.dispose()
