"""Warm containers: started, never-used ones per limits profile, and warm check containers.

Containers are opaque here: the pool only calls ``create(limits, labels)`` and
``destroy(container)``. A container taken from the :class:`WarmPool` is never
returned to it; one that served a job cleanly may be kept by :class:`CheckContainers`
for later jobs of the same check, tenant, policy and limits, and nothing else.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from engine.logs import Repeated
from engine.models import Limits

log = logging.getLogger(__name__)

Create = Callable[[Limits, Mapping[str, str]], Any]
Destroy = Callable[[Any], None]

#: How long a take that found none ready waits for a container already starting.
WAIT_FOR_STARTING_SECONDS = 10.0


def profile_key(limits: Limits) -> str:
    """A short stable name for a limits profile (also the ``scorebox.pool`` label)."""
    return hashlib.sha256(limits.profile.encode()).hexdigest()[:12]


class WarmPool:
    """Keeps started containers ready per profile; refills in the background.

    Each profile starts with a target of ``size`` ready containers. A ``take`` that finds
    none ready raises the target by one, up to ``max_size``, so a burst of first requests
    is met warm next time; a container that sits unused for ``idle_seconds`` is destroyed
    and lowers the target again, never below ``size``. Up to ``refills`` containers are
    created at once (starting one is mostly waiting on the engine, so creations overlap well).

    A ``take`` that finds none ready while a refill is under way waits for it (one waiter
    per container in flight, up to :data:`WAIT_FOR_STARTING_SECONDS`) rather than returning
    None: that container was started earlier than one the caller would start now, and a
    second start at the same moment only slows both on a busy host. With nothing in flight
    for it, the caller gets None and starts its own (a cold start).
    """

    def __init__(
        self,
        create: Create,
        destroy: Destroy,
        size: int,
        idle_seconds: float,
        *,
        max_size: int | None = None,
        refills: int = 2,
    ) -> None:
        self._create = create
        self._destroy = destroy
        self.size = size
        self.max_size = max(size, max_size if max_size is not None else size)
        self.refills = max(1, refills)
        self.idle_seconds = idle_seconds
        self._cond = threading.Condition()
        self._profiles: dict[str, Limits] = {}
        self._ready: dict[str, deque[tuple[Any, float]]] = {}
        self._target: dict[str, int] = {}
        self._inflight: dict[str, int] = {}
        self._waiting: dict[str, int] = {}  # takers waiting for a container in flight
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._failures = 0
        # Docker away: every refill fails alike; one warning per interval, not a traceback
        self._start_failures = Repeated(log, "starting a warm pool container")

    def ensure_profile(self, limits: Limits) -> str:
        """Start keeping containers for ``limits``; returns the profile key."""
        key = profile_key(limits)
        if self.size == 0:
            return key
        with self._cond:
            if key not in self._profiles:
                self._profiles[key] = limits
                self._ready[key] = deque()
                self._target[key] = self.size
                self._inflight[key] = 0
                self._waiting[key] = 0
            if not self._threads and not self._closed:
                for n in range(self.refills):
                    thread = threading.Thread(
                        target=self._refill_loop, name=f"scorebox-pool-{n}", daemon=True
                    )
                    thread.start()
                    self._threads.append(thread)
            self._cond.notify_all()
        return key

    def take(self, limits: Limits, *, wait: float = WAIT_FOR_STARTING_SECONDS) -> Any | None:
        """A started, never-used container for ``limits``; None when none is ready and none
        in flight is left for this caller within ``wait`` seconds, so the caller starts one
        itself."""
        if self.size == 0 or self._closed:
            return None
        key = self.ensure_profile(limits)
        deadline = time.monotonic() + wait
        with self._cond:
            ready = self._ready[key]
            if not ready:  # a miss: the pool was too small for this burst
                self._target[key] = min(self.max_size, self._target[key] + 1)
                self._cond.notify_all()
                self._waiting[key] += 1
                try:
                    while not ready and not self._closed:
                        left = deadline - time.monotonic()
                        if left <= 0 or self._inflight[key] < self._waiting[key]:
                            break  # nothing started early enough for this caller
                        self._cond.wait(timeout=left)
                finally:
                    self._waiting[key] -= 1
            container = ready.popleft()[0] if ready and not self._closed else None
            self._cond.notify_all()
        return container

    @property
    def closed(self) -> bool:
        """Whether the pool has been closed."""
        return self._closed

    def sizes(self) -> dict[str, int]:
        """Ready containers per profile key."""
        with self._cond:
            return {key: len(ready) for key, ready in self._ready.items()}

    def targets(self) -> dict[str, int]:
        """How many ready containers the pool aims at per profile key (grows with misses)."""
        with self._cond:
            return dict(self._target)

    def _next_shortfall(self) -> tuple[str, Limits] | None:
        for key, limits in self._profiles.items():
            if len(self._ready[key]) + self._inflight[key] < self._target[key]:
                return key, limits
        return None

    def _recycle_idle(self) -> list[Any]:
        cutoff = time.monotonic() - self.idle_seconds
        stale: list[Any] = []
        for key, ready in self._ready.items():
            while ready and ready[0][1] < cutoff:
                stale.append(ready.popleft()[0])
                self._target[key] = max(self.size, self._target[key] - 1)
        return stale

    def _refill_loop(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                stale = self._recycle_idle()
                want = self._next_shortfall()
                if want is None and not stale:
                    self._cond.wait(timeout=min(5.0, self.idle_seconds / 2))
                    continue
                if want is not None:
                    self._inflight[want[0]] += 1
            for container in stale:
                self._destroy(container)
            if want is None:
                continue
            key, limits = want
            try:
                container = self._create(limits, {"scorebox.pool": key})
                self._failures = 0
                self._start_failures.ok()
            except Exception as exc:
                with self._cond:
                    self._inflight[key] -= 1
                    self._cond.notify_all()  # a taker waiting for it starts its own
                self._failures += 1
                self._start_failures.failed(exc)
                time.sleep(min(30.0, 0.5 * 2**self._failures))
                continue
            with self._cond:
                self._inflight[key] -= 1
                closed = self.closed
                if not closed:
                    self._ready[key].append((container, time.monotonic()))
                    self._cond.notify_all()
            if closed:
                self._destroy(container)
                return

    def drain(self) -> int:
        """Destroy every ready container (they died with the engine); the pool refills.

        Returns how many were dropped."""
        with self._cond:
            stale = [container for ready in self._ready.values() for container, _ in ready]
            for ready in self._ready.values():
                ready.clear()
            self._failures = 0
            self._cond.notify_all()
        for container in stale:
            self._destroy(container)
        return len(stale)

    def close(self) -> None:
        """Stop refilling and destroy every ready container."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=60)
        self.drain()


class CheckContainers:
    """Warm check containers: ones that served a job, kept for more jobs of the same key.

    A key names one trust domain and one way of running (tenant, check version,
    policy, limits profile); a container is never handed to another key. They are
    retired after ``max_jobs`` jobs, ``max_age`` seconds of life or ``idle_seconds``
    without a job.
    """

    def __init__(
        self, destroy: Destroy, max_jobs: int, max_age: float, idle_seconds: float
    ) -> None:
        self._destroy = destroy
        self.max_jobs = max_jobs
        self.max_age = max_age
        self.idle_seconds = idle_seconds
        self._lock = threading.Condition()
        self._idle: dict[str, list[tuple[Any, float]]] = {}
        self._closed = False
        self._thread: threading.Thread | None = None

    def take(self, key: str) -> Any | None:
        """An idle container of ``key`` (the most recently used), or None."""
        with self._lock:
            idle = self._idle.get(key)
            if not idle:
                return None
            container, _ = idle.pop()
            if not idle:
                del self._idle[key]
            return container

    def give(self, key: str, container: Any, jobs: int, born: float) -> None:
        """Keep ``container`` for the next job of ``key``, or retire it."""
        now = time.monotonic()
        with self._lock:
            keep = not self._closed and jobs < self.max_jobs and now - born < self.max_age
            if keep:
                self._idle.setdefault(key, []).append((container, now))
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._expire_loop, name="scorebox-check-containers", daemon=True
                    )
                    self._thread.start()
        if not keep:
            self._destroy(container)

    def sizes(self) -> dict[str, int]:
        """Idle containers per key."""
        with self._lock:
            return {key: len(idle) for key, idle in self._idle.items()}

    def _expire_loop(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                self._lock.wait(timeout=max(0.5, min(5.0, self.idle_seconds / 4)))
                cutoff = time.monotonic() - self.idle_seconds
                stale: list[Any] = []
                for key in list(self._idle):
                    idle = self._idle[key]
                    stale += [container for container, since in idle if since < cutoff]
                    idle[:] = [(container, since) for container, since in idle if since >= cutoff]
                    if not idle:
                        del self._idle[key]
            for container in stale:
                self._destroy(container)

    def drain(self) -> int:
        """Retire every idle container now (they died with the engine); returns how many."""
        with self._lock:
            idle = [container for containers in self._idle.values() for container, _ in containers]
            self._idle.clear()
        for container in idle:
            self._destroy(container)
        return len(idle)

    def close(self) -> None:
        """Retire every idle container; later ``give`` calls retire theirs at once."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self.drain()
