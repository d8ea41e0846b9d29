"""The reply channel of ``/v1/score`` in distributed mode: one short-lived Redis list per request.

The worker pushes a ``started`` record when it takes the request, then the
results; the API node waits with ``BLPOP`` (no polling, no result backend).
:meth:`Replies.take_slot` caps each tenant's ``/v1/score`` requests in flight
across every API node (a sorted set per tenant whose members expire, so a
dead API node's slots come back on their own).

Every command has a socket read timeout (:data:`SOCKET_TIMEOUT_SECONDS`), so a
broker that stops answering is noticed; a long wait is therefore made of
``BLPOP`` calls of at most :data:`BLOCK_SLICE_SECONDS` each, well inside it
(one ``BLPOP`` of 30 s would be cut by the read timeout and look like a dead
broker while Redis answers PING).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

from engine.distributed.preflight import masked_url
from engine.errors import SandboxError

#: Replies nobody read are gone after this long.
REPLY_TTL_SECONDS = 300

#: A command the broker does not answer within this long means the broker is gone.
SOCKET_TIMEOUT_SECONDS = 5.0

#: One blocking read waits at most this long (inside the socket timeout).
BLOCK_SLICE_SECONDS = 2.0

#: Workers announce themselves under this prefix (a key each, expiring).
WORKER_PREFIX = "scorebox:worker:"

#: A worker not heard from this long is not counted.
WORKER_TTL_SECONDS = 30

#: Each worker host's declared environments (a key per host, expiring like the announcement).
HOST_ENVS_PREFIX = "scorebox:host-envs:"

#: A key every node sets if missing: its absence means the broker lost its data (restarted
#: without persistence, flushed), so the chunks it held must be sent again.
MARKER_KEY = "scorebox:broker-marker"


#: Atomically: forget expired slots, then take one if fewer than ARGV[4] are held.
_TAKE_SLOT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[1], 86400)
  return 1
end
return 0
"""


def new_reply_key() -> str:
    return f"scorebox:reply:{secrets.token_hex(12)}"


@contextmanager
def _broker(url: str) -> Iterator[None]:
    """Translate redis-py's errors once: the broker is down is a 503 naming the broker."""
    try:
        yield
    except (redis.RedisError, OSError) as exc:
        raise SandboxError(
            f"the broker at {masked_url(url)} is not reachable ({exc.__class__.__name__}: {exc}):"
            " retry; operators: check Redis and SCOREBOX_BROKER_URL (`scorebox doctor`)"
        ) from exc


class Replies:
    """Push and wait for reply records on the broker's Redis (thread-safe: a connection pool)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._redis = redis.Redis.from_url(
            url,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            health_check_interval=30,
        )

    def push(self, key: str, record: dict[str, Any]) -> None:
        with _broker(self.url), self._redis.pipeline() as pipe:
            pipe.rpush(key, json.dumps(record))
            pipe.expire(key, REPLY_TTL_SECONDS)
            pipe.execute()

    def wait(self, key: str, timeout_seconds: float) -> dict[str, Any] | None:
        """The next record for ``key``, or None after ``timeout_seconds``."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            left = deadline - time.monotonic()
            with _broker(self.url):
                found = self._redis.blpop([key], timeout=min(BLOCK_SLICE_SECONDS, max(0.01, left)))
            if found is not None:
                value = json.loads(found[1])
                return value if isinstance(value, dict) else None
            if left <= BLOCK_SLICE_SECONDS:
                return None

    def take_slot(
        self, tenant_id: str, member: str, limit: int, hold_seconds: float, wait_seconds: float
    ) -> bool:
        """Take one of the tenant's ``limit`` slots for ``member``, waiting up to ``wait_seconds``.

        A slot is held until :meth:`free_slot` or for ``hold_seconds`` at most.
        """
        key = f"scorebox:score-slots:{tenant_id}"
        deadline = time.monotonic() + wait_seconds
        while True:
            now = time.time()
            with _broker(self.url):
                taken = self._redis.eval(_TAKE_SLOT, 1, key, now, now + hold_seconds, member, limit)
            if taken:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def free_slot(self, tenant_id: str, member: str) -> None:
        with _broker(self.url):
            self._redis.zrem(f"scorebox:score-slots:{tenant_id}", member)

    def broker_lost_data(self) -> bool:
        """Whether the broker's data is gone since the last call on any node (restart, flush).

        Sets :data:`MARKER_KEY` if missing; exactly one caller sees it missing after a
        restart, so one node re-queues. True on a brand-new broker too, which is right:
        nothing the ledger thinks is queued can be in it.
        """
        with _broker(self.url):
            return bool(self._redis.set(MARKER_KEY, secrets.token_hex(8), nx=True))

    def announce(self, name: str, info: dict[str, Any]) -> None:
        """Say this worker is alive (and what it runs) for :data:`WORKER_TTL_SECONDS`."""
        with _broker(self.url):
            self._redis.set(WORKER_PREFIX + name, json.dumps(info), ex=WORKER_TTL_SECONDS)

    def retire(self, name: str) -> None:
        """This worker is stopping: stop counting it now."""
        with _broker(self.url):
            self._redis.delete(WORKER_PREFIX + name)

    def announced(self) -> dict[str, dict[str, Any]]:
        """The workers heard from in the last :data:`WORKER_TTL_SECONDS`, by name."""
        with _broker(self.url):
            keys = list(self._redis.scan_iter(match=WORKER_PREFIX + "*", count=500))
            values = self._redis.mget(keys) if keys else []
        out: dict[str, dict[str, Any]] = {}
        for key, value in zip(keys, values, strict=True):
            if value is None:
                continue
            name = (key.decode() if isinstance(key, bytes) else str(key))[len(WORKER_PREFIX) :]
            info = json.loads(value)
            out[name] = info if isinstance(info, dict) else {}
        return out

    def publish_environments(self, host: str, snapshot: dict[str, Any]) -> None:
        """Publish ``host``'s environments (key -> state) for :data:`WORKER_TTL_SECONDS`.

        Every worker of a host publishes the same host-level snapshot, so the last one wins.
        """
        with _broker(self.url):
            self._redis.set(HOST_ENVS_PREFIX + host, json.dumps(snapshot), ex=WORKER_TTL_SECONDS)

    def host_environments(self) -> dict[str, dict[str, Any]]:
        """Every host's published environments (host -> key -> state), heard of lately."""
        with _broker(self.url):
            keys = list(self._redis.scan_iter(match=HOST_ENVS_PREFIX + "*", count=500))
            values = self._redis.mget(keys) if keys else []
        out: dict[str, dict[str, Any]] = {}
        for key, value in zip(keys, values, strict=True):
            if value is None:
                continue
            host = (key.decode() if isinstance(key, bytes) else str(key))[len(HOST_ENVS_PREFIX) :]
            try:
                snapshot = json.loads(value)
            except ValueError:
                continue
            out[host] = snapshot if isinstance(snapshot, dict) else {}
        return out

    def ping(self) -> None:
        with _broker(self.url):
            self._redis.ping()

    def close(self) -> None:
        self._redis.close()
