"""Feeding the broker from the chunk ledger: one fair pass at a time, from any node."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from engine.distributed.celery_app import CHUNK_QUEUE, queue_of
from engine.distributed.chunks import ChunkKey
from engine.distributed.ledger import ChunkLedger
from engine.errors import ScoreboxError
from engine.logs import Repeated
from engine.settings import Settings
from engine.storage import TenantStore
from engine.tenancy.quotas import Quotas, default_quotas, effective_quotas

log = logging.getLogger("scorebox.distributed")

#: How often a worker's refills also re-queue expired leases and drop stopped runs' chunks:
#: the API nodes' loop does that every dispatch interval, a worker's refill after each of
#: its chunks only sends (this keeps it going while no API node is up).
HOUSEKEEPING_SECONDS = 5.0


class QuotaCache:
    """Tenants' effective quotas from PostgreSQL, cached for a few seconds."""

    def __init__(self, settings: Settings, store: TenantStore, ttl_seconds: float = 5.0) -> None:
        self.settings = settings
        self.store = store
        self.ttl = ttl_seconds
        self._cache: dict[str, tuple[float, Quotas]] = {}

    def quotas(self, tenant_id: str) -> Quotas:
        hit = self._cache.get(tenant_id)
        if hit is not None and time.monotonic() - hit[0] < self.ttl:
            return hit[1]
        try:
            value = effective_quotas(self.settings, self.store.get_tenant(tenant_id).quotas)
        except ScoreboxError:
            value = default_quotas(self.settings)
        self._cache[tenant_id] = (time.monotonic(), value)
        return value

    def concurrent_jobs(self, tenant_id: str) -> int:
        return self.quotas(tenant_id).concurrent_jobs

    def runsc_only(self, tenant_id: str) -> bool:
        """Whether the tenant's work goes to runsc workers only."""
        return self.quotas(tenant_id).runsc_only > 0


def chunk_queue(quotas: QuotaCache, message: dict[str, Any]) -> str:
    """The broker queue of a dispatched chunk: runsc-only tenants' go where runsc workers look."""
    return queue_of(CHUNK_QUEUE, quotas.runsc_only(str(message["spec"]["tenant_id"])))


class Dispatcher:
    """Runs dispatch passes and sends their messages; ``loop`` re-queues on a timer."""

    def __init__(
        self,
        settings: Settings,
        ledger: ChunkLedger,
        quotas: QuotaCache,
        send: Callable[[dict[str, Any]], None],
        on_poison: Callable[[str, str], None] | None = None,
        before_pass: Callable[[], None] | None = None,
        on_requeued: Callable[[str, int], None] | None = None,
        stocked: Callable[[], int] | None = None,
    ) -> None:
        """``on_requeued(reason, n)``: ``n`` chunks made pending again (metrics);
        ``stocked()``: how many queued chunks of a tenant spare it a refill (see
        :meth:`refill`; None: a refill always passes)."""
        self.settings = settings
        self.ledger = ledger
        self.quotas = quotas
        self._send = send
        self._on_poison = on_poison
        self._before_pass = before_pass
        # a database or broker outage fails every pass: one warning a minute, not a traceback
        self._failures = Repeated(log, "dispatch pass", settings.log_repeat_seconds)
        self._on_requeued = on_requeued or (lambda reason, n: None)
        self._stocked = stocked
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._housekept = float("-inf")  # when refill() last did housekeeping (monotonic)

    def pass_once(self, *, housekeeping: bool = True) -> int:
        """One pass; returns how many chunks were sent (0 when another pass held the lock).

        ``housekeeping=False``: only send pending chunks (a worker refilling after its
        chunks); expired leases, stopped runs and poison chunks are the loop's."""
        messages = self.ledger.dispatch(
            self.quotas.concurrent_jobs,
            self.settings.queue_lease_seconds,
            self._on_poison,
            lambda n: self._on_requeued("lease_expired", n),
            housekeeping=housekeeping,
            window=self.settings.table_job_max_rows,
        )
        sent = 0
        unsent: list[dict[str, Any]] = []
        for message in messages or []:
            if unsent:  # the broker refused one: do not wait on it for each of the others
                unsent.append(message)
                continue
            try:
                self._send(message)
                sent += 1
            except Exception as exc:
                log.warning("could not send chunk %s: %s", message["key"], exc)
                unsent.append(message)
        for message in unsent:  # pending again: the next pass sends them, not the lease
            self.ledger.unqueue(ChunkKey(*message["key"]), int(message["epoch"]))
        if unsent:
            self._on_requeued("send_failed", len(unsent))
        return sent

    def refill(self, tenants: Collection[str] = ()) -> int:
        """A pass after chunks of ``tenants`` settled: sends pending chunks, with
        housekeeping at most every :data:`HOUSEKEEPING_SECONDS` (its statements are most
        of a pass's work).

        No pass at all (0) while each of ``tenants`` still has ``stocked()`` chunks queued
        in the broker: the slot a settled chunk freed is its tenant's, and that tenant's
        workers have queued work in hand until a later settle (or the API nodes' loop, every
        ``dispatch_interval_seconds``) refills it. One count of queued chunks instead of a
        pass after every chunk: the pass cost a worker more than the chunk's other
        statements together.
        """
        now = time.monotonic()
        due = now - self._housekept >= HOUSEKEEPING_SECONDS
        if not due and tenants and self._stocked is not None:
            least = self._stocked()
            queued = self.ledger.queued_of(tenants)
            if all(queued.get(tenant, 0) >= least for tenant in tenants):
                return 0
        if due:
            self._housekept = now
        return self.pass_once(housekeeping=due)

    def nudge(self) -> None:
        """Ask the loop for a pass now (new run, finished chunk)."""
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="scorebox-dispatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.settings.dispatch_interval_seconds)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self._before_pass is not None:
                    self._before_pass()
                self.pass_once()
            except Exception as exc:  # the database may be restarting: try again next tick
                self._failures.failed(exc)
            else:
                self._failures.ok()
