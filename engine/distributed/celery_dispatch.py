"""Distributed mode's dispatch: an API node stores and queues, ``scorebox worker`` hosts score.

A run's chunks go to the chunk ledger in PostgreSQL (durable from the 202 on), and
the ledger feeds the broker fairly. Every API node runs the same dispatch loop: it
plans runs whose node died before planning them, re-queues chunks whose lease
expired and tops each tenant up to ``concurrent_jobs`` chunks in flight. Workers
finish runs (:meth:`engine.distributed.worker.WorkerRuntime.run_chunk`).
``/v1/score`` goes to the high-priority queue and waits for the worker's reply on
Redis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine import errors
from engine.catalog import ResolvedCheck
from engine.distributed.celery_app import (
    CHUNK_TASK,
    SCORE_QUEUE,
    SCORE_TASK,
    queue_of,
    send,
    workers_seen,
)
from engine.distributed.chunks import ledger_rows
from engine.distributed.dispatch import Dispatcher, QuotaCache, chunk_queue
from engine.distributed.ledger import ChunkLedger
from engine.distributed.preflight import masked_url
from engine.distributed.replies import Replies, new_reply_key
from engine.errors import QuotaExceededError, SandboxError, ScoreboxError
from engine.models import RowResult
from engine.runs.dispatch import BatchResults, RunHooks, RunPlan, ScoreBatch
from engine.runs.metrics import ClusterView, Metrics
from engine.settings import Settings
from engine.storage import Run, RunStatus, Store

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy import Engine as SAEngine

log = logging.getLogger("scorebox.distributed")

#: A run with no chunk rows this long after its creation lost its API node: plan it.
ORPHAN_AFTER_SECONDS = 5.0


#: Outcomes of ``/v1/score`` (``scorebox_score_requests_total{outcome}``) besides ok/error.
NO_WORKER_FREE, TENANT_BUSY, BROKER_UNREACHABLE = (
    "no_worker_free",
    "tenant_busy",
    "broker_unreachable",
)


class _Refused(Exception):
    """A ``/v1/score`` request refused for ``outcome``; ``error`` is what the caller sees."""

    def __init__(self, outcome: str, error: ScoreboxError) -> None:
        super().__init__(str(error))
        self.outcome = outcome
        self.error = error


def _error(record: Mapping[str, Any]) -> ScoreboxError:
    kind = errors.error_named(str(record.get("type")))
    message = str(record.get("error") or "the worker failed")
    if kind is not None:
        try:
            return kind(message)
        except TypeError:
            pass
    return SandboxError(message)


def _unsaved_source(check: ResolvedCheck) -> str | None:
    """The source of an unsaved code check (no stored version), else None."""
    if check.kind == "code" and check.id is None and check.check is not None:
        return check.check.source
    return None


class CeleryDispatch:
    """A :class:`~engine.runs.dispatch.Dispatch` onto ``scorebox worker`` hosts (no sandbox
    work on this node)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        metrics: Metrics,
        celery: Celery,
        db: SAEngine,
    ) -> None:
        """``db``: the engine ``store`` is on, where the chunk ledger's table is."""
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.celery = celery
        self.ledger = ChunkLedger(db)
        self.replies = Replies(settings.broker_url or "")
        self._hooks: RunHooks | None = None
        quotas = QuotaCache(settings, store)
        self.dispatcher = Dispatcher(
            settings,
            self.ledger,
            quotas,
            lambda m: send(celery, CHUNK_TASK, chunk_queue(quotas, m), m),
            on_poison=self._poisoned,
            before_pass=self._before_pass,
            on_requeued=lambda reason, n: metrics.chunks_requeued.labels(reason).inc(n),
        )

    @property
    def hooks(self) -> RunHooks:
        if self._hooks is None:
            raise RuntimeError("CeleryDispatch used before a RunService attached it")
        return self._hooks

    def attach(self, hooks: RunHooks) -> None:
        self._hooks = hooks

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the dispatch loop (no sandbox work here; the ledger holds active runs)."""
        self.metrics.watch_cluster(self.cluster_view)
        self.dispatcher.start()
        self.dispatcher.nudge()

    def stop(self) -> None:
        self.dispatcher.stop()
        self.replies.close()

    def queue_depth(self) -> int:
        """Chunks of every node waiting for a worker: pending or in the broker."""
        counts = self._chunk_counts()
        return counts.get("pending", 0) + counts.get("queued", 0)

    def jobs_in_flight(self) -> int:
        """Chunks being scored on any worker."""
        return self._chunk_counts().get("running", 0)

    def cluster_view(self) -> ClusterView | None:
        """The ledger's and the broker's figures for ``/metrics`` (None: the database is away)."""
        try:
            chunks, oldest = self.ledger.by_tenant()
        except ScoreboxError:
            return None
        try:
            announced = self.replies.announced()
        except ScoreboxError:
            return ClusterView(chunks, oldest, None)
        workers: dict[str, int] = {}
        for info in announced.values():
            runtime = str(info.get("runtime") or "default")
            workers[runtime] = workers.get(runtime, 0) + 1
        return ClusterView(chunks, oldest, workers)

    def workers(self) -> dict[str, dict[str, Any]] | None:
        """Workers that answer ``ping``, with their pools (what ``scorebox doctor`` lists)."""
        return workers_seen(self.celery)

    def _chunk_counts(self) -> dict[str, int]:
        try:
            return self.ledger.counts(("pending", "queued", "running"))
        except ScoreboxError:  # a scrape must not fail because the database hiccuped
            return {}

    # ---- runs ---------------------------------------------------------------------------

    def submit_run(self, plan: RunPlan) -> None:
        """The run's chunks into the ledger (each a row range; a worker scores the rows of
        its range still without a result), then a pass that only sends, in the request:
        the run's first chunks are in the broker before its ``202``, as an embedded node
        starts scoring before it (the loop's wake-up, its broker and orphan checks and its
        housekeeping took 5 to 26 ms before the first send). The loop's pass is asked for
        when this one sent nothing (another node's pass held the lock, the tenant's slots
        are taken, or the database or broker failed it): the run is in the ledger either
        way, and a chunk the broker refused is pending again for the loop's next pass."""
        self.ledger.insert(ledger_rows(plan.chunks))
        try:
            sent = self.dispatcher.pass_once(housekeeping=False)
        except Exception as exc:  # the loop tries again (and warns if it keeps failing)
            log.debug("the send at submit of run %s failed: %s", plan.run.id, exc)
            sent = 0
        if not sent:
            self.dispatcher.nudge()

    def _before_pass(self) -> None:
        self._requeue_if_broker_restarted()
        self._plan_orphans()

    def _requeue_if_broker_restarted(self) -> None:
        """Send again at once what a broker that lost its data held (not after the lease).

        One node sees the broker's marker missing (:meth:`Replies.broker_lost_data`), so
        one warning is logged per restart.
        """
        if not self.replies.broker_lost_data():
            return
        requeued = self.ledger.requeue_queued()
        if requeued:
            self.metrics.broker_restarts.inc()
            self.metrics.chunks_requeued.labels("broker_restarted").inc(requeued)
            log.warning(
                "the broker at %s lost its queues (restarted without persistence, or "
                "flushed): %d queued chunks sent again",
                masked_url(self.settings.broker_url or ""),
                requeued,
            )
        else:
            log.info(
                "the broker at %s is new to this cluster",
                masked_url(self.settings.broker_url or ""),
            )

    def _plan_orphans(self) -> None:
        for tenant_id, run_id in self.ledger.unplanned_runs(ORPHAN_AFTER_SECONDS):
            run = self.store.get_run(tenant_id, run_id)
            try:
                self.submit_run(self.hooks.plan(run))
                log.info("planned run %s (its API node stopped before queueing it)", run_id)
            except ScoreboxError as exc:
                self.hooks.finish(run_id, RunStatus.FAILED, f"cannot queue: {exc}")

    def _poisoned(self, run_id: str, error: str) -> None:
        self.hooks.finish(run_id, RunStatus.FAILED, error)

    def cancel_run(self, run: Run) -> None:
        """Queued chunks are dropped; running ones stop at their next write."""
        self.ledger.drop_run(run.id)
        self.dispatcher.nudge()

    # ---- /v1/score ----------------------------------------------------------------------

    def score(self, batch: ScoreBatch) -> BatchResults:
        """Score a batch on a worker through the high-priority queue.

        ``/v1/score`` and the generator's self-tests (unsaved code) both come here: an
        API node runs no sandbox work. Each tenant has at most ``concurrent_jobs``
        requests in flight across all API nodes; past that a request waits up to
        ``score_wait_seconds``, then 429.
        """
        outcome = "error"
        try:
            results = self._score_in_slot(batch)
            outcome = "ok"
            return results
        except _Refused as refused:
            outcome = refused.outcome
            raise refused.error from refused.__cause__
        finally:
            self.metrics.score_requests.labels(outcome).inc()
            if outcome != "ok":  # a success is observed with its results, by the service
                self.metrics.score_seconds.observe(time.monotonic() - batch.started_at)

    def _score_in_slot(self, batch: ScoreBatch) -> BatchResults:
        reply = new_reply_key()
        wait = self.settings.score_wait_seconds
        timeout = self._score_timeout(batch)
        quota = self.hooks.quotas(batch.tenant_id).concurrent_jobs
        try:
            taken = self.replies.take_slot(batch.tenant_id, reply, quota, wait + timeout, wait)
        except SandboxError as exc:
            raise _Refused(BROKER_UNREACHABLE, exc) from exc
        if not taken:
            raise _Refused(
                TENANT_BUSY,
                QuotaExceededError(
                    f"this tenant already has {quota} /v1/score requests in flight (quota: "
                    f"{quota} concurrent jobs) and none finished within {wait:g}s: retry later",
                    retry_after_seconds=max(1, int(wait)),
                ),
            )
        try:
            return self._score_remote(batch, reply)
        finally:
            try:
                self.replies.free_slot(batch.tenant_id, reply)
            except SandboxError as exc:  # the slot expires on its own
                log.warning("could not free a /v1/score slot: %s", exc)

    def _score_remote(self, batch: ScoreBatch, reply: str) -> BatchResults:
        wait = max(0.1, self.settings.score_wait_seconds - (time.monotonic() - batch.started_at))
        message = {
            "tenant_id": batch.tenant_id,
            "checks": [c.to_run_check().to_json() for c in batch.checks],
            # unsaved code (the generator's attempts) has no stored version to load
            "sources": [_unsaved_source(c) for c in batch.checks],
            "limits": [limits.model_dump(mode="json") for limits in batch.limits],
            "rows": [r.model_dump(mode="json") for r in batch.rows],
            "chunk_rows": batch.chunk_rows,
            "reply": reply,
        }
        try:
            queue = queue_of(SCORE_QUEUE, self.hooks.quotas(batch.tenant_id).runsc_only > 0)
            send(self.celery, SCORE_TASK, queue, message, expires=wait)
        except Exception as exc:  # kombu's connection errors: the broker is down
            raise _Refused(
                BROKER_UNREACHABLE,
                SandboxError(
                    f"the broker at {masked_url(self.settings.broker_url or '')} is not reachable"
                    f" ({exc.__class__.__name__}: {exc}): retry; operators: check Redis and "
                    "SCOREBOX_BROKER_URL (`scorebox doctor`)"
                ),
            ) from exc
        try:
            started = self.replies.wait(reply, wait)
        except SandboxError as exc:
            raise _Refused(BROKER_UNREACHABLE, exc) from exc
        if started is None:
            raise _Refused(
                NO_WORKER_FREE,
                QuotaExceededError(
                    f"no worker free: none took this request within {wait:g}s (every worker "
                    "slot busy, or no worker running): retry later, or submit a run (POST "
                    "/v1/runs); operators: `scorebox doctor` lists the workers the broker sees",
                    retry_after_seconds=max(1, int(self.settings.score_wait_seconds)),
                ),
            )
        record = self.replies.wait(reply, self._score_timeout(batch))
        if record is None:
            raise SandboxError("the worker scoring this request stopped answering: retry")
        if "error" in record:
            raise _error(record)
        return [
            [None if r is None else RowResult.model_validate(r) for r in per_check]
            for per_check in record["results"]
        ]

    def _score_timeout(self, batch: ScoreBatch) -> float:
        """A generous bound for one request's work (the sandbox enforces the real limits)."""
        size = max(1, batch.chunk_rows)
        per_job = self.settings.limits.job_wall_seconds(size)
        jobs = max(1, -(-len(batch.rows) // size)) * len(batch.checks)
        return 60.0 + jobs * per_job
