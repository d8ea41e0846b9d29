"""``POST /v1/traces`` and ``/v1/logs`` as the OTLP/HTTP specification says, and the spans
read back, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from engine.api.routes import traces as traces_routes
from tests.api.conftest import Api, AppFactory
from tests.online.otlp_requests import (
    CHAT_ATTRIBUTES,
    GZIP_PROTOBUF,
    JSON,
    PROTOBUF,
    gz,
    logs,
    new_ids,
    otlp_json,
    span,
    status,
    traces,
)

ANSWER = "Paris is the capital of France."


def _response(body: bytes) -> ExportTraceServiceResponse:
    out = ExportTraceServiceResponse()
    out.ParseFromString(body)
    return out


def _trace(api: Api, headers: dict[str, str], trace_id: bytes) -> dict[str, Any]:
    reply = api.client.get(f"/v1/traces/{trace_id.hex()}", headers=headers)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def test_protobuf_gzip_span_is_stored_as_a_row(api: Api) -> None:
    h = api.tenant()
    trace_id, span_id = new_ids()
    reply = api.client.post(
        "/v1/traces", content=gz(traces(span(trace_id, span_id))), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/x-protobuf"
    assert not _response(reply.content).HasField("partial_success")  # full success: unset
    body = _trace(api, h, trace_id)
    (got,) = body["spans"]
    assert (got["trace_id"], got["span_id"]) == (trace_id.hex(), span_id.hex())
    assert got["service"] == "support-bot"
    assert got["model"] == "gpt-4o-mini-2026-01-01"
    assert got["llm"] is True and got["no_content"] is False
    assert got["scores"] == []
    assert got["duration_ms"] == 250.0
    row = got["row"]
    assert row["messages"] == [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": ANSWER, "finish_reason": "stop"},
    ]
    assert row["model_output"] == ANSWER
    assert row["scenario_input"] == "What is the capital of France?"
    assert row["metadata"]["usage"] == {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28}
    assert row["metadata"]["scope"] == "opentelemetry.util.genai.handler"


def test_json_with_hex_ids_is_decoded_right_and_answered_in_json(api: Api) -> None:
    h = api.tenant()
    trace_id, span_id = new_ids()
    document = otlp_json(traces(span(trace_id, span_id)))
    sent = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert sent["traceId"] == trace_id.hex()  # hex on the wire, as OTLP/JSON has it
    reply = api.client.post("/v1/traces", content=json.dumps(document), headers={**h, **JSON})
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {}
    # not the 24-byte id json_format makes of hex read as base64
    assert _trace(api, h, trace_id)["spans"][0]["span_id"] == span_id.hex()


def test_bad_ids_and_a_malformed_span_are_rejected_and_their_neighbours_kept(api: Api) -> None:
    h = api.tenant()
    good = [new_ids() for _ in range(2)]
    request = traces(
        span(*good[0]),
        span(b"\x01" * 12, b"\x02" * 8, name="short trace id"),
        span(good[1][0], b"\x03" * 4, name="short span id"),
        span(*good[1]),
    )
    reply = api.client.post("/v1/traces", content=gz(request), headers={**h, **GZIP_PROTOBUF})
    assert reply.status_code == 200
    partial = _response(reply.content).partial_success
    assert partial.rejected_spans == 2
    assert "span 'short trace id' trace id is 12 bytes, not 16" in partial.error_message
    assert "span 'short span id' span id is 4 bytes, not 8" in partial.error_message
    for trace_id, _ in good:
        assert len(_trace(api, h, trace_id)["spans"]) == 1

    # JSON: a span whose attributes are not a list, and one with a non-hex id
    trace_id, span_id = new_ids()
    document = otlp_json(traces(span(trace_id, span_id)))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**spans[0], "spanId": "00" * 8, "attributes": "not a list"})
    spans.append({**spans[0], "spanId": "zz" * 8})
    reply = api.client.post("/v1/traces", content=json.dumps(document), headers={**h, **JSON})
    assert reply.status_code == 200
    assert reply.json()["partialSuccess"]["rejectedSpans"] == "2"
    assert "spanId 'zzzzzzzzzzzzzzzz' is not hex" in reply.json()["partialSuccess"]["errorMessage"]
    assert [s["span_id"] for s in _trace(api, h, trace_id)["spans"]] == [span_id.hex()]


def test_an_exporter_retry_stores_nothing_new(api: Api) -> None:
    h = api.tenant()
    trace_id, span_id = new_ids()
    body = gz(traces(span(trace_id, span_id)))
    first = api.client.post("/v1/traces", content=body, headers={**h, **GZIP_PROTOBUF})
    before = _trace(api, h, trace_id)
    again = api.client.post("/v1/traces", content=body, headers={**h, **GZIP_PROTOBUF})
    assert (first.status_code, again.status_code) == (200, 200)
    assert _trace(api, h, trace_id) == before  # one span, its received_at unchanged
    changed = span(trace_id, span_id, attributes={"gen_ai.operation.name": "chat"})
    api.client.post("/v1/traces", content=gz(traces(changed)), headers={**h, **GZIP_PROTOBUF})
    assert _trace(api, h, trace_id) == before  # stored once: the first one stays


def test_undecodable_bodies_are_400_with_a_status_in_the_request_encoding(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post("/v1/traces", content=b"\xff\xff\xff", headers={**h, **PROTOBUF})
    assert reply.status_code == 400
    code, message = status(reply.content)
    assert code == 3 and "not an ExportTraceServiceRequest" in message
    reply = api.client.post("/v1/traces", content=b"{not json", headers={**h, **JSON})
    assert reply.status_code == 400
    assert reply.json()["code"] == 3 and "not JSON" in reply.json()["message"]
    reply = api.client.post("/v1/traces", content=b"not gzip", headers={**h, **GZIP_PROTOBUF})
    assert reply.status_code == 400 and "not valid gzip" in status(reply.content)[1]
    reply = api.client.post("/v1/traces", content=b"x", headers={**h, "content-type": "text/plain"})
    assert reply.status_code == 415
    assert "send application/x-protobuf or application/json" in reply.json()["message"]


def test_a_gzip_bomb_is_refused_without_inflating_it(make_api: AppFactory) -> None:
    api = make_api(max_body_mb=1)
    h = api.tenant()
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MB of zeros in about 64 KB
    assert len(bomb) < 1024 * 1024
    reply = api.client.post("/v1/traces", content=bomb, headers={**h, **GZIP_PROTOBUF})
    assert reply.status_code == 413
    assert "once decompressed" in status(reply.content)[1]
    too_big = b"\0" * (2 * 1024 * 1024)  # past the limit before decompression: BodyLimit
    reply = api.client.post("/v1/traces", content=too_big, headers={**h, **PROTOBUF})
    assert reply.status_code == 413


def test_keys(api: Api) -> None:
    trace_id, span_id = new_ids()
    body = gz(traces(span(trace_id, span_id)))
    wrong = {"authorization": "Bearer sbx_not_a_key", **GZIP_PROTOBUF}
    assert api.client.post("/v1/traces", content=body, headers=wrong).status_code == 401
    assert api.client.post("/v1/traces", content=body, headers=GZIP_PROTOBUF).status_code == 401
    assert api.client.post("/v1/logs", content=body, headers=wrong).status_code == 401
    h = api.tenant()
    assert api.client.get(f"/v1/traces/{trace_id.hex()}", headers=h).status_code == 404


def test_overloaded_is_503_with_retry_after(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    h = api.tenant()
    monkeypatch.setattr(traces_routes, "MAX_BATCHES_IN_FLIGHT", 0)
    trace_id, span_id = new_ids()
    reply = api.client.post(
        "/v1/traces", content=gz(traces(span(trace_id, span_id))), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 503
    assert reply.headers["retry-after"] == "1"
    assert status(reply.content)[0] == 14  # UNAVAILABLE
    monkeypatch.setattr(traces_routes, "MAX_BATCHES_IN_FLIGHT", 8)
    reply = api.client.post(
        "/v1/traces", content=gz(traces(span(trace_id, span_id))), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 200


DETAILS = {
    "gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": "What is the capital of France?"}]}
    ],
    "gen_ai.output.messages": [
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}
    ],
}
NO_CONTENT = {k: v for k, v in CHAT_ATTRIBUTES.items() if not k.endswith(".messages")}


@pytest.mark.parametrize("log_first", [False, True])
def test_content_log_records_are_joined_to_their_span(api: Api, log_first: bool) -> None:
    h = api.tenant()
    trace_id, span_id = new_ids()
    span_body = gz(traces(span(trace_id, span_id, attributes=NO_CONTENT)))
    log_body = gz(logs(trace_id, span_id, DETAILS))

    def send_log() -> None:
        reply = api.client.post("/v1/logs", content=log_body, headers={**h, **GZIP_PROTOBUF})
        assert reply.status_code == 200
        answer = ExportLogsServiceResponse()
        answer.ParseFromString(reply.content)
        assert not answer.HasField("partial_success")

    if log_first:
        send_log()
    api.client.post("/v1/traces", content=span_body, headers={**h, **GZIP_PROTOBUF})
    if not log_first:
        assert _trace(api, h, trace_id)["spans"][0]["no_content"] is True
        send_log()
        send_log()  # the exporter's retry: the record is kept once
    (got,) = _trace(api, h, trace_id)["spans"]
    assert got["no_content"] is False
    assert got["row"]["model_output"] == ANSWER
    assert got["row"]["messages"][0] == {
        "role": "user",
        "content": "What is the capital of France?",
    }
    assert got["row"]["metadata"]["usage"]["input_tokens"] == 21


def test_a_log_record_without_its_span_ids_is_rejected(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/logs", content=gz(logs(b"", b"", DETAILS)), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 200
    answer = ExportLogsServiceResponse()
    answer.ParseFromString(reply.content)
    assert answer.partial_success.rejected_log_records == 1
    assert "trace id is 0 bytes" in answer.partial_success.error_message


def test_spans_list_filters_paginates_and_isolates_tenants(api: Api) -> None:
    h, other = api.tenant(), api.tenant()
    start = 1_795_677_253_000_000_000
    sent = []
    for i in range(5):
        trace_id, span_id = new_ids()
        sent.append(trace_id.hex())
        attributes = dict(CHAT_ATTRIBUTES) if i % 2 == 0 else dict(NO_CONTENT)
        request = traces(
            span(trace_id, span_id, attributes=attributes, start=start + i * 1_000_000_000),
            service="bot-a" if i < 3 else "bot-b",
        )
        api.client.post("/v1/traces", content=gz(request), headers={**h, **GZIP_PROTOBUF})

    def ids(**params: Any) -> list[str]:
        reply = api.client.get("/v1/spans", headers=h, params=params)
        assert reply.status_code == 200, reply.text
        return [s["trace_id"] for s in reply.json()["spans"]]

    assert ids() == sent[::-1]
    assert ids(service="bot-b") == [sent[4], sent[3]]
    assert ids(no_content="true") == [sent[3], sent[1]]
    assert ids(text="CAPITAL of france") == [sent[4], sent[2], sent[0]]
    assert ids(text="%") == []
    assert ids(model="gpt-4o-mini-2026-01-01") == sent[::-1]
    middle = datetime.fromtimestamp((start + 2_000_000_000) / 1e9, UTC).isoformat()
    assert ids(since=middle) == [sent[4], sent[3], sent[2]]
    assert ids(until=middle) == [sent[1], sent[0]]
    pages: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        body = api.client.get("/v1/spans", headers=h, params=params).json()
        pages += [s["trace_id"] for s in body["spans"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == sent[::-1]
    assert api.client.get("/v1/spans", headers=h, params={"cursor": "junk"}).status_code == 422
    # another tenant sees none of it
    assert api.client.get("/v1/spans", headers=other).json()["spans"] == []
    assert api.client.get(f"/v1/traces/{sent[0]}", headers=other).status_code == 404


def test_migration_0013_goes_down_and_up_again(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, inspect, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import SpanRow, TenantRow

    h = api.tenant()
    trace_id, span_id = new_ids()
    api.client.post(
        "/v1/traces", content=gz(traces(span(trace_id, span_id))), headers={**h, **GZIP_PROTOBUF}
    )
    db = api.store.engine
    with db.connect() as conn:
        tenants = conn.scalar(select(func.count()).select_from(TenantRow))
        assert conn.scalar(select(func.count()).select_from(SpanRow)) == 1
    command.downgrade(alembic_config(db), "0012")
    assert not {"spans", "span_logs"} & set(inspect(db).get_table_names())
    upgrade(db)
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(TenantRow)) == tenants
        assert conn.scalar(select(func.count()).select_from(SpanRow)) == 0
    reply = api.client.post(
        "/v1/traces", content=gz(traces(span(trace_id, span_id))), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 200
    assert len(_trace(api, h, trace_id)["spans"]) == 1


def test_json_log_records_with_hex_ids_are_joined(api: Api) -> None:
    h = api.tenant()
    trace_id, span_id = new_ids()
    api.client.post(
        "/v1/traces",
        content=gz(traces(span(trace_id, span_id, attributes=NO_CONTENT))),
        headers={**h, **GZIP_PROTOBUF},
    )
    document = otlp_json(logs(trace_id, span_id, DETAILS))
    record = document["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert record["spanId"] == span_id.hex()  # hex on the wire
    other = {**record, "eventName": "app.audit", "spanId": "ab" * 8}  # accepted, not kept
    broken = {**record, "spanId": "abc"}  # odd hex: rejected
    document["resourceLogs"][0]["scopeLogs"][0]["logRecords"] += [other, broken]
    reply = api.client.post("/v1/logs", content=json.dumps(document), headers={**h, **JSON})
    assert reply.status_code == 200
    assert reply.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    (got,) = _trace(api, h, trace_id)["spans"]
    assert got["no_content"] is False
    assert got["row"]["model_output"] == ANSWER
