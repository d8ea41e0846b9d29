"""Span scores in SQL as they are read back: a span's scores, a rule's counts and its
series. The queue that makes them (enqueue, batches, runs, results written back) is
``engine.storage.score_queue_sql``'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import func, select

from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.rule_records import ScoreStatus, SpanScore
from engine.storage.rule_tables import RuleRow, SpanScoreRow
from engine.storage.score_queue_sql import TOKEN_PREFIX, chunks

__all__ = ["ScoreStore", "score_store"]


class ScoreStore(SqlSessions):
    """A tenant's span scores, read back."""

    def counts(self, tenant_id: str, rule_id: str | None = None) -> dict[str, int]:
        """How many scores the tenant (or one rule) has in each status."""
        q = select(SpanScoreRow.status, func.count()).where(SpanScoreRow.tenant_id == tenant_id)
        if rule_id is not None:
            q = q.where(SpanScoreRow.rule_id == rule_id)
        with self._session() as s:
            return {status: int(n) for status, n in s.execute(q.group_by(SpanScoreRow.status))}

    # ---- reading back -------------------------------------------------------------

    def scores_of(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[SpanScore]]:
        """The scores of the spans ``keys`` (trace id, span id), by rule, version, check."""
        found: dict[tuple[str, str], list[SpanScore]] = defaultdict(list)
        wanted = set(keys)
        traces = sorted({t for t, _ in wanted})
        with self._session() as s:
            for chunk in chunks(traces):
                rows = s.execute(
                    select(SpanScoreRow, RuleRow.name)
                    .join(RuleRow, RuleRow.id == SpanScoreRow.rule_id)
                    .where(SpanScoreRow.tenant_id == tenant_id, SpanScoreRow.trace_id.in_(chunk))
                    .order_by(RuleRow.name, SpanScoreRow.rule_version, SpanScoreRow.check_index)
                )
                for row, rule_name in rows:
                    key = (row.trace_id, row.span_id)
                    if key in wanted:
                        found[key].append(_score(row, rule_name))
        return found

    def series_points(
        self, tenant_id: str, rule_id: str, since: int, until: int, limit: int
    ) -> list[tuple[str, int | None, int, float | None, bool | None]]:
        """Scored results of a rule in a window of span start times:
        (check, check version, start, score, passed), at most ``limit``."""
        with self._session() as s:
            rows = s.execute(
                select(
                    SpanScoreRow.check_name,
                    SpanScoreRow.check_version,
                    SpanScoreRow.span_start_unix_nano,
                    SpanScoreRow.score,
                    SpanScoreRow.passed,
                )
                .where(
                    SpanScoreRow.tenant_id == tenant_id,
                    SpanScoreRow.rule_id == rule_id,
                    SpanScoreRow.status == ScoreStatus.SCORED.value,
                    SpanScoreRow.span_start_unix_nano >= since,
                    SpanScoreRow.span_start_unix_nano < until,
                )
                .limit(limit)
            ).all()
        return [(c, v, int(t), sc, p) for c, v, t, sc, p in rows]


def _score(row: SpanScoreRow, rule_name: str) -> SpanScore:
    return SpanScore(
        trace_id=row.trace_id,
        span_id=row.span_id,
        rule=rule_name,
        rule_version=row.rule_version,
        check=row.check_name,
        check_version=row.check_version,
        status=row.status,
        score=row.score,
        passed=row.passed,
        explanation=row.explanation,
        run_id=None if row.run_id and row.run_id.startswith(TOKEN_PREFIX) else row.run_id,
    )


#: The score store on ``engine``, made once per engine.
score_store = once_per_engine(ScoreStore)
