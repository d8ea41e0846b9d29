"""Durable runs and synchronous scoring on a fair worker pool.

A run's rows and results live in the database. Workers take chunks of rows of
one (run, check) from the :class:`~engine.runs.scheduler.FairScheduler`, score
them through the check's executor and write results as they stream in, with
insert-or-ignore on (run, check, row): a crash never duplicates a result, and
on start-up every queued or running run is re-enqueued with only the rows
that lack a result.
"""

from __future__ import annotations

import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.auth import Principal
from engine.catalog import CheckRef, ResolvedCheck, resolve
from engine.contract import Status
from engine.errors import InvalidRequestError, NotFoundError, QuotaExceededError, ScoreboxError
from engine.judging.usage import UsageMeter, metering
from engine.models import Limits, Row, RowResult
from engine.runner import as_rows
from engine.runs.executors import Executors
from engine.runs.metrics import Metrics
from engine.runs.quotas import Quotas, check_queued, check_rows, effective_quotas
from engine.runs.registry import Builtin
from engine.runs.scheduler import FairScheduler, WorkItem
from engine.runs.summary import CheckSummary, from_stats, summarize
from engine.settings import Settings
from engine.storage import Run, RunStatus, Store, new_id, utcnow

log = logging.getLogger("scorebox.runs")

Ref = str | CheckRef | dict[str, Any]

#: Results buffered before a write; a kill loses at most these (they are re-scored).
FLUSH_ROWS = 100
FLUSH_SECONDS = 1.0


def effective_limits(settings: Settings, *overrides: Mapping[str, Any] | None) -> Limits:
    """The configured limits, lowered by each partial override in turn (never raised)."""
    limits = settings.limits
    for override in overrides:
        if override:
            try:
                lowered = Limits.model_validate({**limits.model_dump(), **override})
            except ValueError as exc:
                raise InvalidRequestError(f"limits: {exc}") from exc
            limits = limits.lowered_by(lowered)
    return limits


def chunked(indices: Sequence[int], size: int) -> list[list[int]]:
    return [list(indices[i : i + size]) for i in range(0, len(indices), size)]


@dataclass
class ScoreOutcome:
    """Results of ``/v1/score``: ``results[k][i]`` is check k on row i."""

    checks: list[ResolvedCheck]
    results: list[list[RowResult]]
    summaries: list[CheckSummary]


@dataclass
class _RunState:
    run: Run
    resolved: list[ResolvedCheck]
    limits: list[Limits]
    pending: int = 0
    started: bool = False
    stopped: bool = False  # cancelled or failed: remaining chunks are skipped
    retried: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class _ResultWriter:
    """Buffers one chunk's results and writes them idempotently."""

    def __init__(
        self, store: Store, run_id: str, check_index: int, indices: Sequence[int], metrics: Metrics
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.check_index = check_index
        self.indices = indices
        self.metrics = metrics
        self._buffer: list[tuple[int, int, RowResult]] = []
        self._lock = threading.Lock()
        self._last = time.monotonic()

    def add(self, index: int, result: RowResult) -> None:
        with self._lock:
            self._buffer.append((self.check_index, self.indices[index], result))
            if len(self._buffer) >= FLUSH_ROWS or time.monotonic() - self._last > FLUSH_SECONDS:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        batch, self._buffer = self._buffer, []
        self._last = time.monotonic()
        if batch:
            self.store.save_results(self.run_id, batch)
            for _, _, result in batch:
                self.metrics.rows.labels(result.status.value).inc()


class RunService:
    """Submits, executes, resumes and reports runs; scores small batches synchronously."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        executors: Executors,
        metrics: Metrics,
        builtins: Callable[[], Mapping[str, Builtin]],
    ) -> None:
        self.settings = settings
        self.store = store
        self.executors = executors
        self.metrics = metrics
        self._builtins = builtins
        self.scheduler = FairScheduler(self._concurrency)
        self._states: dict[str, _RunState] = {}
        self._states_lock = threading.Lock()
        self._quota_cache: dict[str, tuple[float, Quotas]] = {}
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()

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

    # ---- quotas -----------------------------------------------------------------------

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

    def builtins(self) -> Mapping[str, Builtin]:
        return self._builtins()

    def resolve_checks(self, principal: Principal, refs: Sequence[Ref]) -> list[ResolvedCheck]:
        if not refs:
            raise InvalidRequestError("name at least one check")
        builtins = dict(self._builtins())
        return [resolve(self.store, principal.tenant_id, ref, builtins) for ref in refs]

    def _reresolve(self, run: Run) -> list[ResolvedCheck]:
        """The checks a stored run uses (deleted versions included: the run owns them)."""
        builtins = dict(self._builtins())
        out: list[ResolvedCheck] = []
        for rc in run.checks:
            if rc.id is not None:
                version = self.store.get_check_by_id(run.tenant_id, rc.id, include_deleted=True)
                out.append(ResolvedCheck(rc.kind, rc.name, rc.version, rc.id, rc.params, version))
            else:
                builtin = builtins.get(rc.name)
                if builtin is None:
                    raise NotFoundError(f"built-in check {rc.name!r} is no longer available")
                out.append(ResolvedCheck(rc.kind, rc.name, None, None, rc.params, None, builtin))
        return out

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
        resolved = self.resolve_checks(principal, refs)
        row_list = as_rows(rows)
        if not row_list:
            raise InvalidRequestError("a run needs at least one row")
        check_rows(quotas, len(row_list))
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
        self.store.create_run(run, (r.model_dump(mode="json") for r in row_list), principal.key_id)
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
            self.scheduler.submit(
                WorkItem(
                    run.tenant_id,
                    run.id,
                    fn=functools.partial(self._run_chunk, state, check_index, indices),
                )
            )

    def _run_chunk(self, state: _RunState, check_index: int, indices: list[int]) -> None:
        run = state.run
        try:
            if state.stopped:
                return
            with state.lock:
                first = not state.started
                state.started = True
            if first:
                self.store.set_run_status(run.id, RunStatus.RUNNING)
            check = state.resolved[check_index]
            data = self.store.load_rows(run.id, indices)
            rows = [Row.model_validate(data[i]) for i in indices]
            writer = _ResultWriter(self.store, run.id, check_index, indices, self.metrics)
            labels = {"scorebox.tenant": run.tenant_id, "scorebox.run": run.id}
            started = time.monotonic()
            outcome = "ok"
            meter = UsageMeter()
            try:
                with metering(meter):
                    self.executors.for_check(check).score(
                        check, rows, state.limits[check_index], labels, writer.add
                    )
            except Exception:
                outcome = "error"
                raise
            finally:
                writer.flush()
                usage = meter.snapshot()
                if usage.calls or usage.cached_calls:
                    with state.lock:
                        self.store.add_run_usage(run.id, usage.as_dict())
                self.metrics.jobs.labels(check.kind, outcome).inc()
                self.metrics.job_seconds.labels(check.kind).observe(time.monotonic() - started)
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
                self._complete(state)

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
            self.scheduler.submit(
                WorkItem(
                    run.tenant_id, run.id, fn=functools.partial(self._run_chunk, state, ci, indices)
                )
            )

    def _fail(self, state: _RunState, error: str) -> None:
        with state.lock:
            if state.stopped:
                return
            state.stopped = True
        self.scheduler.drop_group(state.run.tenant_id, state.run.id)
        self._finish(state.run.id, RunStatus.FAILED, error)

    def _finish(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        self.store.set_run_status(run_id, status, error)
        self.metrics.runs.labels(status.value).inc()
        with self._states_lock:
            self._states.pop(run_id, None)

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
        done = self.store.count_results(run.id)
        return run, done, self.summaries(run)

    def summaries(self, run: Run) -> list[CheckSummary]:
        return [
            from_stats(self.store.score_stats(run.id, ci), rc.name, rc.version, rc.id, rc.kind)
            for ci, rc in enumerate(run.checks)
        ]

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
        resolved = self.resolve_checks(principal, refs)
        row_list = as_rows(rows)
        if not row_list:
            raise InvalidRequestError("send at least one row")
        if len(row_list) > self.settings.score_max_rows:
            raise InvalidRequestError(
                f"{len(row_list)} rows is over the {self.settings.score_max_rows}-row limit of "
                "/v1/score: submit a run (POST /v1/runs) instead"
            )
        effective_limits(self.settings, limits)
        results: list[list[RowResult | None]] = [[None] * len(row_list) for _ in resolved]
        group = f"score:{secrets.token_hex(6)}"
        labels = {"scorebox.tenant": principal.tenant_id}
        size = min(self.settings.run_chunk_rows, self.settings.job_max_rows)
        items: list[WorkItem] = []
        for ci, check in enumerate(resolved):
            check_limits = self._limits_for(check, limits)
            for chunk in chunked(range(len(row_list)), size):
                items.append(
                    WorkItem(
                        principal.tenant_id,
                        group,
                        interactive=True,
                        fn=self._score_fn(
                            check, ci, chunk, row_list, check_limits, labels, results
                        ),
                    )
                )
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
        final: list[list[RowResult]] = []
        for check, check_results in zip(resolved, results, strict=True):
            final.append(
                [
                    r
                    if r is not None
                    else RowResult(
                        row_id=row_list[i].id,
                        check=check.name,
                        version=check.version,
                        status=Status.SANDBOX_ERROR,
                        error="no result was produced for this row",
                    )
                    for i, r in enumerate(check_results)
                ]
            )
        summaries = [
            summarize(rs, c.name, c.version, c.id, c.kind)
            for c, rs in zip(resolved, final, strict=True)
        ]
        self.metrics.score_seconds.observe(time.monotonic() - started_at)
        return ScoreOutcome(resolved, final, summaries)

    def _score_fn(
        self,
        check: ResolvedCheck,
        ci: int,
        chunk: list[int],
        rows: list[Row],
        limits: Limits,
        labels: Mapping[str, str],
        results: list[list[RowResult | None]],
    ) -> Callable[[], None]:
        def run() -> None:
            def deliver(index: int, result: RowResult) -> None:
                results[ci][chunk[index]] = result
                self.metrics.rows.labels(result.status.value).inc()

            started = time.monotonic()
            outcome = "ok"
            try:
                self.executors.for_check(check).score(
                    check, [rows[i] for i in chunk], limits, labels, deliver
                )
            except Exception:
                outcome = "error"
                raise
            finally:
                self.metrics.jobs.labels(check.kind, outcome).inc()
                self.metrics.job_seconds.labels(check.kind).observe(time.monotonic() - started)

        return run
