"""Durable runs and synchronous scoring: the policy, with the work dispatched through a seam.

:class:`RunService` decides what a run or a ``/v1/score`` request is: the checks it
names (resolved once), the tenant's quotas, each check's limits (lowered once, here),
the chunks its rows are cut into (once, here: a chunk is one sandbox job of
``Settings.chunk_rows`` rows) and when a run is complete. Where the chunks are scored
is its :class:`~engine.runs.dispatch.Dispatch`'s business: this process's threads
(:class:`~engine.runs.local.LocalDispatch`, the default) or ``scorebox worker`` hosts
(:class:`~engine.distributed.celery_dispatch.CeleryDispatch`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from engine.builtins import Builtins
from engine.catalog import ResolvedCheck, resolve, unsaved_code_check
from engine.contract import OutputType
from engine.environments.spec import PackageRules
from engine.errors import InvalidRequestError, QuotaExceededError, ScoreboxError
from engine.models import Limits, Row, RowResult
from engine.row_dumps import StoredRows, stored_rows_of
from engine.rows import as_rows, stored_rows
from engine.runs.dispatch import Dispatch, RunIncomplete, RunPlan, ScoreBatch
from engine.runs.executors import Executors
from engine.runs.local import LocalDispatch
from engine.runs.metrics import Metrics
from engine.runs.scoring import Ref, ScoreOutcome, chunked, effective_limits, outcome
from engine.runs.summary import (
    CheckSummary,
    RunSummary,
    results_done,
    run_summary,
    store_summary,
)
from engine.runs.work import ChunkSpec, resolve_run_check
from engine.settings import Settings
from engine.storage import Run, RunStatus, Store, new_id, utcnow
from engine.tenancy.auth import Principal
from engine.tenancy.quotas import (
    Quotas,
    check_evaluations,
    check_queued,
    check_references,
    check_rows,
    check_score_evaluations,
    effective_quotas,
)

log = logging.getLogger("scorebox.runs")

__all__ = ["Ref", "RunService", "ScoreOutcome", "chunked", "effective_limits"]


class RunService:
    """Submits, resumes, completes and reports runs; scores small batches synchronously."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        executors: Executors,
        metrics: Metrics,
        builtins: Builtins,
        *,
        dispatch: Dispatch | None = None,
    ) -> None:
        """``dispatch``: where the work runs (default: this process's threads)."""
        self.settings = settings
        self.store = store
        self.executors = executors
        self.metrics = metrics
        self.builtins = builtins
        self.dispatch: Dispatch = (
            dispatch if dispatch is not None else LocalDispatch(settings, store, executors, metrics)
        )
        self.dispatch.attach(self)
        self._quota_cache: dict[str, tuple[float, Quotas]] = {}
        self._admitted: Counter[str] = Counter()  # synchronous requests per tenant
        self._admitted_lock = threading.Lock()
        #: Rows per chunk of a run or a request, each chunk one sandbox job (the one chunking)
        self.chunk_rows = settings.chunk_rows
        if settings.run_chunk_rows is not None:
            log.warning(
                "SCOREBOX_RUN_CHUNK_ROWS is deprecated: a chunk is one sandbox job, of "
                "SCOREBOX_JOB_MAX_ROWS rows (chunks now have %d rows); set that instead",
                settings.chunk_rows,
            )

    # ---- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start taking work (embedded: resume every queued or running run)."""
        self.dispatch.start()

    def stop(self) -> None:
        """Stop taking work; chunks in flight finish (unfinished rows resume on restart)."""
        self.dispatch.stop()

    def queue_depth(self) -> int:
        """Work waiting for a worker (the ``scorebox_queue_depth`` gauge)."""
        return self.dispatch.queue_depth()

    def jobs_in_flight(self) -> int:
        """Work being scored (the ``scorebox_jobs_in_flight`` gauge)."""
        return self.dispatch.jobs_in_flight()

    def workers(self) -> dict[str, dict[str, Any]] | None:
        """The ``scorebox worker`` processes the broker sees; None: embedded, work runs here."""
        return self.dispatch.workers()

    # ---- quotas -----------------------------------------------------------------------

    @property
    def packages(self) -> PackageRules:
        """The operator's allow/deny rules for declared packages (SCOREBOX_PACKAGES_*)."""
        return PackageRules.of(self.settings.packages_allow, self.settings.packages_deny)

    def quotas(self, tenant_id: str) -> Quotas:
        """The tenant's effective quotas (read again after a few seconds)."""
        cached = self._quota_cache.get(tenant_id)
        if cached is not None and time.monotonic() - cached[0] < 5:
            return cached[1]
        quotas = effective_quotas(self.settings, self.store.get_tenant(tenant_id).quotas)
        self._quota_cache[tenant_id] = (time.monotonic(), quotas)
        return quotas

    def concurrency(self, tenant_id: str) -> int:
        """How many chunks of the tenant may be scored at once (its ``concurrent_jobs``)."""
        try:
            return self.quotas(tenant_id).concurrent_jobs
        except ScoreboxError:
            return self.settings.quota_concurrent_jobs

    # ---- resolution and limits --------------------------------------------------------

    def resolve_checks(self, principal: Principal, refs: Sequence[Ref]) -> list[ResolvedCheck]:
        """The checks ``refs`` name, as the tenant sees them."""
        if not refs:
            raise InvalidRequestError("name at least one check")
        return [resolve(self.store, principal.tenant_id, ref, self.builtins) for ref in refs]

    def _reresolve(self, run: Run) -> list[ResolvedCheck]:
        """The checks a stored run uses (deleted versions included: the run owns them)."""
        return [
            resolve_run_check(self.store, run.tenant_id, rc, self.builtins) for rc in run.checks
        ]

    def _limits_for(self, check: ResolvedCheck, request: Mapping[str, Any] | None) -> Limits:
        """The one lowering: the configured limits, by the check's own, by the request's."""
        own = check.check.limits if check.check is not None else None
        return effective_limits(self.settings, own, request)

    # ---- runs -------------------------------------------------------------------------

    def submit_run(
        self,
        principal: Principal,
        refs: Sequence[Ref],
        rows: Iterable[Row | Mapping[str, Any]] | StoredRows,
        limits: Mapping[str, Any] | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> Run:
        """Store a run with its rows and queue it; returns it ``queued``.

        ``rows``: Rows, dicts to validate, or :class:`StoredRows` a route already checked.
        Rows that pass the one-pass check (engine.row_dumps) are stored as they were sent,
        with no Row made of them; the others are validated and stored as Row dumps.
        """
        quotas = self.quotas(principal.tenant_id)
        check_references(self.settings, len(refs))
        resolved = self.resolve_checks(principal, refs)
        # a list of plain rows is checked in one pass too (an upload's, the Python API's)
        dumps: Iterable[Mapping[str, Any]]  # StoredRows are stored as they are (marked so)
        if isinstance(rows, StoredRows):
            dumps, count = rows, len(rows)
        elif (checked := stored_rows_of(rows)) is not None:
            dumps, count = checked, len(checked)
        else:
            row_list = as_rows(rows)
            dumps, count = stored_rows(row_list), len(row_list)
        if not count:
            raise InvalidRequestError("a run needs at least one row")
        check_rows(quotas, count)
        check_evaluations(quotas, count, len(resolved))
        check_queued(quotas, self.store.count_active_runs(principal.tenant_id))
        effective_limits(self.settings, limits)  # reject bad limits before storing anything
        run = Run(
            id=new_id("run"),
            tenant_id=principal.tenant_id,
            status=RunStatus.QUEUED,
            checks=[c.to_run_check() for c in resolved],
            limits=dict(limits) if limits else None,
            labels=dict(labels or {}),
            row_count=count,
            error=None,
            created_at=utcnow(),
            started_at=None,
            finished_at=None,
        )
        self.store.create_run(
            run,
            dumps,
            principal.key_id,
            # counted again under the tenant's lock: simultaneous submissions on several API
            # nodes cannot all pass the check above
            admit=lambda active: check_queued(quotas, active),
        )
        self.dispatch.submit_run(self._plan(run, resolved, resume=False))
        return run

    def plan(self, run: Run, *, resume: bool = False) -> RunPlan:
        """A stored run's checks, limits and chunks (``resume``: rows without a result only)."""
        return self._plan(run, self._reresolve(run), resume=resume)

    def _plan(self, run: Run, resolved: list[ResolvedCheck], *, resume: bool) -> RunPlan:
        limits = [self._limits_for(c, run.limits) for c in resolved]
        rows = [
            (ci, self.store.missing_rows(run.id, ci) if resume else range(run.row_count))
            for ci in range(len(resolved))
        ]
        return RunPlan(run, resolved, limits, self._chunks(run, limits, rows))

    def _chunks(
        self, run: Run, limits: Sequence[Limits], rows: Sequence[tuple[int, Sequence[int]]]
    ) -> list[ChunkSpec]:
        """The one chunking of a run: ``Settings.chunk_rows`` rows of one check a chunk,
        the checks interleaved so that a run's progress covers every check."""
        per_check = [(ci, chunked(indices, self.chunk_rows)) for ci, indices in rows]
        out: list[ChunkSpec] = []
        for position in range(max((len(c) for _, c in per_check), default=0)):
            for ci, chunks in per_check:
                if position < len(chunks):
                    spec = ChunkSpec(
                        run.tenant_id,
                        run.id,
                        ci,
                        run.checks[ci],
                        tuple(chunks[position]),
                        limits[ci],
                    )
                    out.append(spec)
        return out

    def settle(self, plan: RunPlan, *, retried: bool) -> list[ChunkSpec]:
        """Every chunk of the run has run: finish it if every row has its results; else the
        chunks of the rows without one, once (``retried``: raise :class:`RunIncomplete`)."""
        run = plan.run
        missing = [(ci, self.store.missing_rows(run.id, ci)) for ci in range(len(plan.resolved))]
        missing = [(ci, rows) for ci, rows in missing if rows]
        if not missing:
            self.finish(run.id, RunStatus.SUCCEEDED)
            return []
        if retried:
            total = sum(len(rows) for _, rows in missing)
            raise RunIncomplete(f"{total} results are missing after a retry")
        return self._chunks(run, plan.limits, missing)

    def finish(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        """Store the run's final status, count it, and keep its summary (unless cancelled)."""
        run = self.store.set_run_status(run_id, status, error)
        self.metrics.runs.labels(status.value).inc()
        if status is not RunStatus.CANCELLED:  # a cancel's chunks in flight still write
            store_summary(self.store, run)

    def cancel(self, principal: Principal, run_id: str) -> Run:
        """Cancel a queued or running run; chunks in flight finish, the rest are dropped."""
        run = self.store.get_run(principal.tenant_id, run_id)
        if not run.status.active:
            return run
        self.finish(run.id, RunStatus.CANCELLED)
        self.dispatch.cancel_run(run)
        return self.store.get_run(principal.tenant_id, run_id)

    def get_run(self, principal: Principal, run_id: str) -> tuple[Run, int, list[CheckSummary]]:
        """A run with how many results are stored and its per-check summary."""
        run = self.store.get_run(principal.tenant_id, run_id)
        summary = self.summary(run)
        return run, results_done(run, summary), summary.checks

    def summary(self, run: Run) -> RunSummary:
        """The run's summary with its histograms (stored once the run has finished)."""
        return run_summary(self.store, run)

    # ---- synchronous scoring ----------------------------------------------------------

    def score(
        self,
        principal: Principal,
        refs: Sequence[Ref],
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Mapping[str, Any] | None = None,
    ) -> ScoreOutcome:
        """Score a small batch now, ahead of this tenant's runs, within its concurrency quota.

        Raises :class:`QuotaExceededError` when no slot frees up within
        ``settings.score_wait_seconds``.
        """
        started_at = time.monotonic()
        with self.admitted(principal.tenant_id):
            resolved, row_list = self._score_request(principal, refs, rows, limits)
            return self.score_resolved(principal, resolved, row_list, limits, started_at=started_at)

    @contextlib.contextmanager
    def admitted(self, tenant_id: str) -> Iterator[None]:
        """Admit one synchronous request of ``tenant_id``, or raise a 429 at once.

        A waiting request holds one of the server's request threads, so a tenant may have
        at most ``settings.score_queue_per_tenant`` of them at a time: one tenant's
        flood of requests cannot take every thread and starve the others (or /healthz).
        """
        limit = self.settings.score_queue_per_tenant
        with self._admitted_lock:
            if self._admitted[tenant_id] >= limit:
                raise QuotaExceededError(
                    f"this tenant already has {limit} synchronous scoring requests running or "
                    "waiting for a sandbox slot (SCOREBOX_SCORE_QUEUE_PER_TENANT): retry when "
                    "one has finished, or submit a run (POST /v1/runs)",
                    retry_after_seconds=1,
                )
            self._admitted[tenant_id] += 1
        try:
            yield
        finally:
            with self._admitted_lock:
                self._admitted[tenant_id] -= 1
                if self._admitted[tenant_id] <= 0:
                    del self._admitted[tenant_id]

    def score_resolved(
        self,
        principal: Principal,
        resolved: Sequence[ResolvedCheck],
        row_list: Sequence[Row],
        limits: Mapping[str, Any] | None = None,
        *,
        started_at: float | None = None,
    ) -> ScoreOutcome:
        """Score resolved checks now, like :meth:`score` (the tenant's concurrency, metrics)."""
        checks, rows, size = list(resolved), list(row_list), self.chunk_rows
        indexed = list(enumerate(rows))
        batch = ScoreBatch(
            tenant_id=principal.tenant_id,
            checks=checks,
            limits=[self._limits_for(c, limits) for c in checks],
            rows=rows,
            chunk_rows=size,
            chunks=[
                (ci, indexed[start : start + size])
                for ci in range(len(checks))
                for start in range(0, len(indexed), size)
            ],
            started_at=time.monotonic() if started_at is None else started_at,
        )
        results = self.dispatch.score(batch)
        answer = outcome(batch.checks, batch.rows, results)
        self.metrics.score_seconds.observe(time.monotonic() - batch.started_at)
        return answer

    def code_runner(
        self, principal: Principal, limits: Mapping[str, Any] | None = None
    ) -> Callable[[str, OutputType, Sequence[Row]], list[RowResult]]:
        """Runs unsaved code on rows as ``principal``'s tenant, under the restricted policy.

        The generator's self-tests go through here, so they wait for the tenant's
        sandbox slots (``concurrent_jobs``) and are metered like ``/v1/score``.
        """

        def run(source: str, output_type: OutputType, rows: Sequence[Row]) -> list[RowResult]:
            check = unsaved_code_check(principal.tenant_id, source, output_type)
            with self.admitted(principal.tenant_id):
                return self.score_resolved(principal, [check], rows, limits).results[0]

        return run

    def _score_request(
        self,
        principal: Principal,
        refs: Sequence[Ref],
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Mapping[str, Any] | None,
    ) -> tuple[list[ResolvedCheck], list[Row]]:
        """A /v1/score request's checks and rows, validated (both modes)."""
        check_references(self.settings, len(refs))
        resolved = self.resolve_checks(principal, refs)
        row_list = as_rows(rows)
        if not row_list:
            raise InvalidRequestError("send at least one row")
        if len(row_list) > self.settings.score_max_rows:
            raise InvalidRequestError(
                f"{len(row_list)} rows is over the {self.settings.score_max_rows}-row limit of "
                "/v1/score: submit a run (POST /v1/runs) instead"
            )
        quotas = self.quotas(principal.tenant_id)
        check_score_evaluations(self.settings, quotas, len(row_list), len(resolved))
        effective_limits(self.settings, limits)
        return resolved, row_list
