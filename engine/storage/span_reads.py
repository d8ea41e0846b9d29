"""Reading the spans received over OTLP: a page of the span list with its filters, a trace,
the rows of spans picked for scoring, the spans as rules see them. Every query filters on the
tenant; :class:`SpanReads` is the read half of the span store (engine/storage/span_sql.py).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, or_, select

from engine.errors import InvalidRequestError, NotFoundError
from engine.online.filters import SpanFields
from engine.storage.database import SqlSessions
from engine.storage.records import aware
from engine.storage.rule_records import SpanRef, SpanView
from engine.storage.rule_tables import SpanScoreRow
from engine.storage.span_rows import full_row
from engine.storage.tables import SpanRow

MAX_PAGE = 1_000


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


class SpanReads(SqlSessions):
    """The span store's queries, per tenant."""

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
