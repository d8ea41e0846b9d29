"""``scorebox worker``'s runtime: claims chunks, scores them on this host's sandbox, stores results.

One :class:`WorkerRuntime` per worker process holds the sandbox runner (with
its own warm pool), the executors and a heartbeat that renews the leases of
the chunks in hand. Chunks and ``/v1/score`` requests run through the same
functions as the embedded scheduler (:mod:`engine.runs.work`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from engine.catalog import ResolvedCheck, unsaved_code_check
from engine.contract import OutputType
from engine.distributed.after import AfterChunks, Settled
from engine.distributed.celery_app import CHUNK_TASK, send
from engine.distributed.chunks import DONE, DROPPED, Along, ChunkKey
from engine.distributed.dispatch import Dispatcher, QuotaCache, chunk_queue
from engine.distributed.known_runs import KnownRuns
from engine.distributed.ledger import ChunkLedger
from engine.distributed.replies import Replies
from engine.environments.build import Environments
from engine.environments.hosts import host_snapshot
from engine.errors import ScoreboxError, StorageError
from engine.logs import Repeated
from engine.models import IndexedRow, Limits, Row, RowResult
from engine.runs.summary import store_summary
from engine.runs.wiring import build_scoring
from engine.runs.work import (
    ChunkSpec,
    ChunkStopped,
    along_room,
    consecutive_jobs,
    execute_chunk,
    resolve_run_check,
    score_batch,
)
from engine.settings import Settings
from engine.storage import RunCheck, RunStatus, SqlStore, Store, create_db_engine

if TYPE_CHECKING:
    from celery import Celery

    from engine.sandbox.runner import SandboxRunner

log = logging.getLogger("scorebox.worker")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def sandbox_runtime(settings: Settings) -> str:
    """The OCI runtime this worker's sandboxes use: SCOREBOX_RUNTIME, else the engine's default."""
    if settings.runtime:
        return settings.runtime
    from engine.sandbox.docker.containers import default_runtime  # noqa: PLC0415 (lazy: the docker SDK is the sandbox's)

    return default_runtime(settings) or "runc"


#: How often a worker renews its leases and announces itself (at most).
BEAT_SECONDS = 5.0

#: How long a worker trusts its last look at whether a run stopped (cancelled, failed).
STOP_CHECK_SECONDS = 0.5

#: A tenant with this many queued chunks per slot of this worker needs no refill after its
#: chunk settled here (:meth:`engine.distributed.dispatch.Dispatcher.refill`): the broker
#: holds its next chunks for every slot, twice over, until a later settle refills it.
STOCK_PER_SLOT = 2


class WorkerRuntime:
    """Everything one worker process needs; thread-safe (Celery's threads pool calls it)."""

    def __init__(
        self,
        settings: Settings,
        celery: Celery,
        *,
        runner_factory: Callable[[Settings], SandboxRunner] | None = None,
    ) -> None:
        self.settings = settings
        # a database outage fails every lease renewal: one warning a minute, not a traceback
        self._renewals = Repeated(log, "renewing chunk leases", settings.log_repeat_seconds)
        self.name = worker_name()
        self.runtime = sandbox_runtime(settings)
        self.concurrency = 0  # set by ``scorebox worker`` before it starts consuming
        self.db = create_db_engine(settings.effective_database_url)
        self.store: Store = SqlStore(self.db)
        self.ledger = ChunkLedger(self.db)
        self.replies = Replies(settings.broker_url or "")
        # the worker answers its own containers' model calls (the gateway in Scoring)
        self.scoring = build_scoring(
            settings, db=self.db, store=self.store, runner_factory=runner_factory
        )
        self.metrics = self.scoring.metrics
        self.runners = self.scoring.runners
        self.builtins = self.scoring.builtins
        self.executors = self.scoring.executors
        quotas = QuotaCache(settings, self.store)
        self.dispatcher = Dispatcher(
            settings,
            self.ledger,
            quotas,
            lambda m: send(celery, CHUNK_TASK, chunk_queue(quotas, m), m),
            on_poison=self.fail_run,
            on_requeued=lambda reason, n: self.metrics.chunks_requeued.labels(reason).inc(n),
            stocked=lambda: STOCK_PER_SLOT * max(1, self.concurrency),
        )
        self._checks: dict[tuple[str, str], ResolvedCheck] = {}
        # runs marked running here (once is enough) and whether they stopped (a cancel is
        # seen within STOP_CHECK_SECONDS)
        self._runs = KnownRuns()
        # settling, finishing runs and refilling happen off the slot (engine.distributed.after)
        self._after = AfterChunks(self._settle, self._complete, self.dispatcher.refill)
        self._held: dict[ChunkKey, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="scorebox-score")
        self._heartbeat = threading.Thread(target=self._beat, name="scorebox-lease", daemon=True)
        self._heartbeat.start()

    def warm(self) -> None:
        """Start the sandbox runner and its warm pool now (first chunks start fast)."""
        try:
            self.runners.get().prewarm()
        except ScoreboxError as exc:
            log.warning("sandbox not available yet: %s", exc)

    def close(self) -> None:
        self._after.close()
        self._stop.set()
        self._heartbeat.join(timeout=10)
        with contextlib.suppress(ScoreboxError):  # else the announcement expires on its own
            self.replies.retire(self.name)
        self._pool.shutdown(wait=True)
        self.scoring.close()
        self.replies.close()
        self.db.dispose()

    # ---- leases -------------------------------------------------------------------------

    def _beat(self) -> None:
        interval = max(0.2, min(BEAT_SECONDS, self.settings.chunk_lease_seconds / 3))
        while True:
            with self._lock:
                held = list(self._held.items())
            try:
                self.ledger.renew(held, self.settings.chunk_lease_seconds)
            except Exception as exc:  # the database may be restarting; the next beat retries
                self._renewals.failed(exc)
            else:
                self._renewals.ok()
            try:
                self.replies.announce(self.name, self.announcement())
            except ScoreboxError as exc:  # the broker may be restarting
                log.debug("could not announce this worker: %s", exc)
            self.publish_environments()
            if self._stop.wait(interval):
                return

    def announcement(self) -> dict[str, Any]:
        """What ``/metrics`` on the API nodes counts this worker by."""
        with self._lock:
            held = len(self._held)
        return {
            "runtime": self.runtime,
            "concurrency": self.concurrency,
            "chunks_in_hand": held,
        }

    def publish_environments(self) -> None:
        """Publish this host's declared environments (what the API node shows per host)."""
        if not self.runners.started:  # no sandbox yet: nothing built here to speak of
            return
        try:
            environments = getattr(self.runners.get().backend, "environments", None)
            if not isinstance(environments, Environments):
                return
            self.replies.publish_environments(socket.gethostname(), host_snapshot(environments))
        except ScoreboxError as exc:  # Docker or the broker may be restarting: next beat
            log.debug("could not publish this host's environments: %s", exc)

    def serve_metrics(self, host: str, port: int) -> None:
        """Serve this worker's metrics (``/metrics``) on ``host:port`` from a daemon thread."""
        from prometheus_client import start_http_server  # noqa: PLC0415 (lazy: only with --metrics-port)

        self.metrics.watch_worker(self.chunks_in_hand, self.runners.pool_sizes)
        start_http_server(port, addr=host, registry=self.metrics.registry)
        log.info("metrics on http://%s:%d/metrics", host, port)

    def chunks_in_hand(self) -> int:
        with self._lock:
            return len(self._held)

    def pools(self) -> dict[str, Any]:
        with self._lock:
            held = len(self._held)
        return {
            "name": self.name,
            "runtime": self.runtime,
            "warm_pools": dict(self.runners.pool_sizes()),
            "chunks_in_hand": held,
        }

    # ---- checks -------------------------------------------------------------------------

    def resolve(self, tenant_id: str, rc: RunCheck) -> ResolvedCheck:
        """A run's check; stored versions are immutable, so they are cached by id."""
        if rc.id is None:
            return resolve_run_check(self.store, tenant_id, rc, self.builtins)
        key = (tenant_id, rc.id)
        with self._lock:
            found = self._checks.get(key)
        if found is None:
            found = resolve_run_check(self.store, tenant_id, rc, self.builtins)
            with self._lock:
                if len(self._checks) > 1000:
                    self._checks.clear()
                self._checks[key] = found
        return found

    def _score_check(self, tenant_id: str, rc: RunCheck, source: str | None) -> ResolvedCheck:
        """A ``/v1/score`` request's check: stored, built-in, or unsaved code (restricted)."""
        if source is None:
            return self.resolve(tenant_id, rc)
        output = OutputType(rc.output_data_type or OutputType.BOOL.value)
        return unsaved_code_check(tenant_id, source, output, rc.name)

    # ---- runs ---------------------------------------------------------------------------

    def fail_run(self, run_id: str, error: str) -> None:
        self._runs.saw(run_id, time.monotonic(), True)  # its chunks here stop at their next write
        self.store.set_run_status(run_id, RunStatus.FAILED, error)
        self.ledger.drop_run(run_id)
        self.metrics.runs.labels(RunStatus.FAILED.value).inc()

    def _stopper(self, run_id: str) -> Callable[[], bool]:
        """Whether the run stopped (cancelled, failed); asks the database at most twice a
        second per run, the answer shared by the run's chunks (one after the other too)."""

        def should_stop() -> bool:
            now = time.monotonic()
            seen = self._runs.stopped(run_id, now, STOP_CHECK_SECONDS)
            if seen is not None:
                return seen
            stopped = not self.ledger.run_active(run_id)
            self._runs.saw(run_id, now, stopped)
            return stopped

        return should_stop

    def run_chunk(self, message: dict[str, Any]) -> str:
        """The ``scorebox.chunk`` task: claim, take along, score the rows still missing,
        hand the chunks to settle."""
        key = ChunkKey(*message["key"])
        epoch = int(message["epoch"])
        if not self.ledger.claim(key, epoch, self.name, self.settings.chunk_lease_seconds):
            return "stale"
        with self._lock:
            self._held[key] = epoch
        spec = ChunkSpec.from_json(message["spec"])
        along = self._take_along(key, spec)
        chunks = [(key, epoch), *((a.key, a.epoch) for a in along)]
        error: str | None = None  # the run fails with it
        try:
            self._mark_running(spec.run_id)
            check = self.resolve(spec.tenant_id, spec.check)
            scored = already = 0
            began = time.monotonic()
            for job in consecutive_jobs(spec, [a.rows for a in along]):
                outcome = execute_chunk(
                    self.store, self.executors, self.metrics, job, check, self._stopper(job.run_id)
                )
                if outcome.usage:
                    self.store.add_run_usage(job.run_id, outcome.usage)
                scored += outcome.scored
                already += len(job.rows) - outcome.scored
            if scored:
                self._runs.set_pace(
                    spec.run_id, spec.check_index, (time.monotonic() - began) / scored
                )
            # one line a message (hundreds of rows or more), not a line a call: operators
            # follow runs by it
            log.info(
                "chunk %s:%d:%d epoch %d%s: %d rows scored, %d already had results",
                *key.as_tuple(),
                epoch,
                f" and {len(along)} taken along" if along else "",
                scored,
                already,
            )
            state = DONE
        except ChunkStopped:
            state = DROPPED
        except StorageError as exc:
            # The database went away (restarting, disk full): not the run's fault. The
            # chunks go back to pending (or, if even that cannot be written, their leases
            # expire) and are scored again, rows already stored skipped.
            log.warning("run %s: database unavailable, chunk handed back: %s", spec.run_id, exc)
            self._hand_back(chunks)
            return "deferred"
        except ScoreboxError as exc:
            state, error = DROPPED, str(exc)
        except Exception as exc:
            log.exception("run %s: chunk failed", spec.run_id)
            state, error = DROPPED, f"internal error: {exc.__class__.__name__}: {exc}"
        settled = [Settled(k, e, state, spec.tenant_id, spec.run_id) for k, e in chunks]
        if error is not None:
            self._fail_then_settle(settled, error)
        else:
            # settled on the after-chunk thread (their leases renewed until then): the slot
            # acknowledges the message now and takes its next chunk
            for chunk in settled:
                self._after.add(chunk)
        return state

    def _take_along(self, key: ChunkKey, spec: ChunkSpec) -> list[Along]:
        """The run's next chunks of ``spec``'s check that no worker has started, claimed to
        run with it (engine/runs/work.py's ``ALONG_SECONDS`` at the check's pace here); none
        for a check's first chunk here, a slow check, or when the ledger cannot say."""
        pace = self._runs.pace(spec.run_id, spec.check_index)
        room = along_room(pace, len(spec.rows), self.settings.table_job_max_rows)
        if not spec.rows or room < len(spec.rows):  # not even one more chunk of this size
            return []
        try:
            along = self.ledger.claim_along(
                key, room // len(spec.rows), self.name, self.settings.chunk_lease_seconds
            )
        except StorageError as exc:  # the chunk runs alone; the database may be restarting
            log.debug("could not take chunks along: %s", exc)
            return []
        with self._lock:
            for chunk in along:
                self._held[chunk.key] = chunk.epoch
        return along

    def _hand_back(self, chunks: list[tuple[ChunkKey, int]]) -> None:
        """Stop renewing the chunks' leases and make them pending again."""
        with self._lock:
            for key, _ in chunks:
                self._held.pop(key, None)
        try:
            self.ledger.release(chunks)
        except ScoreboxError as again:
            log.warning("could not hand the chunks back (their leases will expire): %s", again)

    def _fail_then_settle(self, chunks: list[Settled], error: str) -> None:
        """Fail the chunks' run, and settle the chunks even when that raised."""
        try:
            self.fail_run(chunks[0].run_id, error)
        finally:
            for chunk in chunks:
                self._after.add(chunk)

    def _settle(self, chunks: Sequence[Settled]) -> set[ChunkKey]:
        """Settle chunks this worker ran (a statement for each end state among them) and
        stop renewing their leases; returns those settled."""
        try:
            settled: set[ChunkKey] = set()
            for state in dict.fromkeys(c.state for c in chunks):
                ran = [(c.key, c.epoch) for c in chunks if c.state == state]
                settled |= self.ledger.settle_all(ran, state)
            return settled
        finally:
            with self._lock:
                for chunk in chunks:
                    if self._held.get(chunk.key) == chunk.epoch:
                        del self._held[chunk.key]

    def _mark_running(self, run_id: str) -> None:
        """The run is running (its first chunk here writes it; the others need not)."""
        if self._runs.marked_running(run_id):
            return
        self.store.set_run_status(run_id, RunStatus.RUNNING)
        self._runs.mark_running(run_id)

    def _complete(self, tenant_id: str, run_id: str) -> None:
        """Finish the run when its last chunk is done: succeeded, or its missing rows re-queued."""
        if self.ledger.unfinished(run_id):
            return
        run = self.store.get_run(tenant_id, run_id)
        if not run.status.active:
            return
        requeued = 0
        for check_index in range(len(run.checks)):
            missing = self.store.missing_rows(run_id, check_index)
            requeued += self.ledger.requeue_rows(run_id, check_index, missing)
        if requeued:
            log.warning("run %s: %d chunks re-queued for rows without a result", run_id, requeued)
            return
        if self.ledger.unfinished(run_id) == 0:
            finished = self.store.set_run_status(run_id, RunStatus.SUCCEEDED)
            self.metrics.runs.labels(RunStatus.SUCCEEDED.value).inc()
            store_summary(self.store, finished)  # once, here: its views read it

    # ---- /v1/score ----------------------------------------------------------------------

    def run_score(self, message: dict[str, Any]) -> str:
        """The ``scorebox.score`` task: score inline rows with each check, reply on Redis."""
        reply = str(message["reply"])
        self.replies.push(reply, {"started": self.name})
        try:
            tenant_id = str(message["tenant_id"])
            rows = [(i, Row.model_validate(r)) for i, r in enumerate(message["rows"])]
            size = max(1, int(message.get("chunk_rows") or len(rows)))
            # One gateway quota for the batch (its reply key is its own): every check and chunk.
            labels = {"scorebox.tenant": tenant_id, "scorebox.batch": reply}
            results: list[list[dict[str, Any] | None]] = [
                [None] * len(rows) for _ in message["checks"]
            ]
            units: list[tuple[int, ResolvedCheck, Limits, list[IndexedRow]]] = []
            sources = message.get("sources") or [None] * len(message["checks"])
            for ci, (rc, limits, source) in enumerate(
                zip(message["checks"], message["limits"], sources, strict=True)
            ):
                check = self._score_check(tenant_id, RunCheck.from_json(rc), source)
                chunk_limits = Limits.model_validate(limits)
                for start in range(0, len(rows), size):
                    units.append((ci, check, chunk_limits, rows[start : start + size]))

            def run_unit(
                ci: int, check: ResolvedCheck, limits: Limits, chunk: list[IndexedRow]
            ) -> None:
                def deliver(index: int, result: RowResult) -> None:
                    results[ci][index] = result.model_dump(mode="json")

                score_batch(self.executors, self.metrics, check, chunk, limits, labels, deliver)

            if len(units) == 1:
                run_unit(*units[0])
            else:
                for future in [self._pool.submit(run_unit, *unit) for unit in units]:
                    future.result()
            self.replies.push(reply, {"results": results})
            return "ok"
        except ScoreboxError as exc:
            self.replies.push(reply, {"error": str(exc), "type": exc.__class__.__name__})
            return "error"
        except Exception as exc:
            log.exception("/v1/score request failed")
            self.replies.push(
                reply,
                {
                    "error": f"internal error: {exc.__class__.__name__}: {exc}",
                    "type": "SandboxError",
                },
            )
            return "error"
