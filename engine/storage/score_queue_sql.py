"""The durable queue of online scoring in SQL: span scores waiting, claimed in batches,
submitted as runs, and their results written back.

One row per (rule version, pinned check, span) (unique): a span is never queued twice for
the same rule version and check version, live or in a backfill. A row moves
``pending`` -> ``queued`` (claimed under a batch token, then the durable run's id) ->
``scored`` or ``error``; or it is a typed skip (``no_content``, ``budget``, ``backlog``,
``cancelled``). Claiming is one conditional UPDATE, so several API processes never claim
the same row; a batch token is written before its run is submitted and carried as the
run's label, so a restart between the two finds the run or frees the rows, never both.
The scores as they are read back are ``engine.storage.score_sql``'s.
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.records import aware, utcnow
from engine.storage.rule_records import (
    BackfillStatus,
    Batch,
    RuleVersion,
    RunResult,
    ScoreStatus,
    SpanRef,
)
from engine.storage.rule_tables import RuleBackfillRow, RuleRunRow, SpanScoreRow
from engine.storage.score_plan import new_score_rows, plan_scores
from engine.storage.tables import TenantRow

__all__ = ["BATCH_LABEL", "PendingGroup", "ScoreQueue", "score_queue"]

#: The run label that carries a batch's token (found again after a restart).
BATCH_LABEL = "scorebox.online_batch"
TOKEN_PREFIX = "bat_"  # nosec B105: a batch token's prefix, not a secret
_IN_CHUNK = 400  # keys per IN (...) list


@dataclass(frozen=True)
class PendingGroup:
    """One rule version's pending scores: how many, and since when the oldest waits."""

    tenant_id: str
    rule_version_id: str
    oldest: datetime
    rows: int


def _token() -> str:
    return f"{TOKEN_PREFIX}{int(time.time()):x}_{secrets.token_hex(6)}"


def token_age_seconds(token: str) -> float:
    """Seconds since a batch token was made (its claim time is in it)."""
    try:
        return time.time() - int(token[len(TOKEN_PREFIX) :].split("_", 1)[0], 16)
    except ValueError:
        return float("inf")


def chunks(items: Sequence[Any], size: int = _IN_CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _update_each(s: Session, values: Sequence[dict[str, Any]]) -> None:
    """Update span scores by id, each with its own values, as one Core executemany per set
    of columns (the ORM's bulk update by primary key costs several times more a row)."""
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for v in values:
        by_columns[tuple(sorted(k for k in v if k != "id"))].append(v)
    table = cast(Table, SpanScoreRow.__table__)
    for columns, rows in by_columns.items():
        statement = (
            update(table)
            .where(table.c.id == bindparam("b_id"))
            .values({c: bindparam(f"b_{c}") for c in columns})
        )
        s.execute(statement, [{f"b_{k}": x for k, x in v.items()} for v in rows])


def _existing_scores(
    s: Session, tenant_id: str, version_id: str, keys: set[tuple[str, str]]
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """The scores of rule version ``version_id`` already stored for the (trace, span)
    ``keys``: (trace, span, check key) to (score id, status)."""
    existing: dict[tuple[str, str, str], tuple[str, str]] = {}
    # by trace ids on the (tenant, trace) index, the spans picked out here: SQLite
    # reads a (trace, span) IN list through the index's first column alone, which
    # here is every score of the rule version
    for chunk in chunks(sorted({t for t, _ in keys})):
        rows = s.execute(
            select(
                SpanScoreRow.id,
                SpanScoreRow.trace_id,
                SpanScoreRow.span_id,
                SpanScoreRow.check_key,
                SpanScoreRow.status,
            ).where(
                SpanScoreRow.tenant_id == tenant_id,
                SpanScoreRow.trace_id.in_(chunk),
                SpanScoreRow.rule_version_id == version_id,
            )
        )
        for row_id, trace_id, span_id, key, status in rows:
            if (trace_id, span_id) in keys:
                existing[(trace_id, span_id, key)] = (row_id, status)
    return existing


class ScoreQueue(SqlSessions):
    """The queue of span scores, its batches and runs, per tenant."""

    def _insert(self, table: Any) -> Any:
        return pg_insert(table) if self._dialect == "postgresql" else sqlite_insert(table)

    def enqueue(
        self,
        tenant_id: str,
        rule_id: str,
        version: RuleVersion,
        spans: Sequence[SpanRef],
        *,
        origin: str,
        backlog_full: bool = False,
        revive: Sequence[ScoreStatus] = (),
    ) -> dict[str, int]:
        """Queue ``spans`` for every pinned check of the rule version ``version``.

        A span already queued or scored for that version and check is left as it is
        (counted ``already``), unless its status is in ``revive``: then it is queued again.
        A span without content is recorded ``no_content``; with a full backlog, ``backlog``.
        Returns counts by what happened: ``queued``, ``already``, ``no_content``,
        ``backlog``.
        """
        counts: dict[str, int] = defaultdict(int)
        if not spans:
            return counts
        keys = {(s.trace_id, s.span_id) for s in spans}
        now = utcnow()
        with self._session() as s:
            existing = _existing_scores(s, tenant_id, version.id, keys)
            plan = plan_scores(spans, version, existing, backlog_full=backlog_full, revive=revive)
            if plan.new:
                rows = new_score_rows(plan.new, tenant_id, rule_id, version, origin, now)
                statement = self._insert(SpanScoreRow.__table__).on_conflict_do_nothing(
                    index_elements=["rule_version_id", "check_key", "trace_id", "span_id"]
                )
                s.execute(statement, rows)
            for chunk in chunks(plan.revived):
                s.execute(
                    update(SpanScoreRow)
                    .where(SpanScoreRow.id.in_(chunk))
                    .values(
                        status=ScoreStatus.PENDING.value,
                        origin=origin[:40],
                        run_id=None,
                        row_index=None,
                        created_at=now,
                    )
                )
        return plan.counts

    def backlog(self, tenant_id: str | None = None, rule_id: str | None = None) -> int:
        """Scores waiting: pending, or queued in a run whose results are not back yet."""
        q = select(func.count()).where(
            SpanScoreRow.status.in_([ScoreStatus.PENDING.value, ScoreStatus.QUEUED.value])
        )
        if tenant_id is not None:
            q = q.where(SpanScoreRow.tenant_id == tenant_id)
        if rule_id is not None:
            q = q.where(SpanScoreRow.rule_id == rule_id)
        with self._session() as s:
            return int(s.scalar(q) or 0)

    def has_work(self) -> bool:
        """Whether a pass of the online scorer has anything to do: a pending score, a run
        whose results are not on its spans yet, or a running backfill. One statement of
        three indexed probes: an idle server's pass costs this and nothing more."""
        pending = (
            select(SpanScoreRow.id)
            .where(
                SpanScoreRow.tenant_id.in_(select(TenantRow.id).scalar_subquery()),
                SpanScoreRow.status == ScoreStatus.PENDING.value,
            )
            .limit(1)
        )
        unlinked = select(RuleRunRow.run_id).where(RuleRunRow.linked_at.is_(None)).limit(1)
        running = (
            select(RuleBackfillRow.id)
            .where(RuleBackfillRow.status == BackfillStatus.RUNNING.value)
            .limit(1)
        )
        q = select(or_(exists(pending), exists(unlinked), exists(running)))
        with self._session() as s:
            return bool(s.scalar(q))

    # ---- batches --------------------------------------------------------------------

    def pending_groups(self, limit: int = 50) -> list[PendingGroup]:
        """Rule versions with pending scores, the longest waiting first."""
        oldest = func.min(SpanScoreRow.created_at)
        q = (
            select(SpanScoreRow.tenant_id, SpanScoreRow.rule_version_id, oldest, func.count())
            .where(
                # through the (tenant, status) index: the table holds every score ever made
                SpanScoreRow.tenant_id.in_(select(TenantRow.id).scalar_subquery()),
                SpanScoreRow.status == ScoreStatus.PENDING.value,
            )
            .group_by(SpanScoreRow.tenant_id, SpanScoreRow.rule_version_id)
            .order_by(oldest)
            .limit(limit)
        )
        with self._session() as s:
            return [
                PendingGroup(t, v, aware(since) or utcnow(), int(n))
                for t, v, since, n in s.execute(q)
            ]

    def claim(self, tenant_id: str, rule_version_id: str, max_spans: int) -> Batch | None:
        """Claim up to ``max_spans`` pending spans of a rule version (every pinned check of
        each) under a new batch token; None when another process took them first."""
        token = _token()
        with self._session() as s:
            rows = s.execute(
                select(SpanScoreRow.id, SpanScoreRow.trace_id, SpanScoreRow.span_id)
                .where(
                    SpanScoreRow.tenant_id == tenant_id,
                    SpanScoreRow.rule_version_id == rule_version_id,
                    SpanScoreRow.status == ScoreStatus.PENDING.value,
                )
                .order_by(SpanScoreRow.created_at, SpanScoreRow.id)
                .limit(max_spans * 20)
            ).all()
            order: dict[tuple[str, str], int] = {}
            ids: list[str] = []
            for row_id, trace_id, span_id in rows:
                key = (trace_id, span_id)
                if key not in order:
                    if len(order) >= max_spans:
                        continue
                    order[key] = len(order)
                ids.append(row_id)
            for chunk in chunks(ids):
                s.execute(
                    update(SpanScoreRow)
                    .where(
                        SpanScoreRow.id.in_(chunk),
                        SpanScoreRow.status == ScoreStatus.PENDING.value,
                    )
                    .values(status=ScoreStatus.QUEUED.value, run_id=token)
                    .execution_options(synchronize_session=False)
                )
            claimed = s.execute(
                select(
                    SpanScoreRow.id,
                    SpanScoreRow.trace_id,
                    SpanScoreRow.span_id,
                    SpanScoreRow.rule_id,
                ).where(SpanScoreRow.run_id == token)
            ).all()
            if not claimed:
                return None
            kept = sorted({(t, sp) for _, t, sp, _ in claimed}, key=lambda k: order[k])
            index = {key: n for n, key in enumerate(kept)}
            _update_each(
                s, [{"id": row_id, "row_index": index[(t, sp)]} for row_id, t, sp, _ in claimed]
            )
            rule_id = claimed[0][3]
        return Batch(
            token=token,
            tenant_id=tenant_id,
            rule_id=rule_id,
            rule_version_id=rule_version_id,
            spans=kept,
        )

    def attach_run(self, batch: Batch, run_id: str) -> None:
        """The batch's run is submitted: its rows name the run, the rule owns the run."""
        with self._session() as s:
            s.execute(
                update(SpanScoreRow)
                .where(SpanScoreRow.run_id == batch.token)
                .values(run_id=run_id)
                .execution_options(synchronize_session=False)
            )
            s.add(
                RuleRunRow(
                    run_id=run_id,
                    tenant_id=batch.tenant_id,
                    rule_id=batch.rule_id,
                    rule_version_id=batch.rule_version_id,
                    created_at=utcnow(),
                    linked_at=None,
                    tokens=0,
                )
            )

    def drop_spans(self, batch: Batch, keys: Sequence[tuple[str, str]], why: str) -> Batch:
        """Take spans out of a batch before its run is submitted (they are ``error`` with
        ``why``); the rest keep their order and are indexed again."""
        gone = set(keys)
        kept = [k for k in batch.spans if k not in gone]
        index = {k: n for n, k in enumerate(kept)}
        with self._session() as s:
            rows = s.execute(
                select(SpanScoreRow.id, SpanScoreRow.trace_id, SpanScoreRow.span_id).where(
                    SpanScoreRow.run_id == batch.token
                )
            ).all()
            values: list[dict[str, Any]] = []
            for row_id, trace_id, span_id in rows:
                if (trace_id, span_id) in gone:
                    values.append(
                        {
                            "id": row_id,
                            "status": ScoreStatus.ERROR.value,
                            "explanation": why,
                            "run_id": None,
                            "row_index": None,
                            "scored_at": utcnow(),
                        }
                    )
                else:
                    values.append({"id": row_id, "row_index": index[(trace_id, span_id)]})
            _update_each(s, values)
        return Batch(batch.token, batch.tenant_id, batch.rule_id, batch.rule_version_id, kept)

    def release(self, token: str) -> None:
        """The batch's run was not submitted: its rows wait for the next batch."""
        self._set_token(token, ScoreStatus.PENDING, None, clear=True)

    def skip_batch(self, token: str, status: ScoreStatus, explanation: str | None) -> None:
        """The batch is not scored: its rows get ``status`` (a typed skip or ``error``)."""
        self._set_token(token, status, explanation, clear=True)

    def _set_token(
        self, token: str, status: ScoreStatus, explanation: str | None, clear: bool
    ) -> None:
        values: dict[str, Any] = {"status": status.value, "explanation": explanation}
        if clear:
            values.update(run_id=None, row_index=None)
        with self._session() as s:
            s.execute(
                update(SpanScoreRow)
                .where(SpanScoreRow.run_id == token)
                .values(**values)
                .execution_options(synchronize_session=False)
            )

    def orphan_tokens(self, older_than_seconds: float) -> list[tuple[str, str, str, str]]:
        """Batch tokens claimed that long ago whose run was never recorded (a process died
        between claiming and recording): (token, tenant, rule, rule version)."""
        with self._session() as s:
            rows = s.execute(
                select(
                    SpanScoreRow.run_id,
                    SpanScoreRow.tenant_id,
                    SpanScoreRow.rule_id,
                    SpanScoreRow.rule_version_id,
                )
                .where(
                    SpanScoreRow.status == ScoreStatus.QUEUED.value,
                    SpanScoreRow.run_id.like(f"{TOKEN_PREFIX}%"),
                )
                .distinct()
            ).all()
        return [
            (str(t), ten, rule, ver)
            for t, ten, rule, ver in rows
            if token_age_seconds(str(t)) >= older_than_seconds
        ]

    def recover(
        self, token: str, tenant_id: str, rule_id: str, version_id: str, run_id: str
    ) -> None:
        """An orphan token whose run was found: record the run as :meth:`attach_run` would."""
        self.attach_run(Batch(token, tenant_id, rule_id, version_id, []), run_id)

    # ---- results ----------------------------------------------------------------------

    def unlinked_runs(self, limit: int = 100) -> list[tuple[str, str, str]]:
        """Runs of rules whose results are not on their spans yet: (run, tenant, rule
        version)."""
        with self._session() as s:
            rows = s.execute(
                select(RuleRunRow.run_id, RuleRunRow.tenant_id, RuleRunRow.rule_version_id)
                .where(RuleRunRow.linked_at.is_(None))
                .order_by(RuleRunRow.created_at)
                .limit(limit)
            ).all()
        return [(r, t, v) for r, t, v in rows]

    def link(
        self,
        run_id: str,
        results: Sequence[RunResult],
        *,
        tokens: int,
        final: bool,
        unscored: str | None = None,
    ) -> int:
        """Write a run's results onto its span scores; ``final`` when the run has ended:
        rows without a result become ``error`` with ``unscored`` as the explanation, and
        the run's tokens count against its rule. Returns the scores written."""
        now = utcnow()
        with self._session() as s:
            waiting = {
                (ri, ci): row_id
                for row_id, ri, ci in s.execute(
                    select(SpanScoreRow.id, SpanScoreRow.row_index, SpanScoreRow.check_index).where(
                        SpanScoreRow.run_id == run_id,
                        SpanScoreRow.status == ScoreStatus.QUEUED.value,
                    )
                )
            }
            values = []
            for r in results:
                row_id = waiting.pop((r.row_index, r.check_index), None)
                if row_id is None:
                    continue
                values.append(
                    {
                        "id": row_id,
                        "status": r.status,
                        "score": r.score,
                        "passed": r.passed,
                        "explanation": None if r.explanation is None else r.explanation[:4096],
                        "scored_at": now,
                    }
                )
            _update_each(s, values)
            if final:
                for chunk in chunks(list(waiting.values())):
                    s.execute(
                        update(SpanScoreRow)
                        .where(SpanScoreRow.id.in_(chunk))
                        .values(
                            status=ScoreStatus.ERROR.value,
                            explanation=unscored or "the run ended without this result",
                            scored_at=now,
                        )
                        .execution_options(synchronize_session=False)
                    )
                s.execute(
                    update(RuleRunRow)
                    .where(RuleRunRow.run_id == run_id)
                    .values(linked_at=now, tokens=tokens)
                )
        return len(values)

    def rule_tokens(self, rule_id: str, since: datetime) -> tuple[int, list[str]]:
        """Tokens the rule's finished runs spent since ``since``, and its runs still open
        (their usage is read from the runs themselves)."""
        with self._session() as s:
            rows = s.execute(
                select(RuleRunRow.run_id, RuleRunRow.tokens, RuleRunRow.linked_at).where(
                    RuleRunRow.rule_id == rule_id, RuleRunRow.created_at >= since
                )
            ).all()
        spent = sum(int(t) for _, t, linked in rows if linked is not None)
        return spent, [r for r, _, linked in rows if linked is None]


#: The score queue on ``engine``, made once per engine.
score_queue = once_per_engine(ScoreQueue)
