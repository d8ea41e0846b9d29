"""Spans received over OTLP, in SQL: stored once each, joined to their content log records.

Every query filters on the tenant. A span is inserted with ``ON CONFLICT DO NOTHING`` on
``(tenant, trace id, span id)``, so an exporter's retry of a batch changes nothing. The
content log records of ``/v1/logs`` may come before or after their span: a span is mapped
with the records already stored for it, and records arriving later re-map their span.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Engine, Table, and_, exists, func, or_, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from engine.errors import InvalidRequestError, NotFoundError
from engine.online.filters import SpanFields
from engine.online.mapping import Event, Mapped, Span, map_span, search_text
from engine.storage.bulk_insert import insert_statements, run_statements
from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.records import aware, utcnow
from engine.storage.rule_records import SpanRef, SpanView
from engine.storage.rule_tables import SpanScoreRow
from engine.storage.span_rows import TRUNCATED, full_row, kept_whole, stored_row
from engine.storage.tables import SpanLogRow, SpanRow

MAX_PAGE = 1_000
#: A stored attribute value past this many characters is cut (the row, then stored whole,
#: keeps the content).
MAX_VALUE_CHARS = 16_384
#: A span's stored attributes (and, separately, its events) past this JSON size are cut.
MAX_ATTRIBUTES_CHARS = 131_072
SPANS: Table = SpanRow.__table__  # type: ignore[assignment]
#: A span is stored once per tenant, trace id and span id.
SPAN_KEY = ("tenant_id", "trace_id", "span_id")


def bounded(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` with long values cut and, past the total, later keys dropped (the
    same dict when nothing is: most spans' attributes are short strings and numbers)."""
    total = 0
    for key, value in attributes.items():
        if isinstance(value, str):
            if len(value) > MAX_VALUE_CHARS:
                break
            total += len(key) + len(value) + 6
        elif value is None or isinstance(value, int | float):
            total += len(key) + len(str(value)) + 6
        else:
            break  # a list or a map: sized by encoding it, below
        if total > MAX_ATTRIBUTES_CHARS:
            break
    else:
        return attributes
    return _cut(attributes)


def _cut(attributes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total = 0
    dropped = 0
    for key, original in attributes.items():
        value = original
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            value = value[:MAX_VALUE_CHARS]
            dropped += 1
        # a string's or a number's length is its JSON size closely enough for a bound, and
        # far cheaper than encoding it (this runs for every attribute of every span)
        if isinstance(value, str):
            size = len(key) + len(value) + 6
        elif value is None or isinstance(value, int | float):
            size = len(key) + len(str(value)) + 6
        else:
            size = len(key) + len(json.dumps(value, default=str)) + 6
        if total + size > MAX_ATTRIBUTES_CHARS:
            dropped += 1
            continue
        out[key] = value
        total += size
    if dropped:
        out[TRUNCATED] = dropped
    return out


def _bounded_events(events: Iterable[Event]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    total = 0
    for event in events:
        item = {"name": event.name, "attributes": bounded(event.attributes)}
        total += len(json.dumps(item, default=str))
        if total > MAX_ATTRIBUTES_CHARS:
            break
        out.append(item)
    return out


@dataclass(frozen=True)
class StoredSpan:
    """A stored span and its row."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    service: str | None
    model: str | None
    start_unix_nano: int
    end_unix_nano: int
    status: str
    attributes: dict[str, Any]
    events: list[Any]
    row: dict[str, Any]
    is_llm: bool
    no_content: bool
    received_at: datetime

    @classmethod
    def of(cls, r: SpanRow) -> StoredSpan:
        return cls(
            trace_id=r.trace_id,
            span_id=r.span_id,
            parent_span_id=r.parent_span_id,
            name=r.name,
            kind=r.kind,
            service=r.service,
            model=r.model,
            start_unix_nano=r.start_unix_nano,
            end_unix_nano=r.end_unix_nano,
            status=r.status,
            attributes=r.attributes,
            events=r.events,
            row=full_row(r.row, r.attributes, r.events),
            is_llm=r.is_llm,
            no_content=r.no_content,
            received_at=aware(r.received_at) or r.received_at,
        )


@dataclass(frozen=True)
class SpanFilter:
    """The span list's filters (all optional, ANDed)."""

    since_unix_nano: int | None = None
    until_unix_nano: int | None = None
    service: str | None = None
    model: str | None = None
    no_content: bool | None = None
    llm: bool | None = None
    text: str | None = None
    #: spans with a score of this rule (id), check (name), status, passed (ANDed on one score)
    rule_id: str | None = None
    check: str | None = None
    score_status: str | None = None
    passed: bool | None = None

    @property
    def on_scores(self) -> bool:
        return any(
            v is not None for v in (self.rule_id, self.check, self.score_status, self.passed)
        )


def _cursor(start: int, span_pk: str) -> str:
    return base64.urlsafe_b64encode(f"{start}:{span_pk}".encode()).decode()


def _uncursor(cursor: str) -> tuple[int, str]:
    try:
        start, span_pk = base64.urlsafe_b64decode(cursor.encode()).decode().split(":", 1)
        return int(start), span_pk
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequestError(
            "cursor: not a cursor this API gave; pass next_cursor from the previous page"
        ) from None


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


class SpanStore(SqlSessions):
    """Spans and their content log records, per tenant."""

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
                events = _bounded_events(span.events)
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

    def count(self, tenant_id: str) -> int:
        """How many spans the tenant has stored (its ``stored_spans`` quota counts them)."""
        with self._session() as s:
            q = select(func.count()).select_from(SpanRow).where(SpanRow.tenant_id == tenant_id)
            return int(s.scalar(q) or 0)

    def trace(self, tenant_id: str, trace_id: str) -> list[StoredSpan]:
        """The spans of one trace, by start time; 404 when the tenant has none of it."""
        with self._session() as s:
            rows = s.scalars(
                select(SpanRow)
                .where(SpanRow.tenant_id == tenant_id, SpanRow.trace_id == trace_id.lower())
                .order_by(SpanRow.start_unix_nano, SpanRow.id)
            ).all()
            if not rows:
                raise NotFoundError(
                    f"trace {trace_id!r} not found: GET /v1/spans lists the traces received"
                )
            return [StoredSpan.of(r) for r in rows]

    def rows_of(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """The rows (as checks see them) of the spans ``keys`` (trace id, span id) still
        stored."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        wanted = set(keys)
        traces = sorted({t for t, _ in wanted})
        with self._session() as s:
            # by trace ids, the spans picked out here: SQLite reads a (trace, span) IN list
            # through the index's tenant column alone, which is every span of the tenant
            for start in range(0, len(traces), 400):
                rows = s.execute(
                    select(
                        SpanRow.trace_id,
                        SpanRow.span_id,
                        SpanRow.row,
                        SpanRow.attributes,
                        SpanRow.events,
                    ).where(
                        SpanRow.tenant_id == tenant_id,
                        SpanRow.trace_id.in_(traces[start : start + 400]),
                    )
                )
                for trace_id, span_id, row, attributes, events in rows:
                    if (trace_id, span_id) in wanted:
                        found[(trace_id, span_id)] = full_row(row, attributes, events)
        return found

    def recent_views(self, tenant_id: str, since_unix_nano: int, limit: int) -> list[SpanView]:
        """The newest spans started since ``since_unix_nano``, as rules see them."""
        q = (
            select(SpanRow)
            .where(SpanRow.tenant_id == tenant_id, SpanRow.start_unix_nano >= since_unix_nano)
            .order_by(SpanRow.start_unix_nano.desc(), SpanRow.id.desc())
            .limit(limit)
        )
        with self._session() as s:
            return [span_view(r) for r in s.scalars(q)]

    def spans(
        self, tenant_id: str, where: SpanFilter, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[StoredSpan], str | None]:
        """A page of spans, newest start first, and the cursor of the next page (or None)."""
        limit = max(1, min(limit, MAX_PAGE))
        q = select(SpanRow).where(SpanRow.tenant_id == tenant_id)
        if where.since_unix_nano is not None:
            q = q.where(SpanRow.start_unix_nano >= where.since_unix_nano)
        if where.until_unix_nano is not None:
            q = q.where(SpanRow.start_unix_nano < where.until_unix_nano)
        if where.service is not None:
            q = q.where(SpanRow.service == where.service)
        if where.model is not None:
            q = q.where(SpanRow.model == where.model)
        if where.no_content is not None:
            q = q.where(SpanRow.no_content.is_(where.no_content))
        if where.llm is not None:
            q = q.where(SpanRow.is_llm.is_(where.llm))
        if where.text:
            escaped = where.text.lower().replace("\\", "\\\\").replace("%", r"\%")
            pattern = "%" + escaped.replace("_", r"\_") + "%"
            q = q.where(func.lower(SpanRow.search_text).like(pattern, escape="\\"))
        if where.on_scores:
            q = q.where(_scored_as(where))
        if cursor:
            start, span_pk = _uncursor(cursor)
            q = q.where(
                or_(
                    SpanRow.start_unix_nano < start,
                    and_(SpanRow.start_unix_nano == start, SpanRow.id < span_pk),
                )
            )
        q = q.order_by(SpanRow.start_unix_nano.desc(), SpanRow.id.desc()).limit(limit + 1)
        with self._session() as s:
            rows = list(s.scalars(q))
        more = len(rows) > limit
        rows = rows[:limit]
        after = _cursor(rows[-1].start_unix_nano, rows[-1].id) if more and rows else None
        return [StoredSpan.of(r) for r in rows], after


def _scored_as(where: SpanFilter) -> Any:
    """Spans with one score matching the score filters."""
    q = exists().where(
        SpanScoreRow.tenant_id == SpanRow.tenant_id,
        SpanScoreRow.trace_id == SpanRow.trace_id,
        SpanScoreRow.span_id == SpanRow.span_id,
    )
    if where.rule_id is not None:
        q = q.where(SpanScoreRow.rule_id == where.rule_id)
    if where.check is not None:
        q = q.where(SpanScoreRow.check_name == where.check)
    if where.score_status is not None:
        q = q.where(SpanScoreRow.status == where.score_status)
    if where.passed is not None:
        q = q.where(SpanScoreRow.passed.is_(where.passed))
    return q


def view_of(v: Mapping[str, Any]) -> SpanView:
    """A span as rules see it, from its stored columns (``attributes`` and ``row`` may be
    left out: the view then has none)."""
    row = v.get("row") or {}
    meta = row.get("metadata", {}) if isinstance(row, dict) else {}
    return SpanView(
        SpanRef(v["trace_id"], v["span_id"], v["start_unix_nano"], v["no_content"]),
        SpanFields(
            name=v["name"],
            service=v["service"],
            model=v["model"],
            status=v["status"],
            kind=v["kind"],
            attributes=v.get("attributes") or {},
            metadata=meta if isinstance(meta, dict) else {},
        ),
    )


def span_view(r: SpanRow) -> SpanView:
    """A stored span as rules see it: the same view a span arriving gets."""
    return view_of(
        {
            "trace_id": r.trace_id,
            "span_id": r.span_id,
            "start_unix_nano": r.start_unix_nano,
            "no_content": r.no_content,
            "name": r.name,
            "service": r.service,
            "model": r.model,
            "status": r.status,
            "kind": r.kind,
            "attributes": r.attributes,
            "row": r.row,
        }
    )


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
