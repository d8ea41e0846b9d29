"""Online scoring across restarts: every accepted span is scored exactly once when the
server stops mid-scoring, and batches a dead process claimed are found again (their run
recorded) or queued again (never submitted), never both. SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from engine.app import create_app
from engine.online.rules import score_ref
from engine.online.scorer import OnlineLimits, OnlineScorer
from engine.storage import open_store
from engine.storage.rule_tables import RuleRunRow, SpanScoreRow
from engine.storage.score_queue_sql import BATCH_LABEL, score_queue
from engine.storage.tables import RunRow
from engine.tenancy import auth
from engine.tenancy.auth import Principal
from tests.api.conftest import api_settings
from tests.online.otlp_requests import GZIP_PROTOBUF, gz, new_ids, span, traces

RULE = {"name": "json-answers", "checks": ["builtin:is_json"]}


def _app(database_url: str, tmp_path: Any) -> TestClient:
    client = TestClient(create_app(api_settings(database_url, tmp_path)))
    client.__enter__()
    return client


def _send(client: TestClient, h: dict[str, str], count: int) -> list[bytes]:
    ids = [new_ids() for _ in range(count)]
    for start in range(0, count, 10):
        batch = [span(t, s) for t, s in ids[start : start + 10]]
        reply = client.post(
            "/v1/traces", content=gz(traces(*batch)), headers={**h, **GZIP_PROTOBUF}
        )
        assert reply.status_code == 200, reply.text
    return [t for t, _ in ids]


def _wait_all_scored(client: TestClient, h: dict[str, str], expected: int) -> dict[str, int]:
    deadline = time.monotonic() + 120
    while True:
        counts = client.get("/v1/rules/json-answers", headers=h).json()["counts"]
        if counts.get("scored", 0) >= expected or time.monotonic() > deadline:
            return dict(counts)
        time.sleep(0.2)


def _exactly_once(database_url: str, expected: int) -> None:
    """Each span score names one run row, and the rule's runs hold exactly the spans."""
    store = open_store(database_url, migrate=False)
    try:
        with store.engine.connect() as conn:
            scores = conn.execute(
                select(SpanScoreRow.trace_id, SpanScoreRow.run_id, SpanScoreRow.row_index)
            ).all()
            assert len(scores) == expected
            assert len({t for t, _, _ in scores}) == expected
            assert len({(r, i) for _, r, i in scores}) == expected
            run_ids = [r for (r,) in conn.execute(select(RuleRunRow.run_id))]
            rows = conn.scalar(select(func.sum(RunRow.row_count)).where(RunRow.id.in_(run_ids)))
            assert rows == expected  # no span was submitted twice
    finally:
        store.engine.dispose()


def test_every_span_is_scored_exactly_once_across_a_restart(
    database_url: str, tmp_path: Any
) -> None:
    client = _app(database_url, tmp_path)
    store = open_store(database_url, migrate=False)
    h = {"Authorization": f"Bearer {auth.create_tenant(store, 'restart').secret}"}
    store.engine.dispose()
    assert client.post("/v1/rules", headers=h, json=RULE).status_code == 201
    services = client.app.state.services  # type: ignore[attr-defined]
    client.app.state.online.stop()  # type: ignore[attr-defined]  # batches made here
    sent = _send(client, h, 60)
    # half the spans go into a run, half stay pending; then the server stops
    scorer = OnlineScorer(
        services.store, services.runs, services.db, limits=OnlineLimits(batch_spans=30)
    )
    group = scorer.scores.pending_groups()[0]
    batch = scorer.scores.claim(group.tenant_id, group.rule_version_id, 30)
    assert batch is not None
    scorer._submit(batch)
    counts = client.get("/v1/rules/json-answers", headers=h).json()["counts"]
    assert counts.get("pending") == 30 and counts.get("scored", 0) == 0
    client.__exit__(None, None, None)
    client = _app(database_url, tmp_path)
    try:
        more = _send(client, h, 20)  # and spans keep coming after the restart
        counts = _wait_all_scored(client, h, len(sent) + len(more))
        assert counts == {"scored": len(sent) + len(more)}
    finally:
        client.__exit__(None, None, None)
    _exactly_once(database_url, len(sent) + len(more))


def test_batches_a_dead_process_claimed_are_recovered_or_queued_again(
    database_url: str, tmp_path: Any
) -> None:
    client = _app(database_url, tmp_path)
    try:
        store = open_store(database_url, migrate=False)
        tenant = auth.create_tenant(store, "orphans")
        h = {"Authorization": f"Bearer {tenant.secret}"}
        store.engine.dispose()
        services = client.app.state.services  # type: ignore[attr-defined]
        client.app.state.online.stop()  # type: ignore[attr-defined]  # this test drives it
        assert client.post("/v1/rules", headers=h, json=RULE).status_code == 201
        _send(client, h, 6)
        scores = score_queue(services.db)
        (group,) = scores.pending_groups()
        tenant_id, version_id = group.tenant_id, group.rule_version_id
        # a process claimed 2 spans and died before submitting their run
        lost = scores.claim(tenant_id, version_id, 2)
        # another claimed 2, submitted the run (it carries the token), died before recording it
        orphan = scores.claim(tenant_id, version_id, 2)
        assert lost is not None and orphan is not None
        scorer = OnlineScorer(
            services.store, services.runs, services.db, limits=OnlineLimits(orphan_seconds=0)
        )
        _, version = scorer.rules.get_version(tenant_id, version_id)
        rows = scorer.spans.rows_of(tenant_id, orphan.spans)
        run = services.runs.submit_run(
            Principal(services.store.get_tenant(tenant_id), None),
            [score_ref(c) for c in version.checks],
            [rows[k] for k in orphan.spans],
            None,
            {BATCH_LABEL: orphan.token},
        )
        deadline = time.monotonic() + 60
        counts: dict[str, int] = {}
        while time.monotonic() < deadline:
            scorer.tick()
            counts = client.get("/v1/rules/json-answers", headers=h).json()["counts"]
            if counts == {"scored": 6}:
                break
            time.sleep(0.2)
        assert counts == {"scored": 6}
        # the orphan's run was recorded, not submitted again; the lost batch was re-queued
        with services.db.connect() as conn:
            runs = [r for (r,) in conn.execute(select(RuleRunRow.run_id))]
            assert run.id in runs
            assert conn.scalar(select(func.count()).where(SpanScoreRow.run_id == run.id)) == 2
    finally:
        client.__exit__(None, None, None)
    _exactly_once(database_url, 6)
