"""Fair dispatch of the checks' model calls: per-tenant queues served in turn.

A call waits in its tenant's queue, holding no thread, until the tenant has one of its
``per_tenant`` slots free, the process has one of its ``total`` slots free, and a thread
is free. A freed slot goes to the waiting tenant with the fewest calls running (ties in
turn, round robin), so a tenant flooding the gateway never delays another tenant's call
by more than the calls already running: it waits only behind its own. ``total`` keeps the
checks' calls from taking every slot of the LLM client the judges share.

Every call has an owner (one job's link to its container): :meth:`FairDispatcher.cancel`
drops the owner's queued calls, answering each at once, and forgets its running ones
(they finish upstream in their thread, and their replies go nowhere), so a job that ends
leaves nothing waiting behind it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: What a call cancelled before it ran is answered (the job that made it has ended).
CANCELLED = "the check's job ended before the model was called"


@dataclass(eq=False)
class Call:
    """One model call waiting for (or holding) a slot of its tenant."""

    tenant: str
    owner: object
    run: Callable[[], None]
    #: Answers the call without running it (its job ended); gets the reason.
    cancel: Callable[[str], None]


class FairDispatcher:
    """Runs calls on at most ``threads`` threads, ``per_tenant`` per tenant and ``total`` in
    all at once (``total`` None: as many as the threads)."""

    def __init__(
        self,
        threads: int,
        per_tenant: int,
        total: int | None = None,
        name: str = "scorebox-gateway",
    ) -> None:
        self.max_threads = max(1, threads)
        self.per_tenant = max(1, per_tenant)
        self.total = max(1, total) if total is not None else self.max_threads
        self.name = name
        self._cond = threading.Condition()
        self._queues: dict[str, deque[Call]] = {}
        self._turns: deque[str] = deque()  # tenants with queued calls, next in turn first
        self._running: Counter[str] = Counter()
        self._threads = 0
        self._idle = 0
        self._closed = False

    def submit(self, call: Call) -> None:
        """Queue ``call``; it runs once its tenant's turn comes with a slot free."""
        with self._cond:
            if self._closed:
                refused = True
            else:
                refused = False
                queue = self._queues.get(call.tenant)
                if queue is None:
                    queue = self._queues[call.tenant] = deque()
                    self._turns.append(call.tenant)
                queue.append(call)
                self._cond.notify()
                # A woken thread may not have taken its call yet: count calls, not wake-ups.
                waiting = sum(len(q) for q in self._queues.values())
                if waiting > self._idle and self._threads < self.max_threads:
                    self._threads += 1
                    threading.Thread(
                        target=self._work, name=f"{self.name}-{self._threads}", daemon=True
                    ).start()
        if refused:
            call.cancel("the model gateway is shutting down")

    def cancel(self, owner: object) -> int:
        """Drop ``owner``'s queued calls (each answered at once); how many were dropped."""
        dropped: list[Call] = []
        with self._cond:
            for tenant in list(self._queues):
                queue = self._queues[tenant]
                kept = deque(call for call in queue if call.owner is not owner)
                dropped += [call for call in queue if call.owner is owner]
                if kept:
                    self._queues[tenant] = kept
                else:
                    del self._queues[tenant]
                    self._turns.remove(tenant)
        for call in dropped:
            _safely(call.cancel, CANCELLED)
        return len(dropped)

    def queued(self, tenant: str) -> int:
        """Calls of ``tenant`` waiting for a slot."""
        with self._cond:
            return len(self._queues.get(tenant, ()))

    def running(self, tenant: str) -> int:
        """Calls of ``tenant`` holding a slot."""
        with self._cond:
            return self._running[tenant]

    def close(self) -> None:
        """Stop: queued calls are answered at once; running ones finish in their threads."""
        with self._cond:
            self._closed = True
            dropped = [call for queue in self._queues.values() for call in queue]
            self._queues.clear()
            self._turns.clear()
            self._cond.notify_all()
        for call in dropped:
            _safely(call.cancel, "the model gateway is shutting down")

    def _next(self) -> Call | None:
        """The next call to run (under the lock): of the tenants with a slot free, the one
        with the fewest calls running, the first in turn among equals."""
        if sum(self._running.values()) >= self.total:
            return None
        chosen: str | None = None
        for tenant in self._turns:
            running = self._running[tenant]
            if running < self.per_tenant and (chosen is None or running < self._running[chosen]):
                chosen = tenant
        if chosen is None:
            return None
        self._turns.remove(chosen)
        queue = self._queues[chosen]
        call = queue.popleft()
        if queue:
            self._turns.append(chosen)  # its next call waits for the others' turns
        else:
            del self._queues[chosen]
        self._running[chosen] += 1
        return call

    def _work(self) -> None:
        while True:
            with self._cond:
                call = self._next()
                while call is None:
                    if self._closed:
                        self._threads -= 1
                        return
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                    call = self._next()
            try:
                _safely(call.run)
            finally:
                with self._cond:
                    self._running[call.tenant] -= 1
                    if self._running[call.tenant] <= 0:
                        del self._running[call.tenant]
                    if self._turns:
                        self._cond.notify()  # a slot freed: a waiting tenant's call may go


def _safely(fn: Callable[..., None], *args: object) -> None:
    try:
        fn(*args)
    except Exception:  # one call's bug must not take the thread (or the other calls) down
        log.exception("a model gateway call failed")
