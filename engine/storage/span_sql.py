"""Spans received over OTLP, in SQL: stored once each, joined to their content log records.

This module stores them (:class:`SpanStore`; its queries are
:class:`~engine.storage.span_reads.SpanReads`, and what of a span is kept,
:mod:`engine.storage.span_bounds`). Every query filters on the tenant. A span is inserted
with ``ON CONFLICT DO NOTHING`` on ``(tenant, trace id, span id)``, so an exporter's retry
of a batch changes nothing. The content log records of ``/v1/logs`` may come before or
after their span: a span is mapped with the records already stored for it, and records
arriving later re-map their span.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import orjson
from sqlalchemy import Engine, Table, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from engine.online.mapping import Event, Mapped, Span, map_span, search_text
from engine.storage.bulk_insert import insert_statements, run_statements
from engine.storage.database import once_per_engine
from engine.storage.records import utcnow
from engine.storage.rule_records import SpanView
from engine.storage.span_bounds import bounded, bounded_events
from engine.storage.span_reads import SpanReads, span_view, view_of
from engine.storage.span_rows import TRUNCATED, kept_whole, stored_row
from engine.storage.tables import SpanLogRow, SpanRow

SPANS: Table = SpanRow.__table__  # type: ignore[assignment]
#: A span is stored once per tenant, trace id and span id.
SPAN_KEY = ("tenant_id", "trace_id", "span_id")


def _json_text(value: Any) -> str:
    """A JSON column's text, as SQLAlchemy's JSON type would store it on SQLite (None as
    ``null``), encoded by orjson (a fifth of ``json.dumps``' time, three columns a span).
    What orjson refuses (an integer past 64 bits) is left to ``json``."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


#: The span table's JSON columns, encoded by :func:`_json_text` in a batch's insert.
_JSON_COLUMNS = {"attributes": _json_text, "events": _json_text, "row": _json_text}


def _span_pks(count: int) -> list[str]:
    """New spans' primary keys, in the order spans arrive: each insert lands at the end of
    the key's index, where a random key would dirty one page of it anywhere (a batch of
    512 spans, about 500 pages to write). The time, a random part drawn once a batch (two
    processes, or two batches in one nanosecond), and the span's place in the batch."""
    head = f"span_{time.time_ns():016x}{secrets.token_hex(4)}"
    return [f"{head}{n:04x}" for n in range(count)]


def _log_id(tenant_id: str, trace_id: str, span_id: str, event: Event) -> str:
    document = json.dumps(
        [tenant_id, trace_id, span_id, event.name, event.attributes, event.body],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(document.encode()).hexdigest()


def _model(mapped: Mapped) -> str | None:
    meta = mapped.metadata
    model = meta.get("response_model") or meta.get("request_model")
    return None if model is None else str(model)[:500]


def _mapped_columns(mapped: Mapped, whole: bool = True) -> dict[str, Any]:
    """The columns mapped from the span; ``whole`` False: its row stored compact."""
    return {
        "row": stored_row(mapped, whole),
        "search_text": search_text(mapped),
        "is_llm": mapped.is_llm,
        "no_content": mapped.no_content,
        "model": _model(mapped),
    }


class SpanStore(SpanReads):
    """Spans and their content log records, per tenant: storing them here, reading them in
    :class:`~engine.storage.span_reads.SpanReads`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._write_lock = threading.Lock()

    def _writer(self) -> AbstractContextManager[Any]:
        """On SQLite, this process's batches write one at a time: a batch waiting here
        starts the moment the one before commits, where SQLite's own busy handler would
        sleep (up to 100 ms a try) between looks at the file's lock. PostgreSQL locks
        rows, not the database: batches write together."""
        return self._write_lock if self._dialect == "sqlite" else nullcontext()

    def _insert(self, table: Any) -> Any:
        return pg_insert(table) if self._dialect == "postgresql" else sqlite_insert(table)

    def _logs_for(self, s: Any, tenant_id: str, keys: set[tuple[str, str]]) -> dict[Any, Any]:
        """The stored content records of the spans ``keys`` (trace id, span id)."""
        found: dict[tuple[str, str], list[Event]] = {}
        if not keys:
            return found
        # most tenants send no log records: one seek answers for the whole batch
        probe = select(SpanLogRow.id).where(SpanLogRow.tenant_id == tenant_id).limit(1)
        if s.scalar(probe) is None:
            return found
        # by trace id: the index leads with tenant and trace, so each look-up is a seek
        # (a span id alone would scan every record of the tenant)
        trace_ids = sorted({trace for trace, _ in keys})
        for start in range(0, len(trace_ids), 500):
            rows = s.scalars(
                select(SpanLogRow)
                .where(
                    SpanLogRow.tenant_id == tenant_id,
                    SpanLogRow.trace_id.in_(trace_ids[start : start + 500]),
                )
                .order_by(SpanLogRow.received_at, SpanLogRow.id)
            )
            for r in rows:
                if (r.trace_id, r.span_id) in keys:
                    event = Event(r.event_name, r.attributes, r.body)
                    found.setdefault((r.trace_id, r.span_id), []).append(event)
        return found

    def add_spans(self, tenant_id: str, spans: Sequence[Span]) -> list[SpanView]:
        """Store ``spans`` mapped to rows; a span already stored is left as it is. Returns
        the spans as rules see them (for the scoring queue)."""
        if not spans:
            return []
        now = utcnow()
        with self._session() as s:
            logs = self._logs_for(s, tenant_id, {(x.trace_id, x.span_id) for x in spans})
            values = []
            for span, pk in zip(spans, _span_pks(len(spans)), strict=True):
                joined = logs.get((span.trace_id, span.span_id), [])
                mapped = map_span(_with_events(span, joined) if joined else span)
                attributes = bounded(span.attributes)
                events = bounded_events(span.events)
                # content joined from log records is not in the span's own columns
                whole = bool(joined) or not kept_whole(span, attributes, events)
                values.append(
                    {
                        "id": pk,
                        "tenant_id": tenant_id,
                        "trace_id": span.trace_id,
                        "span_id": span.span_id,
                        "parent_span_id": span.parent_span_id,
                        "name": span.name[:500],
                        "kind": span.kind,
                        "service": _short(span.resource.get("service.name")),
                        "start_unix_nano": span.start_unix_nano,
                        "end_unix_nano": span.end_unix_nano,
                        "status": str(mapped.metadata.get("status", "unset")),
                        "attributes": attributes,
                        "events": events,
                        "received_at": now,
                        **_mapped_columns(mapped, whole),
                    }
                )
            if self._dialect != "sqlite":
                # PostgreSQL: psycopg's pipelined executemany measured faster here than
                # one statement of 512 rows (binding 10,000 parameters costs more)
                statement = self._insert(SPANS).on_conflict_do_nothing(index_elements=SPAN_KEY)
                s.execute(statement, values)
                return [view_of(v) for v in values]
            conn = s.connection()
            statements = insert_statements(conn, SPANS, values, SPAN_KEY, _JSON_COLUMNS)
            with self._writer():  # only the database's work under the lock
                run_statements(conn, statements)
                s.commit()
        return [view_of(v) for v in values]

    def add_logs(self, tenant_id: str, logs: Sequence[tuple[str, str, Event]]) -> list[SpanView]:
        """Keep content log records; re-map the spans they name that are already stored.
        Returns those spans as rules see them now (content may have come with the records)."""
        if not logs:
            return []
        now = utcnow()
        values = {}
        for trace_id, span_id, event in logs:
            key = _log_id(tenant_id, trace_id, span_id, event)
            values[key] = {
                "id": key,
                "tenant_id": tenant_id,
                "trace_id": trace_id,
                "span_id": span_id,
                "event_name": event.name[:200],
                "attributes": bounded(event.attributes),
                "body": event.body,
                "received_at": now,
            }
        keys = {(trace_id, span_id) for trace_id, span_id, _ in logs}
        # the lock inside the session, as add_spans takes it: one order, no deadlock
        with self._session() as s, self._writer():
            statement = self._insert(SpanLogRow.__table__).on_conflict_do_nothing(
                index_elements=["id"]
            )
            s.execute(statement, list(values.values()))
            stored = list(
                s.scalars(
                    select(SpanRow).where(
                        SpanRow.tenant_id == tenant_id,
                        tuple_(SpanRow.trace_id, SpanRow.span_id).in_(sorted(keys)),
                    )
                )
            )
            joined = self._logs_for(s, tenant_id, {(r.trace_id, r.span_id) for r in stored})
            for r in stored:
                mapped = map_span(
                    _with_events(_span_of(r), joined.get((r.trace_id, r.span_id), []))
                )
                for column, value in _mapped_columns(mapped).items():
                    setattr(r, column, value)
            views = [span_view(r) for r in stored]
            s.commit()
        return views


def _short(value: Any) -> str | None:
    return None if value is None else str(value)[:500]


def _with_events(span: Span, events: Sequence[Event]) -> Span:
    return Span(**{**span.__dict__, "events": (*span.events, *events)})


def _span_of(r: SpanRow) -> Span:
    """A stored span back as the mapping's input (resource and scope from its row)."""
    meta = r.row.get("metadata", {}) if isinstance(r.row, dict) else {}
    resource = {"service.name": r.service} if r.service else {}
    if meta.get("environment"):
        resource["deployment.environment.name"] = meta["environment"]
    status = {"unset": 0, "ok": 1, "error": 2}.get(r.status, 0)
    return Span(
        trace_id=r.trace_id,
        span_id=r.span_id,
        parent_span_id=r.parent_span_id,
        name=r.name,
        kind=r.kind,
        start_unix_nano=r.start_unix_nano,
        end_unix_nano=r.end_unix_nano,
        status_code=status,
        status_message=str(meta.get("status_message", "")),
        attributes={k: v for k, v in r.attributes.items() if k != TRUNCATED},
        events=tuple(
            Event(str(e.get("name", "")), dict(e.get("attributes", {})))
            for e in r.events
            if isinstance(e, dict)
        ),
        resource=resource,
        scope_name=str(meta.get("scope") or ""),
        scope_version=str(meta.get("scope_version") or ""),
    )


#: The span store on ``engine``, made once per engine.
span_store = once_per_engine(SpanStore)
