"""Span retention: spans received over OTLP, and their content log records, pruned past
their age (``SCOREBOX_SPAN_RETENTION_DAYS``; ``scorebox db prune --spans-older-than``,
and the service itself every ``SCOREBOX_SPAN_PRUNE_INTERVAL_SECONDS``).

A span's age is counted from its start time. Scores are kept: ``span_scores`` has no
foreign key to ``spans``, so a rule's series and a span's scores outlive the span.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, and_, delete, exists, func, or_, select
from sqlalchemy.exc import SQLAlchemyError

from engine.errors import InvalidRequestError
from engine.storage.database import database_error
from engine.storage.tables import SpanLogRow, SpanRow, TenantRow

#: spans deleted per transaction, so a big prune holds no long lock
BATCH = 1000


@dataclass(frozen=True)
class SpanPruneReport:
    """What a span prune removed, or with ``dry_run`` would remove."""

    before: datetime
    spans: int
    logs: int
    dry_run: bool

    def describe(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        return (
            f"{verb} {self.spans:,} spans and {self.logs:,} content log records "
            f"that started before {self.before.isoformat(timespec='seconds')} (scores kept)"
        )


def _tenants(engine: Engine, tenant: str | None) -> list[str]:
    with engine.begin() as conn:
        if tenant is None:
            return list(conn.scalars(select(TenantRow.id)))
        named = or_(TenantRow.id == tenant, TenantRow.name == tenant)
        found = conn.scalar(select(TenantRow.id).where(named))
    if found is None:
        raise InvalidRequestError(f"no tenant {tenant!r}: see `scorebox tenant list`")
    return [found]


def _prune_tenant(engine: Engine, tenant_id: str, cutoff: int, dry_run: bool) -> tuple[int, int]:
    spans = logs = 0
    old = and_(SpanRow.tenant_id == tenant_id, SpanRow.start_unix_nano < cutoff)
    if dry_run:
        with engine.begin() as conn:
            spans = int(conn.scalar(select(func.count()).where(old)) or 0)
            of_old_span = exists().where(
                old,
                SpanRow.trace_id == SpanLogRow.trace_id,
                SpanRow.span_id == SpanLogRow.span_id,
            )
            logs = int(
                conn.scalar(
                    select(func.count()).where(SpanLogRow.tenant_id == tenant_id, of_old_span)
                )
                or 0
            )
        return spans, logs
    while True:
        with engine.begin() as conn:
            batch = conn.execute(
                select(SpanRow.id, SpanRow.trace_id, SpanRow.span_id).where(old).limit(BATCH)
            ).all()
            if not batch:
                return spans, logs
            pairs = [(r.trace_id, r.span_id) for r in batch]
            traces = sorted({t for t, _ in pairs})
            # the content records of exactly these spans (a trace's younger spans keep theirs)
            for trace_id in traces:
                ids = [s for t, s in pairs if t == trace_id]
                logs += conn.execute(
                    delete(SpanLogRow).where(
                        SpanLogRow.tenant_id == tenant_id,
                        SpanLogRow.trace_id == trace_id,
                        SpanLogRow.span_id.in_(ids),
                    )
                ).rowcount
            spans += conn.execute(
                delete(SpanRow).where(SpanRow.id.in_([r.id for r in batch]))
            ).rowcount


def prune_spans(
    engine: Engine, before: datetime, *, tenant: str | None = None, dry_run: bool = False
) -> SpanPruneReport:
    """Delete spans that started before ``before`` (of one tenant, by name or id), with
    their content log records; scores stay."""
    cutoff = int(before.timestamp() * 1e9)
    spans = logs = 0
    try:
        for tenant_id in _tenants(engine, tenant):
            s, g = _prune_tenant(engine, tenant_id, cutoff, dry_run)
            spans, logs = spans + s, logs + g
    except SQLAlchemyError as exc:
        raise database_error(exc) from exc
    return SpanPruneReport(before, spans, logs, dry_run)
