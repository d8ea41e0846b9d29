"""engine.storage.cached.TtlCache: expiry, the LRU bound, and an answer read before an
invalidation never stored after it."""

from __future__ import annotations

import time

from engine.storage.cached import TtlCache


def test_entries_expire() -> None:
    cache: TtlCache[int] = TtlCache(0.05)
    cache.put("a", 1, cache.generation)
    assert cache.get("a") == (True, 1)
    time.sleep(0.06)
    assert cache.get("a") == (False, None)


def test_zero_seconds_caches_nothing() -> None:
    cache: TtlCache[int] = TtlCache(0)
    cache.put("a", 1, cache.generation)
    assert cache.get("a") == (False, None)


def test_least_recently_used_entry_is_dropped_past_the_bound() -> None:
    cache: TtlCache[int] = TtlCache(60, max_entries=2)
    cache.put("a", 1, cache.generation)
    cache.put("b", 2, cache.generation)
    assert cache.get("a") == (True, 1)  # "b" is now the least recently used
    cache.put("c", 3, cache.generation)
    assert cache.get("b") == (False, None)
    assert cache.get("a") == (True, 1)
    assert cache.get("c") == (True, 3)
    assert len(cache) == 2


def test_an_answer_read_before_an_invalidation_is_not_stored() -> None:
    cache: TtlCache[str] = TtlCache(60)
    generation = cache.generation  # a lookup starts reading the database...
    cache.invalidate()  # ...a revocation commits and invalidates meanwhile...
    cache.put("key", "old answer", generation)  # ...and the old answer comes back
    assert cache.get("key") == (False, None)


def test_invalidate_with_a_match_forgets_only_those() -> None:
    cache: TtlCache[int] = TtlCache(60)
    cache.put(("t1", "a", None), 1, cache.generation)
    cache.put(("t1", "b", None), 2, cache.generation)
    cache.put(("t2", "a", None), 3, cache.generation)
    cache.invalidate(lambda key: key[:2] == ("t1", "a"))
    assert cache.get(("t1", "a", None)) == (False, None)
    assert cache.get(("t1", "b", None)) == (True, 2)
    assert cache.get(("t2", "a", None)) == (True, 3)


def test_the_total_weight_is_bounded() -> None:
    cache: TtlCache[str] = TtlCache(60, weigh=len, max_weight=10)
    cache.put("a", "xxxx", cache.generation)
    cache.put("b", "yyyy", cache.generation)
    cache.put("c", "zzzz", cache.generation)  # 12 > 10: "a" goes
    assert cache.get("a") == (False, None)
    assert cache.get("b") == (True, "yyyy")
    assert cache.weight == 8
    cache.put("huge", "w" * 11, cache.generation)  # heavier than the whole cache: not kept
    assert cache.get("huge") == (False, None)
    cache.put("b", "y", cache.generation)  # replacing an entry replaces its weight
    assert cache.weight == 5
    cache.invalidate()
    assert cache.weight == 0
