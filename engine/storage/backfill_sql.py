"""Backfills in SQL: a rule version over a window of stored spans, resumable by a cursor.

A backfill walks the tenant's spans in (start time, row id) order from its cursor; each
step queues the matching spans (``engine.storage.score_queue_sql``) and moves the cursor
in the same database, so a restart resumes where the last step ended.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, or_, select, update

from engine.errors import NotFoundError
from engine.storage.database import SqlSessions, once_per_engine, one_or_404
from engine.storage.records import aware, new_id, utcnow
from engine.storage.rule_records import Backfill, BackfillStatus, ScoreStatus, SpanView
from engine.storage.rule_tables import RuleBackfillRow, SpanScoreRow
from engine.storage.span_reads import view_of
from engine.storage.tables import SpanRow

__all__ = ["BackfillStore", "backfill_store"]


def _backfill(r: RuleBackfillRow) -> Backfill:
    return Backfill(
        id=r.id,
        tenant_id=r.tenant_id,
        rule_id=r.rule_id,
        rule_version_id=r.rule_version_id,
        since_unix_nano=r.since_unix_nano,
        until_unix_nano=r.until_unix_nano,
        row_cap=r.row_cap,
        status=r.status,
        counts=dict(r.counts),
        created_at=aware(r.created_at) or r.created_at,
        finished_at=aware(r.finished_at),
        cursor_unix_nano=r.cursor_unix_nano,
        cursor_span_pk=r.cursor_span_pk,
    )


class BackfillStore(SqlSessions):
    """A tenant's backfills and the span pages they walk."""

    def create(
        self,
        tenant_id: str,
        rule_id: str,
        rule_version_id: str,
        since_unix_nano: int,
        until_unix_nano: int,
        row_cap: int,
    ) -> Backfill:
        """A new running backfill."""
        row = RuleBackfillRow(
            id=new_id("backfill"),
            tenant_id=tenant_id,
            rule_id=rule_id,
            rule_version_id=rule_version_id,
            since_unix_nano=since_unix_nano,
            until_unix_nano=until_unix_nano,
            row_cap=row_cap,
            status=BackfillStatus.RUNNING.value,
            cursor_unix_nano=None,
            cursor_span_pk=None,
            counts={},
            created_at=utcnow(),
            finished_at=None,
        )
        with self._session() as s:
            s.add(row)
        return _backfill(row)

    def get(self, tenant_id: str, backfill_id: str) -> Backfill:
        """A backfill of the tenant (404 otherwise)."""
        with self._session() as s:
            return _backfill(
                one_or_404(
                    s,
                    select(RuleBackfillRow).where(
                        RuleBackfillRow.tenant_id == tenant_id, RuleBackfillRow.id == backfill_id
                    ),
                    f"no backfill {backfill_id!r}: GET /v1/rules/{{name}}/backfills lists them",
                )
            )

    def of_rule(self, tenant_id: str, rule_id: str, limit: int = 50) -> list[Backfill]:
        """A rule's backfills, newest first."""
        with self._session() as s:
            rows = s.scalars(
                select(RuleBackfillRow)
                .where(RuleBackfillRow.tenant_id == tenant_id, RuleBackfillRow.rule_id == rule_id)
                .order_by(RuleBackfillRow.created_at.desc(), RuleBackfillRow.id.desc())
                .limit(limit)
            )
            return [_backfill(r) for r in rows]

    def running(self) -> list[Backfill]:
        """Every running backfill, oldest first (the scorer steps them)."""
        with self._session() as s:
            rows = s.scalars(
                select(RuleBackfillRow)
                .where(RuleBackfillRow.status == BackfillStatus.RUNNING.value)
                .order_by(RuleBackfillRow.created_at)
            )
            return [_backfill(r) for r in rows]

    def page(self, b: Backfill, limit: int, *, fields: bool = True) -> list[tuple[str, SpanView]]:
        """The next spans of the backfill's window after its cursor: (row id, view).
        Without ``fields`` the views carry no attributes or metadata (an empty filter reads
        none: the span's JSON is not loaded)."""
        columns = [
            SpanRow.id,
            SpanRow.trace_id,
            SpanRow.span_id,
            SpanRow.start_unix_nano,
            SpanRow.no_content,
            SpanRow.name,
            SpanRow.service,
            SpanRow.model,
            SpanRow.status,
            SpanRow.kind,
        ]
        if fields:
            columns += [SpanRow.attributes, SpanRow.row]
        q = select(*columns).where(
            SpanRow.tenant_id == b.tenant_id,
            SpanRow.start_unix_nano >= b.since_unix_nano,
            SpanRow.start_unix_nano < b.until_unix_nano,
        )
        if b.cursor_unix_nano is not None and b.cursor_span_pk is not None:
            q = q.where(
                or_(
                    SpanRow.start_unix_nano > b.cursor_unix_nano,
                    and_(
                        SpanRow.start_unix_nano == b.cursor_unix_nano,
                        SpanRow.id > b.cursor_span_pk,
                    ),
                )
            )
        q = q.order_by(SpanRow.start_unix_nano, SpanRow.id).limit(limit)
        with self._session() as s:
            result = s.execute(q)
            names = list(result.keys())  # once: a row's own mapping costs more than its view
            return [(str(r[0]), view_of(dict(zip(names, r, strict=True)))) for r in result]

    def advance(
        self,
        backfill_id: str,
        cursor: tuple[int, str] | None,
        counts: dict[str, int],
        done: bool,
        expected: tuple[int | None, str | None] | None = None,
    ) -> bool:
        """Move a running backfill's cursor and add to its counts; False when it is no longer
        running (cancelled meanwhile), or its cursor is no longer ``expected`` (another API
        node stepped it first: the page it queued was queued once, its counts are kept)."""
        with self._session() as s:
            row = s.get(RuleBackfillRow, backfill_id, with_for_update=True)
            if row is None or row.status != BackfillStatus.RUNNING.value:
                return False
            if expected is not None and (row.cursor_unix_nano, row.cursor_span_pk) != expected:
                return False
            merged = dict(row.counts)
            for key, value in counts.items():
                merged[key] = int(merged.get(key, 0)) + int(value)
            row.counts = merged
            if cursor is not None:
                row.cursor_unix_nano, row.cursor_span_pk = cursor
            if done:
                row.status = BackfillStatus.DONE.value
                row.finished_at = utcnow()
            return True

    def cancel(self, tenant_id: str, backfill_id: str) -> Backfill:
        """Stop a backfill: its spans not yet in a run are marked ``cancelled``."""
        with self._session() as s:
            row = s.scalar(
                select(RuleBackfillRow).where(
                    RuleBackfillRow.tenant_id == tenant_id, RuleBackfillRow.id == backfill_id
                )
            )
            if row is None:
                raise NotFoundError(f"no backfill {backfill_id!r}")
            if row.status == BackfillStatus.RUNNING.value:
                row.status = BackfillStatus.CANCELLED.value
                row.finished_at = utcnow()
            s.execute(
                update(SpanScoreRow)
                .where(
                    SpanScoreRow.tenant_id == tenant_id,
                    SpanScoreRow.origin == backfill_id,
                    SpanScoreRow.status == ScoreStatus.PENDING.value,
                )
                .values(status=ScoreStatus.CANCELLED.value)
                .execution_options(synchronize_session=False)
            )
            s.flush()
            return _backfill(row)

    def outcomes(self, tenant_id: str, backfill_id: str) -> dict[str, int]:
        """How the scores this backfill queued stand now, by status."""
        with self._session() as s:
            rows = s.execute(
                select(SpanScoreRow.status, func.count())
                .where(SpanScoreRow.tenant_id == tenant_id, SpanScoreRow.origin == backfill_id)
                .group_by(SpanScoreRow.status)
            )
            return {status: int(n) for status, n in rows}

    def waiting(self, tenant_id: str, backfill_id: str) -> int:
        """Scores of this backfill not written yet (pending or queued)."""
        statuses: list[Any] = [ScoreStatus.PENDING.value, ScoreStatus.QUEUED.value]
        with self._session() as s:
            return int(
                s.scalar(
                    select(func.count()).where(
                        # the tenant's waiting scores by its (tenant, status) index, then
                        # this backfill's among them: not a scan of every score ever made
                        SpanScoreRow.tenant_id == tenant_id,
                        SpanScoreRow.status.in_(statuses),
                        SpanScoreRow.origin == backfill_id,
                    )
                )
                or 0
            )


#: The backfill store on ``engine``, made once per engine.
backfill_store = once_per_engine(BackfillStore)
