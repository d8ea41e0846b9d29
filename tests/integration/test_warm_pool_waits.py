"""The warm pool with a fake backend whose container starts take their time: refills overlap
up to the configured number, and cold starts grow the pool to its cap while idleness shrinks
it. The rest of the pool is unit-tested (tests/unit/test_warm_pool.py)."""

from __future__ import annotations

import time

from engine.sandbox.pool import WarmPool
from tests.unit.test_warm_pool import KEY, LIMITS, SlowEngine, wait_for


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
