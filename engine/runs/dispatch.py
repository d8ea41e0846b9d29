"""The seam between what a run service decides and where its work runs.

:class:`~engine.runs.service.RunService` owns the policy: which checks and limits a
run or request gets, the quotas, how rows are cut into chunks, when a run is
complete. A :class:`Dispatch` owns the mechanics of getting chunks scored: the
embedded fair scheduler's threads (:class:`~engine.runs.local.LocalDispatch`) or
``scorebox worker`` hosts through Celery
(:class:`~engine.distributed.celery_dispatch.CeleryDispatch`). The service holds a
dispatch the way an httpx ``Client`` holds its transport, and the composition root
picks which one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.catalog import ResolvedCheck
from engine.models import IndexedRow, Limits, Row, RowResult
from engine.runs.work import ChunkSpec
from engine.storage import Run, RunStatus
from engine.tenancy.quotas import Quotas


@dataclass(frozen=True)
class RunPlan:
    """A run ready to dispatch: its resolved checks, each check's limits and its chunks."""

    run: Run
    resolved: Sequence[ResolvedCheck]
    limits: Sequence[Limits]
    chunks: Sequence[ChunkSpec]


@dataclass(frozen=True)
class ScoreBatch:
    """A ``/v1/score`` request (or the generator's self-test) resolved and validated."""

    tenant_id: str
    checks: Sequence[ResolvedCheck]
    #: Each check's limits, already lowered by its own and the request's (once, there).
    limits: Sequence[Limits]
    rows: Sequence[Row]
    #: Rows per chunk: a chunk is one sandbox job (``Settings.chunk_rows``).
    chunk_rows: int
    #: ``(check index, rows with their indices)``: the request's one chunking, by the service.
    chunks: Sequence[tuple[int, Sequence[IndexedRow]]]
    #: When the request arrived (``time.monotonic()``): its wait for a slot counts from here.
    started_at: float


#: ``results[k][i]``: check k on row i; None where no result came back.
BatchResults = list[list[RowResult | None]]


class RunIncomplete(Exception):
    """Raised by :meth:`RunHooks.settle` when a run's rows still lack results after a retry."""


class RunHooks(Protocol):
    """What a dispatch asks of the service that owns it (the policy)."""

    def plan(self, run: Run, *, resume: bool = False) -> RunPlan:
        """The run's checks, limits and chunks (``resume``: only rows without a result)."""
        ...

    def settle(self, plan: RunPlan, *, retried: bool) -> list[ChunkSpec]:
        """Every chunk has run: finish the run, or return the chunks to run again."""
        ...

    def finish(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        """Store the run's final status (and its summary, unless cancelled)."""
        ...

    def quotas(self, tenant_id: str) -> Quotas:
        """The tenant's effective quotas."""
        ...

    def concurrency(self, tenant_id: str) -> int:
        """How many chunks of the tenant may be scored at once."""
        ...


class Dispatch(Protocol):
    """Where chunks are scored: threads of this process, or workers behind a broker."""

    def attach(self, hooks: RunHooks) -> None:
        """Called once by the service that owns this dispatch, before any other call."""
        ...

    def start(self) -> None:
        """Start taking work (and pick up the runs this mode resumes)."""
        ...

    def stop(self) -> None:
        """Stop taking work; chunks in flight finish, unfinished rows resume later."""
        ...

    def submit_run(self, plan: RunPlan) -> None:
        """Queue a stored run's chunks."""
        ...

    def cancel_run(self, run: Run) -> None:
        """The run is stored cancelled: drop its queued chunks (running ones stop at a write)."""
        ...

    def score(self, batch: ScoreBatch) -> BatchResults:
        """Score a batch now, ahead of runs; raise QuotaExceededError when no slot frees up."""
        ...

    def queue_depth(self) -> int:
        """Work waiting for a worker (the ``scorebox_queue_depth`` gauge)."""
        ...

    def jobs_in_flight(self) -> int:
        """Work being scored (the ``scorebox_jobs_in_flight`` gauge)."""
        ...

    def workers(self) -> dict[str, dict[str, Any]] | None:
        """The ``scorebox worker`` processes the broker sees; None: work runs in this process."""
        ...
