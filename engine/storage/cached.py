"""The two lookups every scoring request makes, cached: key hash → (key, tenant) and a
tenant's check name → its live version.

:class:`CachedStore` is :class:`~engine.storage.SqlStore` with a bounded, time-limited
memory of :meth:`find_key` and :meth:`get_check` (by name, latest or given version). A
write made through this store forgets what it changes before it returns: revoking a
key or changing a tenant's quotas forgets every cached key, pushing or deleting a
check forgets that name's entries. So on the node that made the change the next
request sees it. A change made elsewhere (another API node, ``scorebox tenant
revoke-key`` in another process, a direct SQL edit) is seen once the entry expires:
within ``key_seconds`` for keys and ``check_seconds`` for checks
(``SCOREBOX_KEY_CACHE_SECONDS``, ``SCOREBOX_CHECK_CACHE_SECONDS``; 0 turns a cache off).

A lookup that raced an invalidation (it read the database before the write committed
and would store the old answer after it) is not stored: every invalidation bumps a
generation, and an answer is kept only if the generation did not move while it was read.
Unknown keys are not cached (a new key works at once everywhere); an unknown check
name is (``no check named X`` is what a built-in's name resolves through first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine

from engine.errors import NotFoundError
from engine.storage.records import ApiKey, CheckVersion, Tenant
from engine.storage.repository import SqlStore

V = TypeVar("V")

#: Entries of each cache: past it the least recently used is dropped.
MAX_ENTRIES = 4096


#: Bytes of check sources and templates the check cache holds at most (a source may be
#: 256 KiB: 4,096 of them would be a gigabyte).
MAX_CHECK_BYTES = 32 * 1024 * 1024


def _one(value: object) -> int:
    return 1


class TtlCache(Generic[V]):
    """A thread-safe LRU map whose entries expire ``seconds`` after they were stored.

    At most ``max_entries`` entries and ``max_weight`` in total of ``weigh(value)``: past
    either, the least recently used entries are dropped.
    """

    def __init__(
        self,
        seconds: float,
        max_entries: int = MAX_ENTRIES,
        *,
        weigh: Callable[[V], int] = _one,
        max_weight: int | None = None,
    ) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self.weigh = weigh
        self.max_weight = max_entries if max_weight is None else max_weight
        self.weight = 0
        self.generation = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, V, int]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.seconds > 0

    def get(self, key: Hashable) -> tuple[bool, V | None]:
        """(True, value) for a live entry, (False, None) otherwise."""
        if not self.enabled:
            return False, None
        now = time.monotonic()
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return False, None
            if found[0] <= now:
                self._drop(key)
                return False, None
            self._entries.move_to_end(key)
            return True, found[1]

    def put(self, key: Hashable, value: V, generation: int) -> None:
        """Store ``value`` unless an invalidation happened since ``generation`` was read."""
        if not self.enabled:
            return
        with self._lock:
            if generation != self.generation:
                return  # read before a write this process made: it may be the old answer
            weight = self.weigh(value)
            if weight > self.max_weight:
                return
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (time.monotonic() + self.seconds, value, weight)
            self.weight += weight
            while len(self._entries) > self.max_entries or self.weight > self.max_weight:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        self.weight -= self._entries.pop(key)[2]

    def invalidate(self, match: Any = None) -> None:
        """Forget every entry (``match`` None) or those whose key ``match(key)`` accepts."""
        with self._lock:
            self.generation += 1
            if match is None:
                self._entries.clear()
                self.weight = 0
                return
            for key in [k for k in self._entries if match(k)]:
                self._drop(key)

    def __len__(self) -> int:
        return len(self._entries)


#: What a cached check lookup remembers: the version, or the NotFoundError's message.
_CheckAnswer = tuple[CheckVersion | None, str]


def _check_bytes(answer: _CheckAnswer) -> int:
    found, missing = answer
    if found is None:
        return 256 + len(missing)
    return 1024 + len(found.source or "") + len(found.prompt_template or "")


class CachedStore(SqlStore):
    """:class:`SqlStore` with key and check lookups cached (see the module's docstring)."""

    def __init__(self, engine: Engine, *, key_seconds: float, check_seconds: float) -> None:
        super().__init__(engine)
        self.keys: TtlCache[tuple[ApiKey, Tenant]] = TtlCache(key_seconds)
        self.checks: TtlCache[_CheckAnswer] = TtlCache(
            check_seconds, weigh=_check_bytes, max_weight=MAX_CHECK_BYTES
        )

    # ---- keys -------------------------------------------------------------------------

    def cached_key(self, key_hash: str) -> tuple[ApiKey, Tenant] | None:
        """The cached answer of :meth:`find_key`, without touching the database; None on a miss."""
        hit, value = self.keys.get(key_hash)
        return value if hit else None

    def find_key(self, key_hash: str) -> tuple[ApiKey, Tenant] | None:
        hit, value = self.keys.get(key_hash)
        if hit:
            return value
        generation = self.keys.generation
        found = super().find_key(key_hash)
        if found is not None:
            self.keys.put(key_hash, found, generation)
        return found

    def revoke_key(self, id_or_prefix: str, tenant_id: str | None = None) -> ApiKey:
        try:
            return super().revoke_key(id_or_prefix, tenant_id)
        finally:
            self.keys.invalidate()  # after the commit: the next request reads the revocation

    def set_tenant_quotas(self, tenant_id: str, quotas: Mapping[str, Any]) -> Tenant:
        try:
            return super().set_tenant_quotas(tenant_id, quotas)
        finally:
            self.keys.invalidate()  # the cached principals carry the tenant's quotas

    # ---- checks -----------------------------------------------------------------------

    def get_check(self, tenant_id: str, name: str, version: int | None = None) -> CheckVersion:
        key = (tenant_id, name, version)
        hit, answer = self.checks.get(key)
        if hit and answer is not None:
            found, missing = answer
            if found is None:
                raise NotFoundError(missing)
            return found
        generation = self.checks.generation
        try:
            check = super().get_check(tenant_id, name, version)
        except NotFoundError as exc:
            self.checks.put(key, (None, str(exc)), generation)
            raise
        self.checks.put(key, (check, ""), generation)
        return check

    def insert_check(self, check: CheckVersion) -> CheckVersion:
        try:
            return super().insert_check(check)
        finally:
            self._forget_check(check.tenant_id, check.name)

    def delete_check(self, tenant_id: str, name: str, version: int | None = None) -> int:
        try:
            return super().delete_check(tenant_id, name, version)
        finally:
            self._forget_check(tenant_id, name)

    def _forget_check(self, tenant_id: str, name: str) -> None:
        self.checks.invalidate(lambda key: key[0] == tenant_id and key[1] == name)
