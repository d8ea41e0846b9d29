"""The warm pool: a pool of size zero, and draining (ready containers dropped, idle check
containers retired). Refills in flight and growth with demand, which wait on slow container
starts, are in tests/integration/test_warm_pool_waits.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from itertools import count

from engine.models import Limits
from engine.sandbox.pool import WarmPool, profile_key

LIMITS = Limits()
KEY = profile_key(LIMITS)


class SlowEngine:
    """create() blocks until released, and records how many ran at once."""

    def __init__(self) -> None:
        self.ids = count()
        self.lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.release = threading.Event()
        self.destroyed: list[int] = []

    def create(self, limits: Limits, labels: Mapping[str, str]) -> int:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.release.wait(10)
        with self.lock:
            self.running -= 1
            return next(self.ids)

    def destroy(self, container: object) -> None:
        assert isinstance(container, int)
        self.destroyed.append(container)


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_a_pool_of_size_zero_never_starts_anything() -> None:
    engine = SlowEngine()
    pool = WarmPool(engine.create, engine.destroy, size=0, idle_seconds=60, max_size=8)
    assert pool.take(LIMITS) is None
    time.sleep(0.1)
    assert engine.most_at_once == 0
    pool.close()


def test_drain_drops_every_ready_container_and_the_pool_refills_with_fresh_ones() -> None:
    engine = SlowEngine()
    engine.release.set()
    pool = WarmPool(engine.create, engine.destroy, size=2, idle_seconds=60)
    try:
        pool.ensure_profile(LIMITS)
        deadline = time.monotonic() + 10
        while pool.sizes().get(KEY, 0) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert pool.drain() == 2  # the engine restarted: these died with it
        assert sorted(engine.destroyed) == [0, 1]
        while pool.sizes().get(KEY, 0) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        fresh = pool.take(LIMITS)
        assert fresh in (2, 3)
    finally:
        pool.close()


def test_check_containers_drain_retires_every_idle_one() -> None:
    from engine.sandbox.pool import CheckContainers

    retired: list[object] = []
    workers = CheckContainers(retired.append, max_jobs=10, max_age=60, idle_seconds=60)
    try:
        workers.give("a", "w1", 1, time.monotonic())
        workers.give("b", "w2", 1, time.monotonic())
        assert workers.drain() == 2
        assert sorted(map(str, retired)) == ["w1", "w2"]
        assert workers.take("a") is None
    finally:
        workers.close()
