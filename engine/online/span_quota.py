"""A tenant's span quotas at the OTLP receiver: spans per minute and spans stored.

``spans_per_minute`` is counted per API process in fixed one-minute windows: a request
that finds its tenant's window full is a 429 with ``Retry-After`` (the seconds to the next
window), which OTLP exporters retry; a request that would overfill it is taken up to the
quota and the rest refused in ``partial_success``. ``stored_spans`` is the tenant's count
in the database, read at most every :data:`COUNT_SECONDS` and kept up to date with what
this process stores meanwhile; spans past it are refused in ``partial_success`` (not
retried: room comes back only as retention prunes). Both answers name the quota.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Admission", "SpanQuota"]

WINDOW_SECONDS = 60.0
COUNT_SECONDS = 30.0


@dataclass(frozen=True)
class Admission:
    """How many of a request's spans may be stored, and why the rest may not.

    ``retry_after`` set: none may, answer 429 and let the exporter retry then."""

    allowed: int
    refused_because: str | None = None
    retry_after: int | None = None


class SpanQuota:
    """The per-tenant windows and stored counts of one API process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[int, int]] = {}  # tenant -> (window number, spans)
        self._stored: dict[str, tuple[float, int]] = {}  # tenant -> (read at, count)

    def admit(
        self,
        tenant_id: str,
        spans: int,
        per_minute: int,
        stored_cap: int,
        count_stored: Callable[[], int],
    ) -> Admission:
        """Reserve room for up to ``spans`` spans; 0 quotas mean no limit."""
        allowed, why = spans, None
        with self._lock:
            now = self._clock()
            window = int(now // WINDOW_SECONDS)
            if per_minute:
                number, used = self._windows.get(tenant_id, (window, 0))
                used = used if number == window else 0
                if used >= per_minute:
                    wait = math.ceil((window + 1) * WINDOW_SECONDS - now)
                    return Admission(
                        0,
                        f"quota spans_per_minute ({per_minute:,}) reached: retry in {wait} s",
                        max(wait, 1),
                    )
                if used + allowed > per_minute:
                    allowed = per_minute - used
                    why = f"quota spans_per_minute ({per_minute:,}) reached"
            if stored_cap:
                read_at, count = self._stored.get(tenant_id, (-math.inf, 0))
                if now - read_at > COUNT_SECONDS:
                    read_at, count = now, count_stored()
                room = max(stored_cap - count, 0)
                if allowed > room:
                    allowed = room
                    why = (
                        f"quota stored_spans ({stored_cap:,}) reached: spans are taken again "
                        "as retention prunes older ones (SCOREBOX_SPAN_RETENTION_DAYS), or "
                        "when the operator raises the quota"
                    )
                self._stored[tenant_id] = (read_at, count + allowed)
            if per_minute:
                self._windows[tenant_id] = (window, used + allowed)
        return Admission(allowed, why)
