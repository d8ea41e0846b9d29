"""Embedded mode's dispatch: the fair scheduler's threads in this process, and retry timers.

Threads take chunks from the :class:`~engine.runs.scheduler.FairScheduler` and score
them with :func:`~engine.runs.work.execute_chunk`, which writes results as they stream
in, with insert-or-ignore on (run, check, row): a crash never duplicates a result, and
on start-up every queued or running run is queued again with only the rows that lack a
result.

The database going away (a restart, a full disk) is not the run's fault: a chunk whose
reads or writes fail with :class:`StorageError` is queued again after a backoff (capped
at ``STORAGE_BACKOFF_MAX_SECONDS``) and re-reads which rows still lack a result, for as
long as ``settings.storage_retry_seconds``; only then does the run fail (and if even
that cannot be written, it stays active and resumes on restart).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import QuotaExceededError, ScoreboxError, StorageError
from engine.models import RowResult
from engine.runs.dispatch import BatchResults, RunHooks, RunIncomplete, RunPlan, ScoreBatch
from engine.runs.executors import Executors
from engine.runs.metrics import Metrics
from engine.runs.scheduler import FairScheduler, WorkItem
from engine.runs.work import ChunkSpec, ChunkStopped, along_room, execute_chunk, score_batch
from engine.settings import Settings
from engine.storage import Run, RunStatus, Store

log = logging.getLogger("scorebox.runs")

#: The longest wait between two tries of a chunk while the database is unavailable.
STORAGE_BACKOFF_MAX_SECONDS = 5.0


@dataclass
class _RunState:
    plan: RunPlan
    pending: int = 0
    started: bool = False
    stopped: bool = False  # cancelled or failed: remaining chunks are skipped
    retried: bool = False
    #: seconds a row took in each check's (by index) last chunk that scored rows
    pace: dict[int, float] = field(default_factory=dict)
    #: when the database first failed this run with no write succeeding since (monotonic)
    storage_down_since: float | None = None
    storage_failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def run(self) -> Run:
        return self.plan.run


class LocalDispatch:
    """A :class:`~engine.runs.dispatch.Dispatch` on this process's threads."""

    def __init__(
        self, settings: Settings, store: Store, executors: Executors, metrics: Metrics
    ) -> None:
        self.settings = settings
        self.store = store
        self.executors = executors
        self.metrics = metrics
        self.thread_count = settings.run_threads or settings.max_parallel_jobs
        # the threads' number is the scheduler's capacity: an item claimed by a request's
        # thread takes the place of an idle scoring thread, never one more
        self.scheduler = FairScheduler(self._concurrency, capacity=self.thread_count)
        self._hooks: RunHooks | None = None
        self._states: dict[str, _RunState] = {}
        self._states_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    @property
    def hooks(self) -> RunHooks:
        if self._hooks is None:
            raise RuntimeError("LocalDispatch used before a RunService attached it")
        return self._hooks

    def attach(self, hooks: RunHooks) -> None:
        self._hooks = hooks

    def _concurrency(self, tenant_id: str) -> int:
        if self._hooks is None:
            return self.settings.quota_concurrent_jobs
        return self._hooks.concurrency(tenant_id)

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the threads and queue again every queued or running run."""
        for n in range(self.thread_count):
            thread = threading.Thread(target=self._work, name=f"scorebox-run-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        for run in self.store.active_runs():
            try:
                self.submit_run(self.hooks.plan(run, resume=True))
            except ScoreboxError as exc:
                log.error("run %s cannot resume: %s", run.id, exc)
                self._finish(run.id, RunStatus.FAILED, f"cannot resume: {exc}")

    def stop(self) -> None:
        self._stopping.set()
        self.scheduler.close()
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads.clear()

    def _work(self) -> None:
        while not self._stopping.is_set():
            item = self.scheduler.take(timeout=0.5)
            if item is not None:
                self._run_item(item)

    def _run_item(self, item: WorkItem) -> None:
        try:
            item.fn()
        except BaseException as exc:  # recorded on the item; the thread lives on
            item.error = exc
        finally:
            self.scheduler.finish(item)

    def queue_depth(self) -> int:
        return self.scheduler.depth()

    def jobs_in_flight(self) -> int:
        return self.scheduler.inflight()

    def workers(self) -> dict[str, dict[str, Any]] | None:
        return None  # embedded: the work runs here

    # ---- runs ---------------------------------------------------------------------------

    def submit_run(self, plan: RunPlan) -> None:
        state = _RunState(plan)
        with self._states_lock:
            self._states[plan.run.id] = state
        if not plan.chunks:
            self._settle(state)
            return
        self._submit(state, plan.chunks)

    def _submit(self, state: _RunState, chunks: Sequence[ChunkSpec]) -> None:
        state.pending = len(chunks)
        for spec in chunks:
            self.scheduler.submit(self._item(state, spec))

    def _item(self, state: _RunState, spec: ChunkSpec) -> WorkItem:
        """The queued unit: a :class:`ChunkSpec`, the plain data a Celery task carries too."""
        fn = functools.partial(self._run_chunk, state, spec)
        return WorkItem(spec.tenant_id, spec.run_id, fn=fn, payload=spec)

    def _along(self, state: _RunState, spec: ChunkSpec) -> tuple[ChunkSpec, list[WorkItem]]:
        """``spec`` with the queued chunks that follow it taken along (see
        :data:`~engine.runs.work.ALONG_SECONDS`): the same check's, each starting where the
        last ends. Nothing is taken along while a ``/v1/score`` request waits."""
        with state.lock:
            pace = state.pace.get(spec.check_index)
        room = along_room(pace, len(spec.rows), self.settings.table_job_max_rows)
        if room <= 0:
            return spec, []
        stop = spec.rows[-1] + 1

        def follows(item: WorkItem) -> bool:
            nonlocal stop, room
            other = item.payload
            if (
                not isinstance(other, ChunkSpec)
                or other.check_index != spec.check_index
                or other.limits != spec.limits
                or not other.rows
                or other.rows[0] != stop
                or len(other.rows) > room
            ):
                return False
            stop, room = other.rows[-1] + 1, room - len(other.rows)
            return True

        along = self.scheduler.take_along(spec.tenant_id, spec.run_id, room, follows)
        if not along:
            return spec, []
        rows = spec.rows + tuple(i for item in along for i in item.payload.rows)
        return dataclasses.replace(spec, rows=rows), along

    def _run_chunk(self, state: _RunState, spec: ChunkSpec) -> None:
        run = state.run
        along: list[WorkItem] = []
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
            spec, along = self._along(state, spec)
            check = state.plan.resolved[spec.check_index]
            began = time.monotonic()
            outcome = execute_chunk(
                self.store, self.executors, self.metrics, spec, check, lambda: state.stopped
            )
            if outcome.scored:
                with state.lock:
                    state.pace[spec.check_index] = (time.monotonic() - began) / outcome.scored
            if outcome.usage:
                with state.lock:
                    self.store.add_run_usage(run.id, outcome.usage)
            with state.lock:
                state.storage_down_since = None
                state.storage_failures = 0
        except ChunkStopped:
            pass
        except StorageError as exc:
            again = functools.partial(self._resubmit, state, spec)
            if not self._retry_later(state, exc, again):
                self._fail(state, f"the database stayed unavailable: {exc}")
        except ScoreboxError as exc:
            self._fail(state, str(exc))
        except Exception as exc:
            log.exception("run %s: chunk failed", run.id)
            self._fail(state, f"internal error: {exc.__class__.__name__}: {exc}")
        finally:
            for item in along:
                item.finished.set()
            with state.lock:
                state.pending -= 1 + len(along)  # a retry counted its merged chunk again
                done = state.pending == 0
            if done and not state.stopped:
                self._settle_or_retry(state)

    def _resubmit(self, state: _RunState, spec: ChunkSpec) -> None:
        self.scheduler.submit(self._item(state, spec))

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

    def _settle_or_retry(self, state: _RunState) -> None:
        try:
            self._settle(state)
        except StorageError as exc:

            def again() -> None:
                with state.lock:
                    state.pending -= 1
                self._settle_or_retry(state)

            if not self._retry_later(state, exc, again):
                log.error(
                    "run %s: cannot complete, the database is unavailable: %s", state.run.id, exc
                )

    def _settle(self, state: _RunState) -> None:
        """Every chunk has run: the service finishes the run or names chunks to run again."""
        try:
            again = self.hooks.settle(state.plan, retried=state.retried)
        except RunIncomplete as exc:
            self._fail(state, str(exc))
            return
        if not again:
            self._forget(state.run.id)
            return
        state.retried = True
        self._submit(state, again)

    def _fail(self, state: _RunState, error: str) -> None:
        with state.lock:
            if state.stopped:
                return
            state.stopped = True
        self.scheduler.drop_group(state.run.tenant_id, state.run.id)
        self._finish(state.run.id, RunStatus.FAILED, error)

    def _finish(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        self._forget(run_id)
        self.hooks.finish(run_id, status, error)

    def _forget(self, run_id: str) -> None:
        with self._states_lock:
            self._states.pop(run_id, None)

    def cancel_run(self, run: Run) -> None:
        with self._states_lock:
            state = self._states.pop(run.id, None)
        if state is not None:
            with state.lock:
                state.stopped = True
            self.scheduler.drop_group(run.tenant_id, run.id)

    # ---- /v1/score ----------------------------------------------------------------------

    def score(self, batch: ScoreBatch) -> BatchResults:
        """The batch's chunks as interactive items, ahead of every tenant's runs."""
        results: BatchResults = [[None] * len(batch.rows) for _ in batch.checks]
        group = f"score:{secrets.token_hex(6)}"
        # The batch's label keys its one gateway quota: every check and chunk share it.
        labels = {"scorebox.tenant": batch.tenant_id, "scorebox.batch": group}
        items: list[WorkItem] = []
        for ci, chunk in batch.chunks:

            def deliver(index: int, result: RowResult, ci: int = ci) -> None:
                results[ci][index] = result

            fn = functools.partial(
                score_batch,
                self.executors,
                self.metrics,
                batch.checks[ci],
                chunk,
                batch.limits[ci],
                labels,
                deliver,
            )
            items.append(WorkItem(batch.tenant_id, group, interactive=True, fn=fn))
        if len(items) == 1 and self.scheduler.claim(items[0]):
            # a scoring thread is idle and nothing is queued: run it here, as that thread
            # would at once, sparing the hand-off to it and the wake-up back
            self._run_item(items[0])
        else:
            self._hand_over(batch, items)
        for item in items:
            item.finished.wait()
            if item.error is not None:
                raise item.error
        return results

    def _hand_over(self, batch: ScoreBatch, items: list[WorkItem]) -> None:
        """Queue a batch's items for the scoring threads; if none has started when the
        tenant's wait is over, take them back and refuse the batch (HTTP 429)."""
        for item in items:
            self.scheduler.submit(item)
        wait = self.settings.score_wait_seconds
        deadline = batch.started_at + wait
        # Waiting on the first item's end, not its start, spares this thread a wake-up
        # between the two (one row's whole round trip is shorter than the wait): only
        # when the wait ends with the item not even started is the batch taken back.
        first = items[0]
        left = max(0.0, deadline - time.monotonic())
        if not first.finished.wait(left) and not first.started.is_set():
            withdrawn = [self.scheduler.withdraw(item) for item in items]
            if all(withdrawn):
                raise QuotaExceededError(
                    f"no sandbox slot freed up for this tenant within {wait:g}s (quota: "
                    f"{self.hooks.quotas(batch.tenant_id).concurrent_jobs} concurrent jobs): "
                    "retry later",
                    retry_after_seconds=max(1, int(wait)),
                )
            for item, gone in zip(items, withdrawn, strict=True):
                if gone:
                    self.scheduler.submit(item)
