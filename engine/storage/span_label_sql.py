"""What labels on spans read of online scoring: which spans a tenant holds, a check's
span scores on labelled spans, and a rule's measured pass rate per pinned check.

Read-only queries over ``spans`` and ``span_scores``, each filtered on the tenant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import case, func, select, tuple_

from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.rule_records import ScoreStatus
from engine.storage.rule_tables import RuleRow, SpanScoreRow
from engine.storage.tables import SpanRow

_IN_CHUNK = 400  # keys per IN (...) list

SpanKey = tuple[str, str]


@dataclass(frozen=True)
class SpanOutcome:
    """A check's latest outcome on one span: ``status`` as scoring wrote it."""

    status: str
    score: float | None
    passed: bool | None
    rule: str


@dataclass(frozen=True)
class RulePassRate:
    """One pinned check's scored spans under a rule, and how many of them passed."""

    check: str
    version: int | None
    scored: int
    passed: int


def _chunks(keys: Iterable[SpanKey]) -> Iterable[list[SpanKey]]:
    wanted = sorted(set(keys))
    for start in range(0, len(wanted), _IN_CHUNK):
        yield wanted[start : start + _IN_CHUNK]


class SpanLabelQueries(SqlSessions):
    """The span side of labels and agreement, each call for one tenant."""

    def existing(self, tenant_id: str, keys: Sequence[SpanKey]) -> set[SpanKey]:
        """Which of ``keys`` (trace id, span id) the tenant has stored."""
        found: set[SpanKey] = set()
        with self._session() as s:
            for chunk in _chunks(keys):
                rows = s.execute(
                    select(SpanRow.trace_id, SpanRow.span_id).where(
                        SpanRow.tenant_id == tenant_id,
                        tuple_(SpanRow.trace_id, SpanRow.span_id).in_(chunk),
                    )
                )
                found.update((t, sp) for t, sp in rows)
        return found

    def outcomes(
        self,
        tenant_id: str,
        keys: Sequence[SpanKey],
        check: str,
        version: int | None,
        rule_id: str | None = None,
    ) -> dict[SpanKey, SpanOutcome]:
        """The check's (``version``: any when None) latest finished outcome on each of
        ``keys`` it scored (``scored`` or ``error``), under any rule or under ``rule_id``."""
        done = (ScoreStatus.SCORED.value, ScoreStatus.ERROR.value)
        found: dict[SpanKey, tuple[float, SpanOutcome]] = {}
        with self._session() as s:
            for chunk in _chunks(keys):
                query = (
                    select(SpanScoreRow, RuleRow.name)
                    .join(RuleRow, RuleRow.id == SpanScoreRow.rule_id)
                    .where(
                        SpanScoreRow.tenant_id == tenant_id,
                        SpanScoreRow.check_name == check,
                        SpanScoreRow.status.in_(done),
                        tuple_(SpanScoreRow.trace_id, SpanScoreRow.span_id).in_(chunk),
                    )
                )
                if version is not None:
                    query = query.where(SpanScoreRow.check_version == version)
                if rule_id is not None:
                    query = query.where(SpanScoreRow.rule_id == rule_id)
                for row, rule_name in s.execute(query):
                    key = (row.trace_id, row.span_id)
                    at = row.scored_at.timestamp() if row.scored_at is not None else 0.0
                    if key not in found or at >= found[key][0]:
                        outcome = SpanOutcome(row.status, row.score, row.passed, rule_name)
                        found[key] = (at, outcome)
        return {key: outcome for key, (_, outcome) in found.items()}

    def rule_outcomes(
        self, tenant_id: str, rule_id: str, check: str, version: int | None, limit: int
    ) -> dict[SpanKey, SpanOutcome]:
        """The check's latest finished outcome on each span the rule scored with it, the
        ``limit`` spans scored last (what the annotation queue draws from)."""
        done = (ScoreStatus.SCORED.value, ScoreStatus.ERROR.value)
        query = (
            select(SpanScoreRow, RuleRow.name)
            .join(RuleRow, RuleRow.id == SpanScoreRow.rule_id)
            .where(
                SpanScoreRow.tenant_id == tenant_id,
                SpanScoreRow.rule_id == rule_id,
                SpanScoreRow.check_name == check,
                SpanScoreRow.status.in_(done),
            )
            .order_by(SpanScoreRow.scored_at.desc(), SpanScoreRow.id)
            .limit(limit)
        )
        if version is not None:
            query = query.where(SpanScoreRow.check_version == version)
        found: dict[SpanKey, SpanOutcome] = {}
        with self._session() as s:
            for row, rule_name in s.execute(query):
                found.setdefault(
                    (row.trace_id, row.span_id),
                    SpanOutcome(row.status, row.score, row.passed, rule_name),
                )
        return found

    def rule_pass_rates(self, tenant_id: str, rule_id: str) -> list[RulePassRate]:
        """Per check version the rule scored: its scored spans and how many passed (the
        spans with no pass flag are left out: a check with none has no pass rate)."""
        with self._session() as s:
            rows = s.execute(
                select(
                    SpanScoreRow.check_name,
                    SpanScoreRow.check_version,
                    func.count(),
                    func.sum(case((SpanScoreRow.passed.is_(True), 1), else_=0)),
                )
                .where(
                    SpanScoreRow.tenant_id == tenant_id,
                    SpanScoreRow.rule_id == rule_id,
                    SpanScoreRow.status == ScoreStatus.SCORED.value,
                    SpanScoreRow.passed.is_not(None),
                )
                .group_by(SpanScoreRow.check_name, SpanScoreRow.check_version)
                .order_by(SpanScoreRow.check_name, SpanScoreRow.check_version)
            ).all()
        return [RulePassRate(c, v, int(n), int(p or 0)) for c, v, n, p in rows]


#: The queries on ``engine``, made once per engine.
span_label_queries = once_per_engine(SpanLabelQueries)
