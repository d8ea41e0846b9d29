"""Sampling from the trace id, as OpenTelemetry's ``TraceIdRatioBased`` sampler decides.

The SDK (``opentelemetry.sdk.trace.sampling``) keeps a trace when the 64 low-order bits of
its id are below ``round(rate * 2**64)``. The same decision here means a rule picks the
same spans live and in a backfill, and a trace's spans are kept or dropped together.
"""

from __future__ import annotations

__all__ = ["TRACE_ID_LIMIT", "bound_for_rate", "sampled"]

#: The 64 low-order bits of a trace id (the SDK's ``TraceIdRatioBased.TRACE_ID_LIMIT``).
TRACE_ID_LIMIT = (1 << 64) - 1


def bound_for_rate(rate: float) -> int:
    """The SDK's ``get_bound_for_rate``: trace ids below it (low 64 bits) are sampled."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError("sample_rate: between 0 and 1")
    return round(rate * (TRACE_ID_LIMIT + 1))


def sampled(trace_id: str | int, rate: float) -> bool:
    """Whether a trace (hex id or integer) is sampled at ``rate``."""
    value = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
    return value & TRACE_ID_LIMIT < bound_for_rate(rate)
