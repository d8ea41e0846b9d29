"""The warm pool refills with several creations in flight and grows with demand."""

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


def test_refills_overlap_up_to_the_configured_number() -> None:
    engine = SlowEngine()
    pool = WarmPool(engine.create, engine.destroy, size=4, idle_seconds=60, refills=3)
    try:
        pool.ensure_profile(LIMITS)
        wait_for(lambda: engine.running == 3)
        time.sleep(0.1)
        assert engine.most_at_once == 3  # never more than `refills` at once
        engine.release.set()
        wait_for(lambda: pool.sizes()[KEY] == 4)
        time.sleep(0.1)
        assert pool.sizes()[KEY] == 4  # in-flight creations count: no overshoot
    finally:
        engine.release.set()
        pool.close()
    assert sorted(engine.destroyed) == [0, 1, 2, 3]


def test_cold_starts_grow_the_pool_up_to_its_cap_and_idleness_shrinks_it() -> None:
    engine = SlowEngine()
    engine.release.set()
    pool = WarmPool(engine.create, engine.destroy, size=1, idle_seconds=0.5, max_size=3)
    try:
        pool.ensure_profile(LIMITS)
        wait_for(lambda: pool.sizes()[KEY] == 1)
        assert pool.take(LIMITS) is not None
        # Five takes in a burst find nothing ready: each is a cold start for its caller.
        misses = sum(pool.take(LIMITS) is None for _ in range(5))
        assert misses >= 3
        assert pool.targets()[KEY] == 3  # raised by the misses, capped at max_size
        wait_for(lambda: pool.sizes()[KEY] == 3)
        # Left unused, they are recycled and the target falls back to size.
        wait_for(lambda: pool.targets()[KEY] == 1, seconds=15)
        wait_for(lambda: pool.sizes()[KEY] <= 1, seconds=15)
    finally:
        pool.close()


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
