"""A span's content is stored once (SQLite and PostgreSQL): a span kept whole stores its
row compact (metadata alone) and reads it back as the mapping made it; a span with a value
cut, or content from a log record, stores its row whole. Migration 0018 makes compact rows
whole again going down, and leaves rows stored before it as they were going up."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from alembic import command
from sqlalchemy import Engine, insert, select

from engine.online.mapping import Event, Span, map_span
from engine.storage import open_store
from engine.storage.database import alembic_config, create_db_engine, current_revision, upgrade
from engine.storage.span_bounds import MAX_VALUE_CHARS
from engine.storage.span_reads import SpanFilter
from engine.storage.span_sql import span_store
from engine.storage.tables import SpanRow, TenantRow
from engine.tenancy import auth

TRACE = "ab" * 16


def _span(span: int, question: str, answer: str = "Paris.") -> Span:
    return Span(
        trace_id=TRACE,
        span_id=f"{span:016x}",
        name="chat gpt-4o-mini",
        start_unix_nano=1_000 + span,
        end_unix_nano=2_000 + span,
        status_code=1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.response.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
            ),
        },
        resource={"service.name": "bot"},
        scope_name="opentelemetry.util.genai.handler",
    )


def _stored(db: Engine, span_id: str) -> tuple[dict[str, Any], str]:
    with db.connect() as conn:
        row, text = conn.execute(
            select(SpanRow.row, SpanRow.search_text).where(SpanRow.span_id == span_id)
        ).one()
    return row, text


def test_content_is_stored_once_and_read_as_mapped(database_url: str) -> None:
    store = open_store(database_url)
    tenant = auth.create_tenant(store, "a").tenant.id
    spans = span_store(store.engine)
    kept = _span(1, "What is the capital of France?")
    long_question = "q" * (MAX_VALUE_CHARS + 100)
    cut = _span(2, long_question)  # its input messages are cut at storage
    spans.add_spans(tenant, [kept, cut])

    row, text = _stored(store.engine, kept.span_id)
    assert set(row) == {"metadata"}  # the content is in the attributes alone
    assert row["metadata"]["service_name"] == "bot"
    assert text == "What is the capital of France?\nParis."  # the reply once
    whole, _ = _stored(store.engine, cut.span_id)
    assert whole["messages"][0]["content"] == long_question  # mapped before the cut

    expected = {s.span_id: map_span(s).row() for s in (kept, cut)}
    read = {s.span_id: s.row for s in spans.trace(tenant, TRACE)}
    assert read == expected
    rows = spans.rows_of(tenant, [(TRACE, kept.span_id), (TRACE, cut.span_id)])
    assert {k[1]: v for k, v in rows.items()} == expected
    found, _ = spans.spans(tenant, SpanFilter(text="capital of france"))
    assert [s.span_id for s in found] == [kept.span_id]
    assert found[0].row["model_output"] == "Paris."
    store.engine.dispose()


def test_content_from_a_log_record_is_stored_whole(database_url: str) -> None:
    store = open_store(database_url)
    tenant = auth.create_tenant(store, "a").tenant.id
    spans = span_store(store.engine)
    bare = Span(trace_id=TRACE, span_id="cd" * 8, name="chat", attributes={})
    spans.add_spans(tenant, [bare])
    row, _ = _stored(store.engine, bare.span_id)
    assert set(row) == {"metadata"} and row["metadata"]["no_content"] is True
    details = Event(
        "gen_ai.client.inference.operation.details",
        {
            "gen_ai.output.messages": [
                {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}
            ]
        },
    )
    spans.add_logs(tenant, [(TRACE, bare.span_id, details)])
    row, _ = _stored(store.engine, bare.span_id)
    assert row["model_output"] == "hi"  # not in the span's attributes: kept in the row
    assert spans.trace(tenant, TRACE)[0].row["model_output"] == "hi"
    store.engine.dispose()


def test_migration_0018_keeps_rows_stored_before_and_makes_compact_rows_whole_going_down(
    database_url: str,
) -> None:
    db = create_db_engine(database_url)
    try:
        upgrade(db, "0017")
        now = datetime.now(UTC)
        before = _span(1, "stored before")
        with db.begin() as conn:
            conn.execute(
                insert(TenantRow).values(id="ten_1", name="acme", quotas={}, created_at=now)
            )
            conn.execute(
                insert(SpanRow).values(
                    id="span_before",
                    tenant_id="ten_1",
                    trace_id=TRACE,
                    span_id=before.span_id,
                    name=before.name,
                    kind=0,
                    service="bot",
                    model="gpt-4o-mini",
                    start_unix_nano=before.start_unix_nano,
                    end_unix_nano=before.end_unix_nano,
                    status="ok",
                    attributes=before.attributes,
                    events=[],
                    row=map_span(before).row(),  # whole, as 0017's code stored it
                    search_text="stored before\nParis.\nParis.",
                    is_llm=True,
                    no_content=False,
                    received_at=now,
                )
            )
        upgrade(db, "0018")
        assert current_revision(db) == "0018"
        spans = span_store(db)
        after = _span(2, "stored after")
        spans.add_spans("ten_1", [after])
        assert set(_stored(db, after.span_id)[0]) == {"metadata"}
        expected = {s.span_id: map_span(s).row() for s in (before, after)}
        assert {s.span_id: s.row for s in spans.trace("ten_1", TRACE)} == expected

        command.downgrade(alembic_config(db), "0017")
        assert current_revision(db) == "0017"
        # as 0017's code reads them: every row whole, as stored
        assert {s.span_id: _stored(db, s.span_id)[0] for s in (before, after)} == expected
        upgrade(db)
        assert {s.span_id: s.row for s in spans.trace("ten_1", TRACE)} == expected
    finally:
        db.dispose()


def test_json_columns_keep_what_json_keeps(database_url: str) -> None:
    store = open_store(database_url)
    tenant = auth.create_tenant(store, "a").tenant.id
    spans = span_store(store.engine)
    odd = _span(3, "¿Dónde está la capital? 東京")
    attributes = {**odd.attributes, "big": 2**70, "nested": {"k": [1, "é", None, 2.5]}}
    spans.add_spans(tenant, [Span(**{**odd.__dict__, "attributes": attributes})])
    (stored,) = spans.trace(tenant, TRACE)
    assert stored.attributes == attributes  # orjson refuses 2**70: json encodes that span
    assert stored.row["scenario_input"] == "¿Dónde está la capital? 東京"
    found, _ = spans.spans(tenant, SpanFilter(text="dónde está"))
    assert [s.span_id for s in found] == [odd.span_id]
    store.engine.dispose()
