"""Retention: finished runs past their age are removed with their rows and results
(``scorebox db prune``; the age is ``--older-than`` or ``SCOREBOX_RETENTION_DAYS``).

A run still queued or running is never pruned, whatever its age. A run's age is counted
from when it finished (from its creation for a run that never recorded its end).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, func, or_, select
from sqlalchemy.exc import SQLAlchemyError

from engine.errors import InvalidRequestError
from engine.storage.database import database_error
from engine.storage.records import RunStatus
from engine.storage.tables import ResultBlockRow, RunRow, RunRowBlock, TenantRow

#: runs deleted per transaction, so a big prune holds no long lock
BATCH = 200

_FINISHED = [RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value]
_AGE = re.compile(r"(\d+)\s*([dhw])")
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_age(text: str) -> timedelta:
    """``90d``, ``12h``, ``2w`` as a timedelta; InvalidRequestError naming the form."""
    found = _AGE.fullmatch(text.strip().lower())
    if found is None or int(found.group(1)) == 0:
        raise InvalidRequestError(
            f"--older-than {text!r}: use a number of days, hours or weeks, e.g. 90d, 36h, 2w"
        )
    return int(found.group(1)) * _UNITS[found.group(2)]


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed, or with ``dry_run`` would remove."""

    before: datetime
    runs: int
    rows: int
    results: int
    dry_run: bool

    def describe(self) -> str:
        """One line for the operator."""
        verb = "would delete" if self.dry_run else "deleted"
        return (
            f"{verb} {self.runs} runs ({self.rows:,} rows, {self.results:,} results) "
            f"finished before {self.before.isoformat(timespec='seconds')}"
        )


def _due(before: datetime, tenant_id: str | None) -> Sequence[str]:
    query = select(RunRow.id).where(
        RunRow.status.in_(_FINISHED),
        or_(
            RunRow.finished_at < before,
            (RunRow.finished_at.is_(None)) & (RunRow.created_at < before),
        ),
    )
    if tenant_id is not None:
        query = query.where(RunRow.tenant_id == tenant_id)
    return query.order_by(RunRow.created_at)  # type: ignore[return-value]


def prune_runs(
    engine: Engine, before: datetime, *, tenant: str | None = None, dry_run: bool = False
) -> PruneReport:
    """Delete finished runs that ended before ``before`` (of one tenant, by name or id)."""
    try:
        with engine.begin() as conn:
            tenant_id = None
            if tenant is not None:
                named = or_(TenantRow.id == tenant, TenantRow.name == tenant)
                tenant_id = conn.scalar(select(TenantRow.id).where(named))
                if tenant_id is None:
                    raise InvalidRequestError(f"no tenant {tenant!r}: see `scorebox tenant list`")
            ids = list(conn.scalars(_due(before, tenant_id)))  # type: ignore[call-overload]
        rows = results = 0
        for start in range(0, len(ids), BATCH):
            batch = ids[start : start + BATCH]
            with engine.begin() as conn:
                stored = func.coalesce(func.sum(RunRowBlock.row_stop - RunRowBlock.row_start), 0)
                rows += int(conn.scalar(select(stored).where(RunRowBlock.run_id.in_(batch))) or 0)
                held = func.coalesce(func.sum(ResultBlockRow.rows), 0)
                results += int(
                    conn.scalar(select(held).where(ResultBlockRow.run_id.in_(batch))) or 0
                )
                if not dry_run:
                    # explicit, not only the foreign keys' cascade: the biggest tables first
                    conn.execute(delete(ResultBlockRow).where(ResultBlockRow.run_id.in_(batch)))
                    conn.execute(delete(RunRowBlock).where(RunRowBlock.run_id.in_(batch)))
                    conn.execute(delete(RunRow).where(RunRow.id.in_(batch)))
    except SQLAlchemyError as exc:
        raise database_error(exc) from exc
    return PruneReport(before, len(ids), rows, results, dry_run)
