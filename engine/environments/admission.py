"""Who may build an environment, and when: builds in flight per tenant, slots in turn.

Two bounds on the work a push can start. :class:`InFlight` records which requirement sets
each tenant has being built, so the ``environments`` quota counts them with the sets its
checks declare (five spellings pushed in half a second are five builds: the third is
refused). :class:`FairSlots` caps the builds running at once in a process
(SCOREBOX_ENV_MAX_CONCURRENT_BUILDS); builds past it wait, and a freed slot goes to the
tenant served least recently, so one tenant's queue of builds never holds the others back.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator

Requirements = tuple[str, ...]


class InFlight:
    """Requirement sets being built, per tenant (a tenant's pushes are admitted one at a
    time, so two concurrent pushes cannot both pass the quota)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._building: dict[str, dict[Requirements, int]] = {}
        self._admitting: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def admitting(self, tenant: str) -> Iterator[None]:
        """Hold ``tenant``'s admission: count, store the check, start its build."""
        with self._guard:
            lock = self._admitting.setdefault(tenant, threading.Lock())
        with lock:
            yield

    def of(self, tenant: str) -> set[Requirements]:
        """The requirement sets ``tenant`` has being built now."""
        with self._guard:
            return set(self._building.get(tenant, {}))

    def add(self, tenant: str, requirements: Requirements) -> None:
        """A build of ``requirements`` for ``tenant`` starts (or is queued)."""
        with self._guard:
            sets = self._building.setdefault(tenant, {})
            sets[requirements] = sets.get(requirements, 0) + 1

    def done(self, tenant: str, requirements: Requirements) -> None:
        """That build ended (built or failed)."""
        with self._guard:
            sets = self._building.get(tenant, {})
            left = sets.get(requirements, 0) - 1
            if left > 0:
                sets[requirements] = left
            else:
                sets.pop(requirements, None)
            if not sets:
                self._building.pop(tenant, None)


class FairSlots:
    """At most ``size`` holders at once; waiters are served round-robin across tenants."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._cond = threading.Condition()
        #: tenant -> its waiting tickets, tenants in the order they first waited
        self._queues: OrderedDict[str, deque[object]] = OrderedDict()
        #: tenant -> when it was last served (a counter): the least recently served goes next
        self._served: dict[str, int] = {}
        self._turn = 0

    @property
    def busy(self) -> int:
        """Slots held now."""
        with self._cond:
            return self.size - self._free

    def waiting(self) -> int:
        """Waiters across tenants."""
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def acquire(self, tenant: str, timeout: float) -> bool:
        """Take a slot for ``tenant`` when its turn comes; False after ``timeout``."""
        ticket = object()
        deadline = time.monotonic() + timeout
        with self._cond:
            self._queues.setdefault(tenant, deque()).append(ticket)
            while True:
                if self._free > 0 and self._head() is ticket:
                    queue = self._queues.pop(tenant)
                    queue.popleft()
                    if queue:
                        self._queues[tenant] = queue
                    self._turn += 1
                    if len(self._served) > 10_000:  # only the order matters: start afresh
                        self._served.clear()
                    self._served[tenant] = self._turn
                    self._free -= 1
                    self._cond.notify_all()
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    waiting = self._queues.get(tenant)
                    if waiting is not None:
                        waiting.remove(ticket)
                        if not waiting:
                            self._queues.pop(tenant)
                    self._cond.notify_all()
                    return False
                self._cond.wait(left)

    def release(self) -> None:
        """Give a slot back."""
        with self._cond:
            self._free = min(self.size, self._free + 1)
            self._cond.notify_all()

    def _head(self) -> object | None:
        """The next ticket: the first waiter of the least recently served tenant."""
        waiting = [(self._served.get(t, 0), i, q) for i, (t, q) in enumerate(self._queues.items())]
        waiting = [entry for entry in waiting if entry[2]]
        return min(waiting, key=lambda entry: entry[:2])[2][0] if waiting else None
