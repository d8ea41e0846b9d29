"""A fair scheduler of sandbox work across tenants (pure threading, no I/O).

Work items are grouped by tenant and, within a tenant, by group (a run, or one
``/v1/score`` request). Scoring threads take items in this order:

1. interactive items (``/v1/score``), round-robin across tenants;
2. run chunks, round-robin across tenants, then across runs of a tenant;

skipping tenants that already have ``concurrency(tenant)`` items in flight. A
huge run therefore yields after every chunk, and another tenant's request is
served by the next thread that frees up.

With a ``capacity`` (the number of scoring threads), a caller may :meth:`~FairScheduler.claim`
an item and run it on its own thread when an idle scoring thread would take it at once
(nothing queued, a thread free, the tenant below its concurrency): the same item runs in
the same order under the same limits, without two thread hand-offs. Claimed items count
against the capacity, so threads and claims together never run more than it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class WorkItem:
    """One unit of sandbox work: ``fn`` runs on a scoring thread."""

    tenant_id: str
    group: str
    fn: Callable[[], Any]
    interactive: bool = False
    #: What the item scores, for :meth:`FairScheduler.take_along` to match (a run's chunk)
    payload: Any = None
    started: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


@dataclass
class _TenantQueue:
    interactive: deque[WorkItem] = field(default_factory=deque)
    groups: OrderedDict[str, deque[WorkItem]] = field(default_factory=OrderedDict)

    def empty(self) -> bool:
        return not self.interactive and not self.groups


class FairScheduler:
    """Hands work items to scoring threads fairly; see the module docstring."""

    def __init__(self, concurrency: Callable[[str], int], capacity: int | None = None) -> None:
        self._concurrency = concurrency
        #: items in flight at most, taken and claimed alike (None: as many as threads take)
        self._capacity = capacity
        self._cond = threading.Condition()
        self._tenants: OrderedDict[str, _TenantQueue] = OrderedDict()
        self._inflight: Counter[str] = Counter()
        self._total = 0  # items in flight, every tenant's
        self._closed = False

    def submit(self, item: WorkItem) -> None:
        with self._cond:
            queue = self._tenants.setdefault(item.tenant_id, _TenantQueue())
            if item.interactive:
                queue.interactive.append(item)
            else:
                queue.groups.setdefault(item.group, deque()).append(item)
            if not self._full():
                # at capacity no thread can take it: the finish that frees a slot wakes
                # one (a thread woken now would find nothing and wait again, costing the
                # request that submitted a thread switch and the GIL)
                self._cond.notify()

    def _full(self) -> bool:
        return self._capacity is not None and self._total >= self._capacity

    def _pick(self, interactive: bool) -> WorkItem | None:
        if self._full():
            return None
        for tenant_id, queue in self._tenants.items():
            if self._inflight[tenant_id] >= max(1, self._concurrency(tenant_id)):
                continue
            if interactive:
                if not queue.interactive:
                    continue
                item = queue.interactive.popleft()
            else:
                if not queue.groups:
                    continue
                group, items = next(iter(queue.groups.items()))
                item = items.popleft()
                queue.groups.move_to_end(group)
                if not items:
                    del queue.groups[group]
            self._tenants.move_to_end(tenant_id)
            if queue.empty():
                del self._tenants[tenant_id]
            return item
        return None

    def take(self, timeout: float | None = None) -> WorkItem | None:
        """The next item for a thread (marked in flight), or None after ``timeout``/close."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                item = self._pick(interactive=True) or self._pick(interactive=False)
                if item is not None:
                    self._inflight[item.tenant_id] += 1
                    self._total += 1
                    item.started.set()
                    return item
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return None

    def finish(self, item: WorkItem) -> None:
        """A thread is done with ``item``.

        The slot it frees matters only to items still queued: with none, no waiting thread
        is woken (each wake-up of an idle thread costs the request that finished here a
        thread switch and the GIL, for a thread that finds nothing and waits again). With
        some, one thread is woken: one slot (of the capacity and of the item's tenant) is
        free, so one item at most can start, and any waiting thread may take any item.
        """
        with self._cond:
            self._inflight[item.tenant_id] -= 1
            self._total -= 1
            if self._inflight[item.tenant_id] <= 0:
                del self._inflight[item.tenant_id]
            item.finished.set()
            if self._tenants:  # a tenant held back at its concurrency may go on now
                self._cond.notify()

    def take_along(
        self, tenant_id: str, group: str, limit: int, match: Callable[[WorkItem], bool]
    ) -> list[WorkItem]:
        """Up to ``limit`` queued items of a tenant's group that ``match`` accepts, in
        queue order, for a thread to run as part of the item of that group it took (they
        take no slot of their own; the caller finishes them with it).

        None while interactive work waits: an item run along makes its thread busy
        longer, and a request must not wait on it. ``match`` is asked under the
        scheduler's lock, once per queued item of the group until ``limit`` are taken,
        and must be quick."""
        with self._cond:
            if limit <= 0 or any(q.interactive for q in self._tenants.values()):
                return []
            queue = self._tenants.get(tenant_id)
            items = None if queue is None else queue.groups.get(group)
            if queue is None or not items:
                return []
            along: list[WorkItem] = []
            for item in items:
                if len(along) >= limit:
                    break
                if match(item):
                    along.append(item)
            for item in along:
                items.remove(item)
                item.started.set()
            if not items:
                del queue.groups[group]
                if queue.empty():
                    del self._tenants[tenant_id]
            return along

    def claim(self, item: WorkItem) -> bool:
        """Mark ``item`` in flight for the calling thread to run (then :meth:`finish` it), when
        an idle scoring thread would take it at once: nothing is queued, the ``capacity`` has
        room, and its tenant is below its concurrency. False (always, without a capacity):
        :meth:`submit` it and wait instead."""
        with self._cond:
            if self._closed or self._capacity is None or self._tenants or self._full():
                return False
            if self._inflight[item.tenant_id] >= max(1, self._concurrency(item.tenant_id)):
                return False
            self._inflight[item.tenant_id] += 1
            self._total += 1
            item.started.set()
            return True

    def withdraw(self, item: WorkItem) -> bool:
        """Remove a pending item; False when a thread already took it."""
        with self._cond:
            queue = self._tenants.get(item.tenant_id)
            if queue is None or item.started.is_set():
                return False
            pool = queue.interactive if item.interactive else queue.groups.get(item.group)
            if pool is None or item not in pool:
                return False
            pool.remove(item)
            if not item.interactive and not pool:
                del queue.groups[item.group]
            if queue.empty():
                del self._tenants[item.tenant_id]
            return True

    def drop_group(self, tenant_id: str, group: str) -> int:
        """Remove every pending item of a group (a cancelled run); returns how many."""
        with self._cond:
            queue = self._tenants.get(tenant_id)
            if queue is None:
                return 0
            items = queue.groups.pop(group, deque())
            if queue.empty():
                del self._tenants[tenant_id]
            return len(items)

    def depth(self) -> int:
        """Items waiting for a thread."""
        with self._cond:
            return sum(
                len(q.interactive) + sum(len(g) for g in q.groups.values())
                for q in self._tenants.values()
            )

    def inflight(self, tenant_id: str | None = None) -> int:
        with self._cond:
            if tenant_id is None:
                return sum(self._inflight.values())
            return self._inflight[tenant_id]

    def close(self) -> None:
        """Wake every waiting thread; ``take`` returns None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
