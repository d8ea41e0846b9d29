"""What a rule's Live page reads beside its series: the latest failing and erring scores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, or_, select
from sqlalchemy.exc import SQLAlchemyError

from engine.storage.database import database_error
from engine.storage.records import aware
from engine.storage.rule_records import ScoreStatus
from engine.storage.rule_tables import SpanScoreRow

__all__ = ["Failure", "recent_failures"]


@dataclass(frozen=True)
class Failure:
    """A score that failed (``passed`` false) or erred, and the span it belongs to."""

    trace_id: str
    span_id: str
    check: str
    check_version: int | None
    rule_version: int
    status: str
    score: float | None
    explanation: str | None
    scored_at: datetime | None


def recent_failures(engine: Engine, tenant_id: str, rule_id: str, limit: int = 20) -> list[Failure]:
    """The rule's latest scores that failed or erred, newest first."""
    q = (
        select(SpanScoreRow)
        .where(
            SpanScoreRow.tenant_id == tenant_id,
            SpanScoreRow.rule_id == rule_id,
            or_(
                (SpanScoreRow.status == ScoreStatus.SCORED.value) & SpanScoreRow.passed.is_(False),
                SpanScoreRow.status == ScoreStatus.ERROR.value,
            ),
        )
        .order_by(SpanScoreRow.scored_at.desc(), SpanScoreRow.id.desc())
        .limit(limit)
    )
    try:
        with engine.connect() as conn:
            rows = conn.execute(q).all()
    except SQLAlchemyError as exc:
        raise database_error(exc) from exc
    return [
        Failure(
            trace_id=r.trace_id,
            span_id=r.span_id,
            check=r.check_name,
            check_version=r.check_version,
            rule_version=r.rule_version,
            status=r.status,
            score=r.score,
            explanation=r.explanation,
            scored_at=aware(r.scored_at),
        )
        for r in rows
    ]
