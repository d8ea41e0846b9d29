"""Runs, their input rows and their results in SQL: :class:`~engine.storage.protocols.RunStore`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from engine.errors import NotFoundError
from engine.models import ResultColumns, RowResult
from engine.storage import result_stats
from engine.storage.database import SqlSessions, one_or_404
from engine.storage.records import (
    Run,
    RunCheck,
    RunStatus,
    ScoreStats,
    StoredResult,
    aware,
    utcnow,
)
from engine.storage.result_ranges import block_ranges, rows_with_results
from engine.storage.result_reads import check_page, check_results, run_page
from engine.storage.run_blocks import (
    insert_row_blocks,
    read_row_columns,
    read_rows_at,
    stored_row_ranges,
)
from engine.storage.run_writes import ResultValues, insert_results
from engine.storage.tables import ResultBlockRow, RunRow, RunRowBlock, TenantRow

#: Rows per statement when storing a run's rows (SQLite; see ``run_writes``).
BULK_CHUNK = 2000


def _run(row: RunRow) -> Run:
    return Run(
        id=row.id,
        tenant_id=row.tenant_id,
        status=RunStatus(row.status),
        checks=[RunCheck.from_json(c) for c in row.checks],
        limits=row.limits,
        labels=dict(row.labels or {}),
        row_count=row.row_count,
        error=row.error,
        created_at=aware(row.created_at) or utcnow(),
        started_at=aware(row.started_at),
        finished_at=aware(row.finished_at),
        llm_usage=dict(row.llm_usage) if row.llm_usage else None,
        results_done=int(row.results_done or 0),
        summary=dict(row.summary) if row.summary else None,
    )


class SqlRuns(SqlSessions):
    """:class:`~engine.storage.protocols.RunStore` on a SQLAlchemy engine."""

    # ---- runs -------------------------------------------------------------------------

    def create_run(
        self,
        run: Run,
        rows: Iterable[Mapping[str, Any]],
        author_key_id: str | None,
        admit: Callable[[int], None] | None = None,
    ) -> Run:
        """Store a run and its rows in one transaction.

        ``admit`` gets the tenant's other active runs, counted in the same
        transaction, and raises to refuse the run (the ``queued_runs`` quota):
        the tenant's row is locked first, so simultaneous submissions on any
        number of API nodes are counted one after the other.
        """
        with self._session() as s:
            if admit is not None:
                # PostgreSQL: FOR NO KEY UPDATE serialises the tenant's submissions and,
                # unlike FOR UPDATE, not the foreign-key checks of its other writes (a check
                # or key saved while a big run's rows are stored); SQLite has one writer at
                # a time, and the flush below takes its write lock first
                s.execute(
                    select(TenantRow.id)
                    .where(TenantRow.id == run.tenant_id)
                    .with_for_update(key_share=True)
                )
            s.add(
                RunRow(
                    id=run.id,
                    tenant_id=run.tenant_id,
                    status=run.status.value,
                    checks=[c.to_json() for c in run.checks],
                    limits=run.limits,
                    labels=run.labels,
                    row_count=run.row_count,
                    error=run.error,
                    author_key_id=author_key_id,
                    created_at=run.created_at,
                )
            )
            s.flush()
            if admit is not None:
                admit(
                    s.scalar(
                        select(func.count())
                        .select_from(RunRow)
                        .where(
                            RunRow.tenant_id == run.tenant_id,
                            RunRow.id != run.id,
                            RunRow.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
                        )
                    )
                    or 0
                )
            # a block of rows a database row, encoded once: no SQLAlchemy work per row
            insert_row_blocks(s.connection(), run.id, rows)
        return run

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        query = select(RunRow).where(RunRow.id == run_id, RunRow.tenant_id == tenant_id)
        with self._session() as s:
            return _run(one_or_404(s, query, f"no run {run_id!r}"))

    def list_runs(
        self,
        tenant_id: str,
        limit: int = 50,
        offset: int = 0,
        status: str | None = None,
        label: tuple[str, str] | None = None,
    ) -> list[Run]:
        """Newest first; ``status`` and ``label`` (key, value) filter before ``offset``."""
        query = select(RunRow).where(RunRow.tenant_id == tenant_id)
        if status is not None:
            query = query.where(RunRow.status == status)
        query = query.order_by(RunRow.created_at.desc(), RunRow.id.desc())
        with self._session() as s:
            if label is None:
                return [_run(r) for r in s.scalars(query.offset(offset).limit(limit))]
            # labels are JSON: matched here, portable across SQLite and PostgreSQL
            key, value = label
            found: list[Run] = []
            skipped = 0
            for row in s.scalars(query.execution_options(yield_per=500)):
                labels = row.labels or {}
                if key not in labels or str(labels[key]) != value:
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                found.append(_run(row))
                if len(found) == limit:
                    break
            return found

    def count_active_runs(self, tenant_id: str) -> int:
        with self._session() as s:
            value = s.scalar(
                select(func.count())
                .select_from(RunRow)
                .where(
                    RunRow.tenant_id == tenant_id,
                    RunRow.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
                )
            )
            return int(value or 0)

    def active_runs(self) -> list[Run]:
        with self._session() as s:
            rows = s.scalars(
                select(RunRow)
                .where(RunRow.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]))
                .order_by(RunRow.created_at)
            )
            return [_run(r) for r in rows]

    def set_run_status(self, run_id: str, status: RunStatus, error: str | None = None) -> Run:
        """Move an active run to ``status``; a finished run stays as it is.

        One conditional UPDATE, not a read then a write: a chunk's "running" that races
        with a cancel cannot undo the cancel (a read-then-write lost that update).
        """
        now = utcnow()
        values: dict[str, Any] = {"status": status.value}
        if not status.active:
            values["finished_at"] = now
        if error is not None:
            values["error"] = error
        may_move = [*(each.value for each in RunStatus if each.active), status.value]
        with self._session() as s:
            moved = s.execute(
                update(RunRow)
                .where(RunRow.id == run_id, RunRow.status.in_(may_move))
                .values(**values)
            ).rowcount  # type: ignore[attr-defined]
            if moved and status is RunStatus.RUNNING:
                s.execute(
                    update(RunRow)
                    .where(RunRow.id == run_id, RunRow.started_at.is_(None))
                    .values(started_at=now)
                )
            query = select(RunRow).where(RunRow.id == run_id)
            return _run(one_or_404(s, query, f"no run {run_id!r}"))

    def add_run_usage(self, run_id: str, usage: Mapping[str, int]) -> None:
        """Add LLM usage counts to a run's totals (callers serialise per run)."""
        with self._session() as s:
            row = s.get(RunRow, run_id, with_for_update=True)
            if row is None:
                raise NotFoundError(f"no run {run_id!r}")
            totals = dict(row.llm_usage or {})
            for key, value in usage.items():
                totals[key] = int(totals.get(key, 0)) + int(value)
            row.llm_usage = totals

    def load_rows(self, run_id: str, indices: Sequence[int]) -> dict[int, dict[str, Any]]:
        if not indices:
            return {}
        with self._session() as s:
            return read_rows_at(s.connection(), run_id, indices)

    def pending_row_columns(
        self, run_id: str, check_index: int, start: int, stop: int
    ) -> tuple[list[int], dict[str, list[Any]] | None]:
        """The rows in ``[start, stop)`` without a result for the check (as
        :meth:`result_rows` finds them) and, when they are consecutive, their columns
        (``read_row_columns``; None otherwise), read in one transaction."""
        with self._session() as s:
            conn = s.connection()
            done = rows_with_results(conn, run_id, check_index, start, stop)
            if len(done):
                held = set(done.tolist())
                pending = [i for i in range(start, stop) if i not in held]
            else:
                pending = list(range(start, stop))
            if not pending or pending[-1] - pending[0] + 1 != len(pending):
                return pending, None
            return pending, read_row_columns(conn, run_id, pending[0], pending[-1] + 1)

    def missing_rows(self, run_id: str, check_index: int) -> list[int]:
        with self._session() as s:
            conn = s.connection()
            stored = stored_row_ranges(conn, run_id)
            rows = stored[-1][1] if stored else 0
            whole = sum(stop - start for start, stop in stored) == rows  # 0 to rows - 1
            blocks = block_ranges(conn, run_id, check_index)
            # asked when a run's chunks have all run, when mostly none is missing: the
            # blocks' ranges and counts say so without reading a block
            if (
                whole
                and all(a >= 0 and b <= rows and n == b - a for a, b, n in blocks)
                and sum(n for _, _, n in blocks) >= rows
            ):
                return []
            done = rows_with_results(conn, run_id, check_index, 0, rows, blocks)
            given = np.concatenate(
                [np.arange(start, stop, dtype=np.int64) for start, stop in stored]
                or [np.empty(0, dtype=np.int64)]
            )
            return [int(i) for i in given[~np.isin(given, done, assume_unique=True)]]

    def result_rows(self, run_id: str, check_index: int, start: int, stop: int) -> list[int]:
        """Row indices in ``[start, stop)`` that already have a result for the check."""
        with self._session() as s:
            found = rows_with_results(s.connection(), run_id, check_index, start, stop)
            return [int(i) for i in found]

    def save_results(self, run_id: str, results: Sequence[tuple[int, int, RowResult]]) -> int:
        """Insert results, ignoring any (run, check, row) already stored; returns rows inserted."""
        values = ResultValues(run_id)
        for check_index, row_index, r in results:
            values.add(
                check_index,
                row_index,
                r.status.value,
                r.score,
                r.duration_ms,
                {
                    "explanation": r.explanation,
                    "error": r.error,
                    "output": r.output,
                    "passed": r.passed,
                    "metadata": r.metadata,
                    "model": r.model,
                },
            )
        return self._insert_results(run_id, values)

    def save_result_columns(self, run_id: str, columns: Sequence[tuple[int, ResultColumns]]) -> int:
        """:meth:`save_results` for results as columns ((check index, columns) each): the
        block path, with no RowResult per row; returns rows inserted."""
        values = ResultValues(run_id)
        for check_index, block in columns:
            values.add_columns(
                check_index,
                block.row_index,
                block.status,
                block.score,
                block.duration_ms,
                block.extras,
            )
        return self._insert_results(run_id, values)

    def _insert_results(self, run_id: str, values: ResultValues) -> int:
        if not values:
            return 0
        with self._session() as s:
            return insert_results(s.connection(), values)

    @staticmethod
    def _count(s: Session, run_id: str) -> int:
        value = s.scalar(
            select(func.coalesce(func.sum(ResultBlockRow.rows), 0)).where(
                ResultBlockRow.run_id == run_id
            )
        )
        return int(value or 0)

    def count_results(self, run_id: str) -> int:
        with self._session() as s:
            return self._count(s, run_id)

    def results_page(
        self, run_id: str, offset: int, limit: int, check_index: int | None = None
    ) -> list[StoredResult]:
        """Results ordered by (row index, check index), ``limit`` of them from ``offset``."""
        with self._session() as s:
            conn = s.connection()
            if check_index is not None:
                page = check_page(conn, run_id, check_index, offset, limit)
                return [page.stored(check_index, k) for k in range(len(page))]
            return run_page(conn, run_id, offset, limit)

    def score_stats(self, run_id: str, check_index: int) -> ScoreStats:
        with self._session() as s:
            return result_stats.score_stats(check_results(s.connection(), run_id, check_index))

    def score_histogram(
        self, run_id: str, check_index: int, bins: int = 20
    ) -> list[tuple[float, int]]:
        """``(lower edge, count)`` of a check's ok numeric scores, in ``bins`` equal bins."""
        with self._session() as s:
            arrays = check_results(s.connection(), run_id, check_index)
        return result_stats.score_histogram(arrays, bins)

    def save_run_summary(self, run_id: str, summary: Mapping[str, Any], done: int) -> bool:
        """Store a run's summary if it still has ``done`` results (no write came in between)."""
        with self._session() as s:
            stored = s.execute(
                update(RunRow)
                .where(RunRow.id == run_id, RunRow.results_done == done)
                .values(summary=dict(summary))
            )
            return bool(stored.rowcount)  # type: ignore[attr-defined]

    def delete_run_data(self, run_id: str) -> None:
        """Remove a run with its rows and results (operator clean-up)."""
        with self._session() as s:
            s.execute(delete(ResultBlockRow).where(ResultBlockRow.run_id == run_id))
            s.execute(delete(RunRowBlock).where(RunRowBlock.run_id == run_id))
            s.execute(delete(RunRow).where(RunRow.id == run_id))
