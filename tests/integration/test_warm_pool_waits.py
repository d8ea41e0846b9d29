"""The warm pool with a fake backend whose container starts take their time: refills overlap
up to the configured number, and cold starts grow the pool to its cap while idleness shrinks
it; a take that finds none ready waits for a container already starting. The rest of the
pool is unit-tested (tests/unit/test_warm_pool.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engine.sandbox.pool import WarmPool
from tests.unit.test_warm_pool import KEY, LIMITS, SlowEngine, wait_for


@contextmanager
def starting(engine: SlowEngine, starts: int, **options: Any) -> Iterator[WarmPool]:
    """A pool of ``engine`` with ``starts`` container starts under way (held until
    ``engine.release`` is set, as it is at the end)."""
    pool = WarmPool(engine.create, engine.destroy, idle_seconds=60, **options)
    try:
        pool.ensure_profile(LIMITS)
        wait_for(lambda: engine.running == starts)
        yield pool
    finally:
        engine.release.set()
        pool.close()


def test_refills_overlap_up_to_the_configured_number() -> None:
    engine = SlowEngine()
    with starting(engine, 3, size=4, refills=3) as pool:
        time.sleep(0.1)
        assert engine.most_at_once == 3  # never more than `refills` at once
        engine.release.set()
        wait_for(lambda: pool.sizes()[KEY] == 4)
        time.sleep(0.1)
        assert pool.sizes()[KEY] == 4  # in-flight creations count: no overshoot
    assert sorted(engine.destroyed) == [0, 1, 2, 3]


def test_cold_starts_grow_the_pool_up_to_its_cap_and_idleness_shrinks_it() -> None:
    engine = SlowEngine()
    engine.release.set()
    pool = WarmPool(engine.create, engine.destroy, size=1, idle_seconds=0.5, max_size=3)
    try:
        pool.ensure_profile(LIMITS)
        wait_for(lambda: pool.sizes()[KEY] == 1)
        engine.release.clear()  # the refills below stay starting until the burst is over
        assert pool.take(LIMITS) is not None
        # Five takes in a burst find nothing ready: each not waiting is a cold start.
        misses = sum(pool.take(LIMITS, wait=0) is None for _ in range(5))
        assert misses == 5
        assert pool.targets()[KEY] == 3  # raised by the misses, capped at max_size
        engine.release.set()
        wait_for(lambda: pool.sizes()[KEY] == 3)
        # Left unused, they are recycled and the target falls back to size.
        wait_for(lambda: pool.targets()[KEY] == 1, seconds=15)
        wait_for(lambda: pool.sizes()[KEY] <= 1, seconds=15)
    finally:
        pool.close()


def test_a_take_that_finds_none_ready_waits_for_one_in_flight_not_for_more() -> None:
    engine = SlowEngine()
    # the one container of the target, in flight
    with starting(engine, 1, size=1, max_size=4, refills=1) as pool:
        got: list[object] = []
        waiters = [threading.Thread(target=lambda: got.append(pool.take(LIMITS))) for _ in range(2)]
        for waiter in waiters:
            waiter.start()
        # one container in flight serves one waiter; the other caller starts its own at once
        wait_for(lambda: got == [None])
        assert waiters[0].is_alive() or waiters[1].is_alive()
        engine.release.set()
        for waiter in waiters:
            waiter.join(10)
        assert sorted(got, key=repr) == [0, None]  # the container started first, not a new one
        assert pool.targets()[KEY] == 3  # both found none ready: the pool grows as before


def test_a_waiting_take_gives_up_when_the_start_fails_or_takes_too_long() -> None:
    engine = SlowEngine()
    with starting(engine, 1, size=1, refills=1) as pool:
        started = time.monotonic()
        assert pool.take(LIMITS, wait=0.3) is None  # the caller starts its own after the wait
        assert 0.3 <= time.monotonic() - started < 5

    def failing(limits: object, labels: object) -> int:
        time.sleep(0.3)
        raise RuntimeError("engine away")

    broken = WarmPool(failing, engine.destroy, size=1, idle_seconds=60, refills=1)
    try:
        broken.ensure_profile(LIMITS)
        time.sleep(0.05)  # the first start is under way
        started = time.monotonic()
        assert broken.take(LIMITS, wait=30) is None  # woken by the failure, not the timeout
        assert time.monotonic() - started < 5
    finally:
        broken.close()
