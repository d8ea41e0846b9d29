"""Durable runs and synchronous scoring on a fair worker pool.

A run's rows and results live in the database. Workers take chunks of rows of
one (run, check) from the :class:`~engine.runs.scheduler.FairScheduler`, score
them through the check's executor and write results as they stream in, with
insert-or-ignore on (run, check, row): a crash never duplicates a result, and
on start-up every queued or running run is re-enqueued with only the rows
that lack a result.

The database going away (a restart, a full disk) is not the run's fault: a chunk
whose reads or writes fail with :class:`StorageError` is queued again after a
backoff (capped at ``STORAGE_BACKOFF_MAX_SECONDS``) and re-reads which rows still lack
a result, for as long as ``settings.storage_retry_seconds``; only then does the run
fail (and if even that cannot be written, it stays active and resumes on restart).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.builtins import Builtins
from engine.catalog import ResolvedCheck, resolve, unsaved_code_check
from engine.contract import OutputType
from engine.environments.spec import PackageRules
from engine.errors import InvalidRequestError, QuotaExceededError, ScoreboxError, StorageError
from engine.models import IndexedRow, Limits, Row, RowResult
from engine.runs.executors import Executors
from engine.runs.metrics import Metrics
from engine.runs.scheduler import FairScheduler, WorkItem
from engine.runs.scoring import Ref, ScoreOutcome, chunked, effective_limits, outcome
from engine.runs.summary import (
    CheckSummary,
    RunSummary,
    results_done,
    run_summary,
    store_summary,
)
from engine.runs.work import (
    ChunkSpec,
    ChunkStopped,
    execute_chunk,
    resolve_run_check,
    score_batch,
)
from engine.sandbox.runner import as_rows
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

#: The longest wait between two tries of a chunk while the database is unavailable.
STORAGE_BACKOFF_MAX_SECONDS = 5.0


@dataclass
class _RunState:
    run: Run
    resolved: list[ResolvedCheck]
    limits: list[Limits]
    pending: int = 0
    started: bool = False
    stopped: bool = False  # cancelled or failed: remaining chunks are skipped
    retried: bool = False
    #: when the database first failed this run with no write succeeding since (monotonic)
    storage_down_since: float | None = None
    storage_failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class RunService:
    """Submits, executes, resumes and reports runs; scores small batches synchronously."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        executors: Executors,
        metrics: Metrics,
        builtins: Builtins,
    ) -> None:
        self.settings = settings
        self.store = store
        self.executors = executors
        self.metrics = metrics
        self.builtins = builtins
        self.scheduler = FairScheduler(self._concurrency)
        self._states: dict[str, _RunState] = {}
        self._states_lock = threading.Lock()
        self._quota_cache: dict[str, tuple[float, Quotas]] = {}
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._admitted: Counter[str] = Counter()  # synchronous requests per tenant
        self._admitted_lock = threading.Lock()

    # ---- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and resume every queued or running run."""
        count = self.settings.run_workers or self.settings.max_parallel_jobs
        for n in range(count):
            thread = threading.Thread(target=self._work, name=f"scorebox-worker-{n}", daemon=True)
            thread.start()
            self._workers.append(thread)
        for run in self.store.active_runs():
            try:
                self._enqueue(run, resume=True)
            except ScoreboxError as exc:
                log.error("run %s cannot resume: %s", run.id, exc)
                self._finish(run.id, RunStatus.FAILED, f"cannot resume: {exc}")

    def stop(self) -> None:
        """Stop taking work; chunks in flight finish (unfinished rows resume on restart)."""
        self._stopping.set()
        self.scheduler.close()
        for thread in self._workers:
            thread.join(timeout=60)
        self._workers.clear()

    def _work(self) -> None:
        while not self._stopping.is_set():
            item = self.scheduler.take(timeout=0.5)
            if item is None:
                continue
            try:
                item.fn()
            except BaseException as exc:  # recorded on the item; the worker lives on
                item.error = exc
            finally:
                self.scheduler.finish(item)

    def queue_depth(self) -> int:
        """Work waiting for a worker (the ``scorebox_queue_depth`` gauge)."""
        return self.scheduler.depth()

    def jobs_in_flight(self) -> int:
        """Work being scored (the ``scorebox_jobs_in_flight`` gauge)."""
        return self.scheduler.inflight()

    def workers(self) -> dict[str, dict[str, Any]] | None:
        """The ``scorebox worker`` processes the broker sees; None: embedded, work runs here."""
        return None

    # ---- quotas -----------------------------------------------------------------------

    @property
    def packages(self) -> PackageRules:
        """The operator's allow/deny rules for declared packages (SCOREBOX_PACKAGES_*)."""
        return PackageRules.of(self.settings.packages_allow, self.settings.packages_deny)

    def quotas(self, tenant_id: str) -> Quotas:
        cached = self._quota_cache.get(tenant_id)
        if cached is not None and time.monotonic() - cached[0] < 5:
            return cached[1]
        quotas = effective_quotas(self.settings, self.store.get_tenant(tenant_id).quotas)
        self._quota_cache[tenant_id] = (time.monotonic(), quotas)
        return quotas

    def _concurrency(self, tenant_id: str) -> int:
        try:
            return self.quotas(tenant_id).concurrent_jobs
        except ScoreboxError:
            return self.settings.quota_concurrent_jobs

    # ---- resolution -------------------------------------------------------------------

    def resolve_checks(self, principal: Principal, refs: Sequence[Ref]) -> list[ResolvedCheck]:
        if not refs:
            raise InvalidRequestError("name at least one check")
        return [resolve(self.store, principal.tenant_id, ref, self.builtins) for ref in refs]

    def _reresolve(self, run: Run) -> list[ResolvedCheck]:
        """The checks a stored run uses (deleted versions included: the run owns them)."""
        return [
            resolve_run_check(self.store, run.tenant_id, rc, self.builtins) for rc in run.checks
        ]

    def _limits_for(self, check: ResolvedCheck, request: Mapping[str, Any] | None) -> Limits:
        own = check.check.limits if check.check is not None else None
        return effective_limits(self.settings, own, request)

    # ---- runs -------------------------------------------------------------------------

    def submit_run(
        self,
        principal: Principal,
        refs: Sequence[Ref],
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Mapping[str, Any] | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> Run:
        """Store a run with its rows and queue it; returns it ``queued``."""
        quotas = self.quotas(principal.tenant_id)
        check_references(self.settings, len(refs))
        resolved = self.resolve_checks(principal, refs)
        row_list = as_rows(rows)
        if not row_list:
            raise InvalidRequestError("a run needs at least one row")
        check_rows(quotas, len(row_list))
        check_evaluations(quotas, len(row_list), len(resolved))
        check_queued(quotas, self.store.count_active_runs(principal.tenant_id))
        effective_limits(self.settings, limits)  # reject bad limits before storing anything
        run = Run(
            id=new_id("run"),
            tenant_id=principal.tenant_id,
            status=RunStatus.QUEUED,
            checks=[c.to_run_check() for c in resolved],
            limits=dict(limits) if limits else None,
            labels=dict(labels or {}),
            row_count=len(row_list),
            error=None,
            created_at=utcnow(),
            started_at=None,
            finished_at=None,
        )
        self.store.create_run(
            run,
            (r.model_dump(mode="json") for r in row_list),
            principal.key_id,
            # counted again under the tenant's lock: simultaneous submissions on several API
            # nodes cannot all pass the check above
            admit=lambda active: check_queued(quotas, active),
        )
        self._enqueue(run, resolved=resolved)
        return run

    def _enqueue(
        self, run: Run, resume: bool = False, resolved: list[ResolvedCheck] | None = None
    ) -> None:
        resolved = resolved or self._reresolve(run)
        state = _RunState(run, resolved, [self._limits_for(c, run.limits) for c in resolved])
        size = self.settings.run_chunk_rows
        work: list[tuple[int, list[int]]] = []
        per_check: list[list[list[int]]] = []
        for check_index in range(len(resolved)):
            indices = (
                self.store.missing_rows(run.id, check_index)
                if resume
                else list(range(run.row_count))
            )
            per_check.append(chunked(indices, size))
        # interleave checks so a run's progress covers every check
        for position in range(max((len(c) for c in per_check), default=0)):
            for check_index, chunks in enumerate(per_check):
                if position < len(chunks):
                    work.append((check_index, chunks[position]))
        with self._states_lock:
            self._states[run.id] = state
        if not work:
            self._complete(state)
            return
        state.pending = len(work)
        for check_index, indices in work:
            self.scheduler.submit(self._chunk_item(state, check_index, indices))

    def _chunk_item(self, state: _RunState, check_index: int, indices: list[int]) -> WorkItem:
        """The queued unit: a :class:`ChunkSpec`, the plain data a Celery task carries too.

        Built when the chunk is queued, as the distributed dispatcher builds its
        message; the worker thread hands it to :func:`execute_chunk`, as
        ``scorebox worker`` does.
        """
        run = state.run
        spec = ChunkSpec(
            run.tenant_id,
            run.id,
            check_index,
            run.checks[check_index],
            tuple(indices),
            state.limits[check_index],
        )
        return WorkItem(run.tenant_id, run.id, fn=functools.partial(self._run_chunk, state, spec))

    def _run_chunk(self, state: _RunState, spec: ChunkSpec) -> None:
        run = state.run
        try:
            if state.stopped:
                return
            with state.lock:
                first = not state.started
                state.started = True
            if first:
                try:
                    self.store.set_run_status(run.id, RunStatus.RUNNING)
                except StorageError:
                    with state.lock:
                        state.started = False  # the retry marks it running
                    raise
            check = state.resolved[spec.check_index]
            outcome = execute_chunk(
                self.store, self.executors, self.metrics, spec, check, lambda: state.stopped
            )
            if outcome.usage:
                with state.lock:
                    self.store.add_run_usage(run.id, outcome.usage)
            with state.lock:
                state.storage_down_since = None
                state.storage_failures = 0
        except ChunkStopped:
            pass
        except StorageError as exc:
            if not self._retry_later(state, exc, lambda: self._resubmit(state, spec)):
                self._fail(state, f"the database stayed unavailable: {exc}")
        except ScoreboxError as exc:
            self._fail(state, str(exc))
        except Exception as exc:
            log.exception("run %s: chunk failed", run.id)
            self._fail(state, f"internal error: {exc.__class__.__name__}: {exc}")
        finally:
            with state.lock:
                state.pending -= 1
                done = state.pending == 0
            if done and not state.stopped:
                self._complete_or_retry(state)

    def _resubmit(self, state: _RunState, spec: ChunkSpec) -> None:
        self.scheduler.submit(self._chunk_item(state, spec.check_index, list(spec.rows)))

    def _retry_later(self, state: _RunState, exc: StorageError, again: Callable[[], None]) -> bool:
        """Call ``again`` after a backoff while the database has been failing this run for
        less than ``settings.storage_retry_seconds``; False once it has been longer."""
        now = time.monotonic()
        with state.lock:
            if state.stopped or self._stopping.is_set():
                return True  # nothing to retry: cancelled, failed or shutting down
            if state.storage_down_since is None:
                state.storage_down_since = now
            if now - state.storage_down_since > self.settings.storage_retry_seconds:
                return False
            state.storage_failures += 1
            delay = min(STORAGE_BACKOFF_MAX_SECONDS, 0.25 * 2 ** min(state.storage_failures, 8))
            state.pending += 1  # the retry is still to come: the run is not complete
        log.warning(
            "run %s: database unavailable (%s): retrying in %.1f s", state.run.id, exc, delay
        )

        def retry() -> None:
            try:
                if self._stopping.is_set():
                    return
                again()
            except Exception:  # the scheduler closed meanwhile: the run resumes on restart
                log.exception("run %s: could not queue a retry", state.run.id)

        timer = threading.Timer(delay, retry)
        timer.daemon = True
        timer.start()
        return True

    def _complete_or_retry(self, state: _RunState) -> None:
        try:
            self._complete(state)
        except StorageError as exc:

            def again() -> None:
                with state.lock:
                    state.pending -= 1
                self._complete_or_retry(state)

            if not self._retry_later(state, exc, again):
                log.error(
                    "run %s: cannot complete, the database is unavailable: %s", state.run.id, exc
                )

    def _complete(self, state: _RunState) -> None:
        run = state.run
        missing = [(ci, self.store.missing_rows(run.id, ci)) for ci in range(len(state.resolved))]
        missing = [(ci, rows) for ci, rows in missing if rows]
        if not missing:
            self._finish(run.id, RunStatus.SUCCEEDED)
            return
        if state.retried:
            total = sum(len(rows) for _, rows in missing)
            self._fail(state, f"{total} results are missing after a retry")
            return
        state.retried = True
        work = [
            (ci, c) for ci, rows in missing for c in chunked(rows, self.settings.run_chunk_rows)
        ]
        state.pending = len(work)
        for ci, indices in work:
            self.scheduler.submit(self._chunk_item(state, ci, indices))

    def _fail(self, state: _RunState, error: str) -> None:
        with state.lock:
            if state.stopped:
                return
            state.stopped = True
        self.scheduler.drop_group(state.run.tenant_id, state.run.id)
        self._finish(state.run.id, RunStatus.FAILED, error)

    def _finish(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        run = self.store.set_run_status(run_id, status, error)
        self.metrics.runs.labels(status.value).inc()
        with self._states_lock:
            self._states.pop(run_id, None)
        if status is not RunStatus.CANCELLED:  # a cancel's chunks in flight still write
            store_summary(self.store, run)

    def cancel(self, principal: Principal, run_id: str) -> Run:
        """Cancel a queued or running run; chunks in flight finish, the rest are dropped."""
        run = self.store.get_run(principal.tenant_id, run_id)
        if not run.status.active:
            return run
        with self._states_lock:
            state = self._states.get(run_id)
        if state is not None:
            with state.lock:
                state.stopped = True
            self.scheduler.drop_group(run.tenant_id, run.id)
        self._finish(run.id, RunStatus.CANCELLED)
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
        started_at = time.monotonic() if started_at is None else started_at
        resolved = list(resolved)
        row_list = list(row_list)
        results: list[list[RowResult | None]] = [[None] * len(row_list) for _ in resolved]
        group = f"score:{secrets.token_hex(6)}"
        # The batch's label keys its one gateway quota: every check and chunk share it.
        labels = {"scorebox.tenant": principal.tenant_id, "scorebox.batch": group}
        indexed = list(enumerate(row_list))
        size = self.settings.run_chunk_rows
        items: list[WorkItem] = []
        for ci, check in enumerate(resolved):
            check_limits = self._limits_for(check, limits)
            for start in range(0, len(indexed), size):
                chunk = indexed[start : start + size]
                fn = self._score_fn(check, ci, chunk, check_limits, labels, results)
                items.append(WorkItem(principal.tenant_id, group, interactive=True, fn=fn))
        for item in items:
            self.scheduler.submit(item)
        deadline = started_at + self.settings.score_wait_seconds
        if not any(item.started.wait(max(0.0, deadline - time.monotonic())) for item in items[:1]):
            withdrawn = [self.scheduler.withdraw(item) for item in items]
            if all(withdrawn):
                raise QuotaExceededError(
                    "no sandbox slot freed up for this tenant within "
                    f"{self.settings.score_wait_seconds:g}s (quota: "
                    f"{self.quotas(principal.tenant_id).concurrent_jobs} concurrent jobs): "
                    "retry later",
                    retry_after_seconds=max(1, int(self.settings.score_wait_seconds)),
                )
            for item, gone in zip(items, withdrawn, strict=True):
                if gone:
                    self.scheduler.submit(item)
        for item in items:
            item.finished.wait()
            if item.error is not None:
                raise item.error
        return self._score_outcome(resolved, row_list, results, started_at)

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

    def _score_outcome(
        self,
        resolved: list[ResolvedCheck],
        row_list: list[Row],
        results: Sequence[Sequence[RowResult | None]],
        started_at: float,
    ) -> ScoreOutcome:
        """The outcome of a request (see :func:`~engine.runs.scoring.outcome`), metered."""
        answer = outcome(resolved, row_list, results)
        self.metrics.score_seconds.observe(time.monotonic() - started_at)
        return answer

    def _score_fn(
        self,
        check: ResolvedCheck,
        ci: int,
        chunk: list[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        results: list[list[RowResult | None]],
    ) -> Callable[[], None]:
        def deliver(index: int, result: RowResult) -> None:
            results[ci][index] = result

        return functools.partial(
            score_batch, self.executors, self.metrics, check, chunk, limits, labels, deliver
        )
