"""OTLP requests built with ``opentelemetry-proto`` for the receiver tests, and a reader of
the ``google.rpc.Status`` error body (made from its two-field definition, not from the
receiver's encoder)."""

from __future__ import annotations

import base64
import gzip
import json
import secrets
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.proto.trace.v1.trace_pb2 import Status as Status_pb

PROTOBUF = {"content-type": "application/x-protobuf"}
GZIP_PROTOBUF = {**PROTOBUF, "content-encoding": "gzip"}
JSON = {"content-type": "application/json"}

# openai-v2 2.4b0 span_only, as decoded from a real request
CHAT_ATTRIBUTES: dict[str, Any] = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.provider.name": "openai",
    "gen_ai.response.model": "gpt-4o-mini-2026-01-01",
    "gen_ai.usage.input_tokens": 21,
    "gen_ai.usage.output_tokens": 7,
    "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "What is the capital of France?"}]}]
    ),
    "gen_ai.output.messages": json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Paris is the capital of France."}],
                "finish_reason": "stop",
            }
        ]
    ),
}


def any_value(value: Any) -> AnyValue:
    out = AnyValue()
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, list):
        out.array_value.values.extend(any_value(v) for v in value)
    elif isinstance(value, dict):
        out.kvlist_value.values.extend(
            KeyValue(key=k, value=any_value(v)) for k, v in value.items()
        )
    return out


def new_ids() -> tuple[bytes, bytes]:
    return secrets.token_bytes(16), secrets.token_bytes(8)


def span(
    trace_id: bytes,
    span_id: bytes,
    name: str = "chat gpt-4o-mini",
    attributes: dict[str, Any] | None = None,
    start: int = 1_795_677_253_708_726_650,
    parent: bytes = b"",
) -> Span:
    out = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=start + 250_000_000,
    )
    out.status.code = Status_pb.STATUS_CODE_OK
    for key, value in (CHAT_ATTRIBUTES if attributes is None else attributes).items():
        out.attributes.append(KeyValue(key=key, value=any_value(value)))
    return out


def traces(*spans: Span, service: str = "support-bot") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.append(KeyValue(key="service.name", value=any_value(service)))
    ss = rs.scope_spans.add()
    ss.scope.name = "opentelemetry.util.genai.handler"
    ss.spans.extend(spans)
    return request


def logs(trace_id: bytes, span_id: bytes, attributes: dict[str, Any]) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    record = LogRecord(trace_id=trace_id, span_id=span_id)
    record.event_name = "gen_ai.client.inference.operation.details"
    for key, value in attributes.items():
        record.attributes.append(KeyValue(key=key, value=any_value(value)))
    request.resource_logs.add().scope_logs.add().log_records.append(record)
    return request


def gz(request: Any) -> bytes:
    return gzip.compress(request.SerializeToString())


def otlp_json(request: Any) -> dict[str, Any]:
    """The request as OTLP/JSON puts it on the wire: ids in hex, not base64."""
    document: dict[str, Any] = json_format.MessageToDict(request)

    def fix(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    node[key] = base64.b64decode(value).hex()
                else:
                    fix(value)
        elif isinstance(node, list):
            for item in node:
                fix(item)

    fix(document)
    return document


def _status_class() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(name="test_status.proto", package="google.rpc")
    message = proto.message_type.add(name="Status")
    message.field.add(name="code", number=1, type=5, label=1)  # int32
    message.field.add(name="message", number=2, type=9, label=1)  # string
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.Status"))


Status = _status_class()


def status(body: bytes) -> tuple[int, str]:
    """A protobuf ``google.rpc.Status`` body's code and message."""
    message = Status()
    message.ParseFromString(body)
    return int(message.code), str(message.message)
