"""Span retention on SQLite and PostgreSQL: spans past their age go with their content log
records, younger spans (of the same trace too) and every score stay; ``scorebox db prune
--spans-older-than`` and the service's own pass do it, one tenant or all, dry run first."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from click.testing import CliRunner
from sqlalchemy import func, select

from engine.cli import main as cli
from engine.online.pruner import SpanPruner
from engine.settings import Settings
from engine.storage.rule_tables import SpanScoreRow
from engine.storage.span_retention import prune_spans
from engine.storage.tables import SpanLogRow, SpanRow
from engine.tenancy.auth import authenticate
from tests.api.conftest import Api
from tests.online.otlp_requests import PROTOBUF, logs, span, traces
from tests.online.score_rows import add_scores, make_rule

DAY_NS = 86_400 * 10**9


def _send(
    api: Api, headers: dict[str, str], trace_id: bytes, ages_days: list[float]
) -> list[bytes]:
    """One span per age (in days before now) in one trace, each with a content record."""
    now = time.time_ns()
    ids = [secrets.token_bytes(8) for _ in ages_days]
    spans = [
        span(trace_id, i, start=now - int(age * DAY_NS))
        for i, age in zip(ids, ages_days, strict=True)
    ]
    got = api.client.post(
        "/v1/traces", content=traces(*spans).SerializeToString(), headers={**headers, **PROTOBUF}
    )
    assert got.status_code == 200, got.text
    for i in ids:
        record = logs(trace_id, i, {"gen_ai.input.messages": "[]"})
        sent = api.client.post(
            "/v1/logs", content=record.SerializeToString(), headers={**headers, **PROTOBUF}
        )
        assert sent.status_code == 200, sent.text
    return ids


def _count(api: Api, table: Any, tenant_id: str) -> int:
    with api.store.engine.begin() as conn:
        return int(
            conn.scalar(select(func.count()).select_from(table).where(table.tenant_id == tenant_id))
            or 0
        )


def _score(api: Api, tenant_id: str, trace_id: bytes, span_id: bytes) -> None:
    rule = make_rule(api.store.engine, tenant_id)
    add_scores(api.store.engine, tenant_id, rule, 1, spans=[(trace_id.hex(), span_id.hex())])


def test_old_spans_go_with_their_records_and_scores_stay(api: Api) -> None:
    h = api.tenant()
    tenant_id = authenticate(api.store, h["Authorization"]).tenant_id
    trace_id = secrets.token_bytes(16)
    old, young = _send(api, h, trace_id, [40, 1])
    _score(api, tenant_id, trace_id, old)
    assert (_count(api, SpanRow, tenant_id), _count(api, SpanLogRow, tenant_id)) == (2, 2)
    before = datetime.now(UTC) - timedelta(days=30)
    dry = prune_spans(api.store.engine, before, dry_run=True)
    assert (dry.spans, dry.logs) == (1, 1)
    assert _count(api, SpanRow, tenant_id) == 2  # a dry run deletes nothing
    done = prune_spans(api.store.engine, before)
    assert (done.spans, done.logs) == (1, 1)
    trace = api.client.get(f"/v1/traces/{trace_id.hex()}", headers=h).json()
    assert [s["span_id"] for s in trace["spans"]] == [young.hex()]  # the trace's young span stays
    assert _count(api, SpanLogRow, tenant_id) == 1
    assert _count(api, SpanScoreRow, tenant_id) == 1  # the old span's score is kept
    assert prune_spans(api.store.engine, before).spans == 0


def test_the_cli_prunes_one_tenant_or_all_and_the_service_prunes_on_its_own(
    api: Api, database_url: str, tmp_path: Any, monkeypatch: Any
) -> None:
    a, b = api.tenant(name=f"a-{secrets.token_hex(3)}"), api.tenant()
    ta = authenticate(api.store, a["Authorization"]).tenant
    tb = authenticate(api.store, b["Authorization"]).tenant_id
    _send(api, a, secrets.token_bytes(16), [10, 0])
    _send(api, b, secrets.token_bytes(16), [10, 3])
    monkeypatch.setenv("SCOREBOX_DATABASE_URL", database_url)
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path))
    runner = CliRunner()
    refused = runner.invoke(cli, ["db", "prune"])
    assert refused.exit_code == 2 and "--spans-older-than" in refused.output
    dry = runner.invoke(
        cli, ["db", "prune", "--spans-older-than", "5d", "--tenant", ta.name, "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert "would delete 1 spans and 1 content log records" in dry.output
    done = runner.invoke(cli, ["db", "prune", "--spans-older-than", "5d", "--tenant", ta.name])
    assert "deleted 1 spans and 1 content log records" in done.output
    assert (_count(api, SpanRow, ta.id), _count(api, SpanRow, tb)) == (1, 2)
    settings = Settings(database_url=database_url, data_dir=tmp_path, span_retention_days=2)
    assert SpanPruner(settings, api.store.engine).run_once() == 2  # b's 10- and 3-day spans
    assert (_count(api, SpanRow, ta.id), _count(api, SpanRow, tb)) == (1, 0)
    off = Settings(database_url=database_url, data_dir=tmp_path)
    assert SpanPruner(off, api.store.engine).run_once() == 0
