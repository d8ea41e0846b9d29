"""The gateway's token ledger in Redis: one quota per run across distributed workers.

Each worker answers its own containers' model calls, but a run's chunks are scored on many
workers; with this ledger they all reserve from and settle to one hash per run
(``scorebox:gateway:ledger:<run>``, fields ``spent`` and ``held``) in the broker's Redis.
A reservation is decided by :func:`~engine.gateway.ledger.decide` inside a WATCH/MULTI
transaction, so calls on different workers at once cannot together pass the quota. Keys
expire :data:`TTL_SECONDS` after their last use (the in-process ledger forgets old runs
the same way). When Redis cannot be reached a call is refused with 503 (never let through
unmetered); a settlement that cannot be written is logged, and its hold expires with the key.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.gateway.ledger import Refusal, Reservation, decide

log = logging.getLogger(__name__)

PREFIX = "scorebox:gateway:ledger:"
#: A run's ledger is forgotten this long after its last call.
TTL_SECONDS = 7 * 24 * 3600


class RedisTokenLedger:
    """:class:`~engine.gateway.ledger.Ledger` over a Redis shared by the workers."""

    def __init__(self, client: Any) -> None:
        self._redis = client

    @classmethod
    def from_url(cls, url: str) -> RedisTokenLedger:
        import redis  # noqa: PLC0415 (lazy: only distributed mode has it)

        return cls(redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5))

    def _field(self, run: str, name: str) -> int:
        import redis  # noqa: PLC0415

        try:
            return int(self._redis.hget(PREFIX + run, name) or 0)
        except (redis.RedisError, OSError):
            return 0

    def spent(self, run: str) -> int:
        return self._field(run, "spent")

    def held(self, run: str) -> int:
        return self._field(run, "held")

    def reserve(
        self, run: str, quota: int, prompt_tokens: int, max_tokens: int | None
    ) -> Reservation | Refusal:
        import redis  # noqa: PLC0415

        key = PREFIX + run
        try:
            with self._redis.pipeline() as pipe:
                while True:
                    try:
                        pipe.watch(key)
                        spent, held = (int(v or 0) for v in pipe.hmget(key, "spent", "held"))
                        decision = decide(run, quota, spent, held, prompt_tokens, max_tokens)
                        if isinstance(decision, Refusal):
                            pipe.unwatch()
                            return decision
                        pipe.multi()
                        pipe.hincrby(key, "held", decision.tokens)
                        pipe.expire(key, TTL_SECONDS)
                        pipe.execute()
                        return decision
                    except redis.WatchError:
                        continue  # another call of the run changed it: decide again
        except (redis.RedisError, OSError) as exc:
            log.warning("the gateway's quota ledger in Redis is unreachable: %s", exc)
            return Refusal(
                "the model gateway cannot check this run's quota just now (its ledger is "
                "unreachable): retry in a moment",
                status=503,
            )

    def settle(self, reservation: Reservation, used: int) -> None:
        import redis  # noqa: PLC0415

        key = PREFIX + reservation.run
        try:
            with self._redis.pipeline() as pipe:  # MULTI: both fields move together
                pipe.hincrby(key, "held", -reservation.tokens)
                pipe.hincrby(key, "spent", max(0, used))
                pipe.expire(key, TTL_SECONDS)
                pipe.execute()
        except (redis.RedisError, OSError) as exc:
            log.warning("a model call's spend could not be written to the ledger: %s", exc)
