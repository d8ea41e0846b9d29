"""The OTLP score export's storage: a tenant's export settings, the scores not sent yet,
and their delivery marks (tables of migration 0015)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select, update

from engine.errors import NotFoundError
from engine.online.export_records import ExportedScore
from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.export_tables import OtlpExportRow, ScoreExportRow
from engine.storage.records import aware, utcnow
from engine.storage.rule_tables import RuleRow, SpanScoreRow

__all__ = ["EXPORTED_STATUSES", "ExportSettings", "ExportStore", "export_store"]

#: span score statuses that are outcomes, and so are sent (skips and work in hand are not)
EXPORTED_STATUSES = ("scored", "error")
NO_EXPORT = 'no OTLP export is set: PUT /v1/otlp-export {"endpoint": …} sets one'


@dataclass(frozen=True)
class ExportSettings:
    """A tenant's export as stored; ``headers`` hold secrets and are never shown back."""

    tenant_id: str
    endpoint: str
    headers: dict[str, str]
    enabled: bool
    since: datetime
    failures: int
    next_attempt_at: datetime | None
    last_error: str | None
    last_sent_at: datetime | None
    sent: int
    rejected: int

    @classmethod
    def of(cls, r: OtlpExportRow) -> ExportSettings:
        return cls(
            tenant_id=r.tenant_id,
            endpoint=r.endpoint,
            headers=dict(r.headers),
            enabled=r.enabled,
            since=aware(r.since) or r.since,
            failures=r.failures,
            next_attempt_at=aware(r.next_attempt_at),
            last_error=r.last_error,
            last_sent_at=aware(r.last_sent_at),
            sent=r.sent,
            rejected=r.rejected,
        )


def _unsent(tenant_id: str, since: datetime) -> Any:
    """The tenant's outcome scores since ``since`` that carry no delivery mark."""
    return and_(
        SpanScoreRow.tenant_id == tenant_id,
        SpanScoreRow.status.in_(EXPORTED_STATUSES),
        SpanScoreRow.scored_at.is_not(None),
        SpanScoreRow.scored_at >= since,
        ~exists().where(ScoreExportRow.span_score_id == SpanScoreRow.id),
    )


class ExportStore(SqlSessions):
    """Per tenant: the export's settings, the unsent scores, the marks and the lease."""

    def put(self, tenant_id: str, endpoint: str, headers: dict[str, str], enabled: bool) -> None:
        """Set the tenant's export. A new export sends the scores made from now on; a
        changed one keeps its start, so unsent scores go to the new endpoint."""
        now = utcnow()
        with self._session() as s:
            row = s.get(OtlpExportRow, tenant_id)
            if row is None:
                s.add(
                    OtlpExportRow(
                        tenant_id=tenant_id,
                        endpoint=endpoint,
                        headers=headers,
                        enabled=enabled,
                        since=now,
                        failures=0,
                        sent=0,
                        rejected=0,
                        created_at=now,
                        updated_at=now,
                    )
                )
                return
            row.endpoint, row.headers, row.enabled = endpoint, headers, enabled
            row.failures, row.next_attempt_at, row.last_error = 0, None, None
            row.updated_at = now

    def get(self, tenant_id: str) -> ExportSettings:
        with self._session() as s:
            row = s.get(OtlpExportRow, tenant_id)
            if row is None:
                raise NotFoundError(NO_EXPORT)
            return ExportSettings.of(row)

    def delete(self, tenant_id: str) -> None:
        with self._session() as s:
            if not s.execute(
                delete(OtlpExportRow).where(OtlpExportRow.tenant_id == tenant_id)
            ).rowcount:  # type: ignore[attr-defined]
                raise NotFoundError(NO_EXPORT)

    def pending(self, tenant_id: str, since: datetime) -> int:
        """How many outcome scores wait to be sent."""
        with self._session() as s:
            return int(
                s.scalar(
                    select(func.count()).select_from(SpanScoreRow).where(_unsent(tenant_id, since))
                )
                or 0
            )

    def due(self, now: datetime) -> list[str]:
        """Tenants whose export is on and not waiting out a backoff."""
        with self._session() as s:
            return list(
                s.scalars(
                    select(OtlpExportRow.tenant_id).where(
                        OtlpExportRow.enabled.is_(True),
                        or_(
                            OtlpExportRow.next_attempt_at.is_(None),
                            OtlpExportRow.next_attempt_at <= now,
                        ),
                    )
                )
            )

    def claim(self, tenant_id: str, owner: str, seconds: float) -> bool:
        """Take (or keep) the tenant's lease: one sender at a time across API nodes."""
        now = utcnow()
        with self._session() as s:
            taken = s.execute(
                update(OtlpExportRow)
                .where(
                    OtlpExportRow.tenant_id == tenant_id,
                    or_(
                        OtlpExportRow.lease_owner.is_(None),
                        OtlpExportRow.lease_owner == owner,
                        OtlpExportRow.lease_until < now,
                    ),
                )
                .values(lease_owner=owner, lease_until=now + timedelta(seconds=seconds))
            )
            return bool(taken.rowcount)  # type: ignore[attr-defined]

    def release(self, tenant_id: str, owner: str) -> None:
        with self._session() as s:
            s.execute(
                update(OtlpExportRow)
                .where(OtlpExportRow.tenant_id == tenant_id, OtlpExportRow.lease_owner == owner)
                .values(lease_owner=None, lease_until=None)
            )

    def batch(self, tenant_id: str, since: datetime, limit: int) -> list[ExportedScore]:
        """The oldest unsent outcome scores, oldest first."""
        q = (
            select(SpanScoreRow, RuleRow.name)
            .join(RuleRow, RuleRow.id == SpanScoreRow.rule_id)
            .where(_unsent(tenant_id, since))
            .order_by(SpanScoreRow.scored_at, SpanScoreRow.id)
            .limit(limit)
        )
        with self._session() as s:
            return [
                ExportedScore(
                    score_id=r.id,
                    trace_id=r.trace_id,
                    span_id=r.span_id,
                    rule=name,
                    rule_version=r.rule_version,
                    check=r.check_name,
                    check_version=r.check_version,
                    status=r.status,
                    score=r.score,
                    passed=r.passed,
                    explanation=r.explanation,
                    scored_at=aware(r.scored_at) or utcnow(),
                )
                for r, name in s.execute(q).all()
            ]

    def delivered(
        self, tenant_id: str, score_ids: list[str], outcome: str, rejected: int, note: str | None
    ) -> None:
        """Mark scores sent (``sent``) or refused for good (``rejected``), in one transaction
        with the export's counters; ``rejected`` counts records the endpoint refused."""
        now = utcnow()
        with self._session() as s:
            s.add_all(
                ScoreExportRow(span_score_id=i, tenant_id=tenant_id, outcome=outcome, sent_at=now)
                for i in score_ids
            )
            row = s.get(OtlpExportRow, tenant_id)
            if row is None:  # deleted meanwhile: the marks go with the tenant's scores
                return
            row.sent += len(score_ids) - rejected
            row.rejected += rejected
            row.failures, row.next_attempt_at = 0, None
            row.last_sent_at = now
            if note is not None:
                row.last_error = note

    def failed(self, tenant_id: str, error: str, retry_after: float | None, cap: float) -> None:
        """A send that may succeed later: back off exponentially (or as the endpoint's
        ``Retry-After`` says), up to ``cap`` seconds."""
        now = utcnow()
        with self._session() as s:
            row = s.get(OtlpExportRow, tenant_id)
            if row is None:
                return
            row.failures += 1
            wait = retry_after if retry_after is not None else 2.0 ** min(row.failures, 16)
            row.next_attempt_at = now + timedelta(seconds=min(max(wait, 0.5), cap))
            row.last_error = error[:2000]


#: The export store on ``engine``, made once per engine.
export_store = once_per_engine(ExportStore)
