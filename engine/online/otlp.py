"""OTLP/HTTP requests in and answers out: ``opentelemetry-proto``'s generated messages.

Bodies are protobuf (``application/x-protobuf``) or OTLP/JSON (``application/json``),
optionally gzip. Decompression is capped (a gzip bomb is refused, not inflated). OTLP/JSON
carries trace and span ids as hex, which ``json_format`` would silently read as base64
(a 24-byte trace id): they are converted first, and an id that is not 16 (trace) or 8
(span) bytes rejects its span, counted in ``partial_success``. JSON spans are decoded one
by one, so one malformed span is rejected and its neighbours kept.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from engine.online.mapping import CONTENT_EVENTS, Event, Span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: google.rpc.Code values used in error bodies.
INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8
UNAVAILABLE = 14


class OtlpError(Exception):
    """A request refused whole: its HTTP status and a message for ``google.rpc.Status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def encoding_of(content_type: str | None) -> str:
    """``PROTOBUF`` or ``JSON`` from a Content-Type; 415 for anything else."""
    base = (content_type or "").split(";")[0].strip().lower()
    if base in (PROTOBUF, JSON):
        return base
    raise OtlpError(
        415,
        f"unsupported Content-Type {content_type or '(none)'!r}: send {PROTOBUF} or {JSON}",
    )


def decompress(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body inflated (gzip) or as is; 413 past ``limit`` bytes once inflated."""
    coding = (content_encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "deflate"):
        raise OtlpError(415, f"unsupported Content-Encoding {coding!r}: send gzip or none")
    inflater = zlib.decompressobj(zlib.MAX_WBITS | (16 if coding == "gzip" else 0))
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpError(400, f"the body is not valid {coding}: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OtlpError(
            413,
            f"request body over {limit} bytes once decompressed: send smaller batches "
            "(the exporter's max_export_batch_size), or raise SCOREBOX_MAX_BODY_MB",
        )
    return out


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as plain JSON-able Python (bytes as base64)."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None if which is None else getattr(value, which)


def attributes(pairs: Any) -> dict[str, Any]:
    """Key-value pairs as a dict. Most values are strings: they are read by name, which
    costs half what ``any_value``'s ``getattr`` does (this runs for every attribute of
    every span received)."""
    out: dict[str, Any] = {}
    for kv in pairs:
        value = kv.value
        which = value.WhichOneof("value")
        if which == "string_value":
            out[kv.key] = value.string_value
        elif which == "int_value":
            out[kv.key] = value.int_value
        else:
            out[kv.key] = any_value(value)
    return out


def _hex_id(value: Any, size: int, what: str) -> str:
    """An OTLP/JSON hex id as base64 for ``json_format``; ValueError if not ``size`` bytes."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is a hex string")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{what} {value[:64]!r} is not hex") from None
    if len(raw) != size:
        raise ValueError(f"{what} is {len(raw)} bytes, not {size}")
    return base64.b64encode(raw).decode()


@dataclass
class Decoded:
    """The spans (or log records) kept, and those rejected with why."""

    spans: list[Span] = field(default_factory=list)
    logs: list[tuple[str, str, Event]] = field(default_factory=list)  # trace, span, event
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, why: str) -> None:
        self.rejected += 1
        if len(self.errors) < 5:
            self.errors.append(why)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise OtlpError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise OtlpError(400, "the body is a JSON object (an ExportTraceServiceRequest)")
    return document


def _parse_dict(document: Any, message: Message) -> None:
    json_format.ParseDict(document, message, ignore_unknown_fields=True)


def _check_ids(trace_id: bytes, span_id: bytes, what: str) -> None:
    if len(trace_id) != 16:
        raise ValueError(f"{what} trace id is {len(trace_id)} bytes, not 16")
    if len(span_id) != 8:
        raise ValueError(f"{what} span id is {len(span_id)} bytes, not 8")


def _span(pb: PbSpan, resource: dict[str, Any], scope: InstrumentationScope) -> Span:
    _check_ids(pb.trace_id, pb.span_id, f"span {pb.name!r}")
    if pb.parent_span_id and len(pb.parent_span_id) != 8:
        raise ValueError(f"span {pb.name!r} parent span id is not 8 bytes")
    return Span(
        trace_id=pb.trace_id.hex(),
        span_id=pb.span_id.hex(),
        parent_span_id=pb.parent_span_id.hex() or None,
        name=pb.name,
        kind=int(pb.kind),
        start_unix_nano=int(pb.start_time_unix_nano),
        end_unix_nano=int(pb.end_time_unix_nano),
        status_code=int(pb.status.code),
        status_message=pb.status.message,
        attributes=attributes(pb.attributes),
        events=tuple(Event(e.name, attributes(e.attributes)) for e in pb.events),
        resource=resource,
        scope_name=scope.name,
        scope_version=scope.version,
    )


def decode_traces(body: bytes, encoding: str) -> Decoded:
    """An ``ExportTraceServiceRequest``'s spans; 400 when the body cannot be read at all."""
    out = Decoded()
    if encoding == PROTOBUF:
        _protobuf_traces(body, out)
    else:
        for rs in _list(_json_object(body), "resourceSpans"):
            _json_resource_spans(rs, out)
    return out


def _protobuf_traces(body: bytes, out: Decoded) -> None:
    """A protobuf request's spans into ``out``, each rejected alone when its ids are wrong."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise OtlpError(400, f"the body is not an ExportTraceServiceRequest: {exc}") from None
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for pb in ss.spans:
                try:
                    out.spans.append(_span(pb, resource, ss.scope))
                except ValueError as exc:
                    out.reject(str(exc))


def _json_resource_spans(rs: Any, out: Decoded) -> None:
    """One OTLP/JSON ``resourceSpans`` entry's spans into ``out``: every one rejected when its
    resource is malformed, else each decoded (or rejected) alone."""
    scopes = _list(rs, "scopeSpans")
    try:
        resource_pb = Resource()
        _parse_dict(rs.get("resource", {}), resource_pb)
        resource = attributes(resource_pb.attributes)
    except (json_format.ParseError, AttributeError) as exc:
        for ss in scopes:
            for _ in _list(ss, "spans"):
                out.reject(f"resource: {exc}")
        return
    for ss in scopes:
        scope = InstrumentationScope()
        try:
            _parse_dict(ss.get("scope", {}), scope)
        except (json_format.ParseError, AttributeError):
            scope = InstrumentationScope()
        for raw in _list(ss, "spans"):
            try:
                out.spans.append(_span(_json_span(raw), resource, scope))
            except (ValueError, json_format.ParseError, AttributeError) as exc:
                out.reject(str(exc))


def _list(document: Any, key: str) -> list[Any]:
    value = document.get(key, []) if isinstance(document, dict) else []
    if not isinstance(value, list):
        raise OtlpError(400, f"{key} is a list")
    return value


def _json_span(raw: Any) -> PbSpan:
    if not isinstance(raw, dict):
        raise ValueError("a span is a JSON object")
    fixed = dict(raw)
    fixed["traceId"] = _hex_id(raw.get("traceId"), 16, "traceId")
    fixed["spanId"] = _hex_id(raw.get("spanId"), 8, "spanId")
    if raw.get("parentSpanId"):
        fixed["parentSpanId"] = _hex_id(raw["parentSpanId"], 8, "parentSpanId")
    links = raw.get("links")
    if isinstance(links, list):
        fixed["links"] = [_json_link(link) for link in links]
    pb = PbSpan()
    _parse_dict(fixed, pb)
    return pb


def _json_link(link: Any) -> Any:
    if not isinstance(link, dict):
        return link
    return {
        **link,
        "traceId": _hex_id(link.get("traceId"), 16, "link traceId"),
        "spanId": _hex_id(link.get("spanId"), 8, "link spanId"),
    }


def _log_event(record: LogRecord) -> Event | None:
    attrs = attributes(record.attributes)
    name = record.event_name or str(attrs.get("event.name", ""))
    if name not in CONTENT_EVENTS:
        return None
    body = any_value(record.body) if record.HasField("body") else None
    return Event(name, attrs, body)


def decode_logs(body: bytes, encoding: str) -> Decoded:
    """The GenAI content records of an ``ExportLogsServiceRequest``, each with its span's ids.

    Records of other events are accepted and not kept. A content record without a
    16-byte trace id and an 8-byte span id cannot be joined to its span: rejected."""
    out = Decoded()
    request = ExportLogsServiceRequest()
    if encoding == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise OtlpError(400, f"the body is not an ExportLogsServiceRequest: {exc}") from None
        records = [
            r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records
        ]
    else:
        records = []
        for rl in _list(_json_object(body), "resourceLogs"):
            for sl in _list(rl, "scopeLogs"):
                for raw in _list(sl, "logRecords"):
                    try:
                        records.append(_json_log(raw))
                    except (ValueError, json_format.ParseError, AttributeError) as exc:
                        out.reject(str(exc))
    for record in records:
        event = _log_event(record)
        if event is None:
            continue
        try:
            _check_ids(record.trace_id, record.span_id, f"log record {event.name!r}")
        except ValueError as exc:
            out.reject(str(exc))
            continue
        out.logs.append((record.trace_id.hex(), record.span_id.hex(), event))
    return out


def _json_log(raw: Any) -> LogRecord:
    if not isinstance(raw, dict):
        raise ValueError("a log record is a JSON object")
    fixed = dict(raw)
    for key, size in (("traceId", 16), ("spanId", 8)):
        if raw.get(key):
            fixed[key] = _hex_id(raw[key], size, key)
    record = LogRecord()
    _parse_dict(fixed, record)
    return record


def _encode(message: Message, encoding: str) -> bytes:
    if encoding == PROTOBUF:
        return bytes(message.SerializeToString())
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()


def trace_response(decoded: Decoded, encoding: str) -> bytes:
    """``ExportTraceServiceResponse``; ``partial_success`` set only when spans were rejected."""
    response = ExportTraceServiceResponse()
    if decoded.rejected:
        response.partial_success.rejected_spans = decoded.rejected
        response.partial_success.error_message = _summary(decoded)
    return _encode(response, encoding)


def logs_response(decoded: Decoded, encoding: str) -> bytes:
    """``ExportLogsServiceResponse``; ``partial_success`` only when records were rejected."""
    response = ExportLogsServiceResponse()
    if decoded.rejected:
        response.partial_success.rejected_log_records = decoded.rejected
        response.partial_success.error_message = _summary(decoded)
    return _encode(response, encoding)


def _summary(decoded: Decoded) -> str:
    more = decoded.rejected - len(decoded.errors)
    return "; ".join(decoded.errors) + (f"; and {more} more" if more > 0 else "")


def status_body(code: int, message: str, encoding: str) -> bytes:
    """A ``google.rpc.Status`` (``code`` = 1, ``message`` = 2), hand-encoded: two fields do
    not need googleapis-common-protos."""
    if encoding != PROTOBUF:
        return json.dumps({"code": code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
