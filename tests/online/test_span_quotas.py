"""A tenant's span quotas at the OTLP receiver (SQLite and PostgreSQL): spans per minute
(429 with Retry-After once the window is full, the overflow of a batch refused in
partial_success) and spans stored (refused in partial_success, naming retention); other
tenants are not touched; the windows roll over with the clock."""

from __future__ import annotations

import secrets
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from engine.online.span_quota import Admission, SpanQuota
from tests.api.conftest import Api
from tests.online.otlp_requests import PROTOBUF, span, traces


def _send(api: Api, headers: dict[str, str], n: int) -> Any:
    trace_id = secrets.token_bytes(16)
    body = traces(*(span(trace_id, secrets.token_bytes(8)) for _ in range(n)))
    return api.client.post(
        "/v1/traces", content=body.SerializeToString(), headers={**headers, **PROTOBUF}
    )


def _rejected(reply: Any) -> tuple[int, str]:
    assert reply.status_code == 200, reply.content
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(reply.content)
    return answer.partial_success.rejected_spans, answer.partial_success.error_message


def _stored(api: Api, headers: dict[str, str]) -> int:
    return len(api.client.get("/v1/spans", headers=headers, params={"limit": 1000}).json()["spans"])


def test_spans_per_minute_refuses_the_overflow_then_answers_429(api: Api) -> None:
    h = api.tenant(spans_per_minute=5)
    other = api.tenant()
    assert _rejected(_send(api, h, 3)) == (0, "")
    rejected, message = _rejected(_send(api, h, 4))
    assert rejected == 2 and "quota spans_per_minute (5) reached" in message
    full = _send(api, h, 1)
    assert full.status_code == 429
    assert 1 <= int(full.headers["retry-after"]) <= 61
    assert b"spans_per_minute" in full.content
    assert _stored(api, h) == 5
    assert _rejected(_send(api, other, 20)) == (0, "")  # another tenant: no limit


def test_stored_spans_refuses_past_the_quota_naming_retention(api: Api) -> None:
    h = api.tenant(stored_spans=3)
    assert _rejected(_send(api, h, 2)) == (0, "")
    rejected, message = _rejected(_send(api, h, 3))
    assert rejected == 2
    assert "quota stored_spans (3) reached" in message
    assert "SCOREBOX_SPAN_RETENTION_DAYS" in message
    assert _rejected(_send(api, h, 2))[0] == 2  # still full: refused, not a retry storm
    assert _stored(api, h) == 3


def test_windows_roll_over_and_the_stored_count_is_read_again() -> None:
    now = [0.0]
    quota = SpanQuota(clock=lambda: now[0])
    stored = [0]

    def admit(n: int) -> Admission:
        return quota.admit("t", n, 10, 25, lambda: stored[0])

    assert admit(8).allowed == 8
    assert admit(8).allowed == 2
    refused = admit(1)
    assert refused.allowed == 0 and refused.retry_after == 60
    now[0] = 59.5
    assert admit(1).retry_after == 1
    now[0] = 60.0  # a new minute
    assert admit(10).allowed == 10
    now[0] = 120.0  # the count is read again from the store: 20, the cap is 25
    stored[0] = 20
    assert admit(10).allowed == 5
    now[0] = 121.0  # within the count's lifetime, what this process stored is added
    full = admit(1)
    assert full.allowed == 0 and "stored_spans (25)" in (full.refused_because or "")
    now[0] = 200.0  # read again: retention pruned all but 4
    stored[0] = 4
    assert admit(10).allowed == 10
    assert quota.admit("t", 5, 0, 0, lambda: 0).allowed == 5  # 0: no limit
