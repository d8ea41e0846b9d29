"""Span scores in SQL: the durable queue of online scoring and the scores written back.

One row per (rule version, pinned check, span) (unique): a span is never queued twice for
the same rule version and check version, live or in a backfill. A row moves
``pending`` -> ``queued`` (claimed under a batch token, then the durable run's id) ->
``scored`` or ``error``; or it is a typed skip (``no_content``, ``budget``, ``backlog``,
``cancelled``). Claiming is one conditional UPDATE, so several API processes never claim
the same row; a batch token is written before its run is submitted and carried as the
run's label, so a restart between the two finds the run or frees the rows, never both.
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from engine.storage.database import SqlSessions, once_per_engine
from engine.storage.records import aware, new_id, utcnow
from engine.storage.rule_records import (
    Batch,
    RuleVersion,
    RunResult,
    ScoreStatus,
    SpanRef,
    SpanScore,
    check_key,
)
from engine.storage.rule_tables import RuleRow, RuleRunRow, SpanScoreRow
from engine.storage.tables import TenantRow

__all__ = ["BATCH_LABEL", "PendingGroup", "ScoreStore", "score_store"]

#: The run label that carries a batch's token (found again after a restart).
BATCH_LABEL = "scorebox.online_batch"
_TOKEN_PREFIX = "bat_"  # nosec B105: a batch token's prefix, not a secret
_IN_CHUNK = 400  # keys per IN (...) list


@dataclass(frozen=True)
class PendingGroup:
    """One rule version's pending scores: how many, and since when the oldest waits."""

    tenant_id: str
    rule_version_id: str
    oldest: datetime
    rows: int


def _token() -> str:
    return f"{_TOKEN_PREFIX}{int(time.time()):x}_{secrets.token_hex(6)}"


def token_age_seconds(token: str) -> float:
    """Seconds since a batch token was made (its claim time is in it)."""
    try:
        return time.time() - int(token[len(_TOKEN_PREFIX) :].split("_", 1)[0], 16)
    except ValueError:
        return float("inf")


def _chunks(items: Sequence[Any], size: int = _IN_CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ScoreStore(SqlSessions):
    """The queue of span scores and their outcomes, per tenant."""

    def _insert(self, table: Any) -> Any:
        return pg_insert(table) if self._dialect == "postgresql" else sqlite_insert(table)

    # ---- queueing -----------------------------------------------------------------

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
        keys = sorted({(s.trace_id, s.span_id) for s in spans})
        now = utcnow()
        with self._session() as s:
            existing: dict[tuple[str, str, str], tuple[str, str]] = {}
            for chunk in _chunks(keys):
                rows = s.execute(
                    select(
                        SpanScoreRow.id,
                        SpanScoreRow.trace_id,
                        SpanScoreRow.span_id,
                        SpanScoreRow.check_key,
                        SpanScoreRow.status,
                    ).where(
                        SpanScoreRow.rule_version_id == version.id,
                        tuple_(SpanScoreRow.trace_id, SpanScoreRow.span_id).in_(chunk),
                    )
                )
                for row_id, trace_id, span_id, key, status in rows:
                    existing[(trace_id, span_id, key)] = (row_id, status)
            values: list[dict[str, Any]] = []
            revived: list[str] = []
            seen: set[tuple[str, str, str]] = set()
            for span in spans:
                if span.no_content:
                    status = ScoreStatus.NO_CONTENT
                elif backlog_full:
                    status = ScoreStatus.BACKLOG
                else:
                    status = ScoreStatus.PENDING
                for index, check in enumerate(version.checks):
                    key = check_key(check)
                    ident = (span.trace_id, span.span_id, key)
                    if ident in seen:
                        continue
                    seen.add(ident)
                    found = existing.get(ident)
                    if found is not None:
                        row_id, old = found
                        wakes = old in revive or (
                            old == ScoreStatus.NO_CONTENT and not span.no_content
                        )
                        if wakes and status is ScoreStatus.PENDING:
                            revived.append(row_id)
                            counts["queued"] += 1
                        else:
                            counts["already"] += 1
                        continue
                    counts[status.value if status is not ScoreStatus.PENDING else "queued"] += 1
                    values.append(
                        {
                            "id": new_id("score"),
                            "tenant_id": tenant_id,
                            "rule_id": rule_id,
                            "rule_version_id": version.id,
                            "rule_version": version.version,
                            "trace_id": span.trace_id,
                            "span_id": span.span_id,
                            "span_start_unix_nano": span.start_unix_nano,
                            "check_index": index,
                            "check_name": str(check.get("name", ""))[:200],
                            "check_version": check.get("version"),
                            "check_key": key,
                            "status": status.value,
                            "origin": origin[:40],
                            "created_at": now,
                        }
                    )
            if values:
                statement = self._insert(SpanScoreRow.__table__).on_conflict_do_nothing(
                    index_elements=["rule_version_id", "check_key", "trace_id", "span_id"]
                )
                s.execute(statement, values)
            for chunk in _chunks(revived):
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
        return counts

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

    def counts(self, tenant_id: str, rule_id: str | None = None) -> dict[str, int]:
        """How many scores the tenant (or one rule) has in each status."""
        q = select(SpanScoreRow.status, func.count()).where(SpanScoreRow.tenant_id == tenant_id)
        if rule_id is not None:
            q = q.where(SpanScoreRow.rule_id == rule_id)
        with self._session() as s:
            return {status: int(n) for status, n in s.execute(q.group_by(SpanScoreRow.status))}

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
            for chunk in _chunks(ids):
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
                    SpanScoreRow.check_index,
                ).where(SpanScoreRow.run_id == token)
            ).all()
            if not claimed:
                return None
            kept = sorted({(t, sp) for _, t, sp, _, _ in claimed}, key=lambda k: order[k])
            index = {key: n for n, key in enumerate(kept)}
            s.execute(
                update(SpanScoreRow),
                [{"id": row_id, "row_index": index[(t, sp)]} for row_id, t, sp, _, _ in claimed],
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
            if values:
                s.execute(update(SpanScoreRow), values)
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
                    SpanScoreRow.run_id.like(f"{_TOKEN_PREFIX}%"),
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
            if values:
                s.execute(update(SpanScoreRow), values)
            if final:
                if waiting:
                    s.execute(
                        update(SpanScoreRow),
                        [
                            {
                                "id": row_id,
                                "status": ScoreStatus.ERROR.value,
                                "explanation": unscored or "the run ended without this result",
                                "scored_at": now,
                            }
                            for row_id in waiting.values()
                        ],
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

    # ---- reading back -------------------------------------------------------------

    def scores_of(
        self, tenant_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[SpanScore]]:
        """The scores of the spans ``keys`` (trace id, span id), by rule, version, check."""
        found: dict[tuple[str, str], list[SpanScore]] = defaultdict(list)
        wanted = set(keys)
        traces = sorted({t for t, _ in wanted})
        with self._session() as s:
            for chunk in _chunks(traces):
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
        run_id=None if row.run_id and row.run_id.startswith(_TOKEN_PREFIX) else row.run_id,
    )


#: The score store on ``engine``, made once per engine.
score_store = once_per_engine(ScoreStore)
