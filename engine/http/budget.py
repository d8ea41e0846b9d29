"""Bytes of request bodies in flight, bounded per caller and for the whole server.

A body is counted from the moment it is admitted (its declared ``Content-Length`` at
once; a chunked body chunk by chunk as it arrives) until its request has been answered,
because that is how long the server holds it and what is parsed from it. Past either
bound a body is refused with :class:`~engine.errors.QuotaExceededError` (the API maps it
to 429 with ``Retry-After``). A body that is alone in its bucket is never refused for
that bucket, and a body alone on the server never for the total: the byte limit of its
route (``SCOREBOX_MAX_BODY_MB``, ``SCOREBOX_MAX_UPLOAD_MB``) bounds it instead, so no
setting can make a single request impossible.

The budget lives on the event loop of one API process (no lock: only the loop touches it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import QuotaExceededError
from engine.settings import Settings

MB = 1024 * 1024
#: Seconds a refused client is asked to wait: bodies in flight finish within the body
#: deadline, most within a second.
RETRY_AFTER_SECONDS = 2


def _megabytes(n: int) -> str:
    return f"{n / MB:.1f} MB"


@dataclass
class BodyBudget:
    """Bytes of bodies in flight per bucket (an API key, a dashboard session, anonymous)
    and in total, each bounded."""

    per_key_bytes: int
    total_bytes: int
    held: dict[str, int] = field(default_factory=dict)
    total: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyBudget:
        return cls(
            per_key_bytes=int(settings.body_inflight_mb_per_key * MB),
            total_bytes=int(settings.body_inflight_mb * MB),
        )

    def take(self, bucket: str, nbytes: int, mine: int = 0) -> None:
        """Count ``nbytes`` more for ``bucket`` (a request that already holds ``mine``),
        or raise :class:`QuotaExceededError` and count nothing."""
        held = self.held.get(bucket, 0)
        others = held - mine
        if others > 0 and held + nbytes > self.per_key_bytes:
            raise QuotaExceededError(
                f"request bodies of {_megabytes(others)} from this caller are still arriving "
                f"or being handled, and {_megabytes(self.per_key_bytes)} at once is the most "
                "one caller may send: wait for them to finish, or ask the operator to raise "
                "SCOREBOX_BODY_INFLIGHT_MB_PER_KEY",
                RETRY_AFTER_SECONDS,
            )
        if self.total - mine > 0 and self.total + nbytes > self.total_bytes:
            raise QuotaExceededError(
                f"the server is receiving {_megabytes(self.total)} of request bodies, the most "
                f"it holds at once ({_megabytes(self.total_bytes)}): retry in a few seconds, "
                "or ask the operator to raise SCOREBOX_BODY_INFLIGHT_MB",
                RETRY_AFTER_SECONDS,
            )
        self.held[bucket] = held + nbytes
        self.total += nbytes

    def give(self, bucket: str, nbytes: int) -> None:
        """Forget ``nbytes`` of ``bucket``: its request has been answered."""
        if nbytes <= 0:
            return
        left = self.held.get(bucket, 0) - nbytes
        if left > 0:
            self.held[bucket] = left
        else:
            self.held.pop(bucket, None)
        self.total -= nbytes
