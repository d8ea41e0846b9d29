"""Span scores as OTLP log records: the ``gen_ai.evaluation.result`` event (pure).

One record per score, carrying the scored span's trace and span ids, so that a
collector, Jaeger, Tempo, Phoenix or Langfuse shows it on that span. The attributes are
the GenAI convention's (``gen_ai.evaluation.name``, ``.score.value``, ``.score.label``,
``.explanation``) plus scorebox's own under ``scorebox.*``: the rule and its version,
the check version, the row status and the score's id (delivery is at least once: a
receiver may drop a record whose ``scorebox.score_id`` it has seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

__all__ = ["EVENT_NAME", "ExportedScore", "export_request"]

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE = "scorebox.online"
#: Explanations are long at times; a record stays well under any collector's limits.
MAX_EXPLANATION_CHARS = 4096
SEVERITY_INFO = 9  # SeverityNumber.SEVERITY_NUMBER_INFO


@dataclass(frozen=True)
class ExportedScore:
    """What one record says: a span score and where it belongs."""

    score_id: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    rule: str
    rule_version: int
    check: str
    check_version: int | None
    status: str
    score: float | None
    passed: bool | None
    explanation: str | None
    scored_at: datetime


def _kv(key: str, value: str | int | float | bool) -> KeyValue:
    any_value = AnyValue()
    if isinstance(value, bool):
        any_value.bool_value = value
    elif isinstance(value, int):
        any_value.int_value = value
    elif isinstance(value, float):
        any_value.double_value = value
    else:
        any_value.string_value = value
    return KeyValue(key=key, value=any_value)


def _record(score: ExportedScore) -> LogRecord:
    moment = int(score.scored_at.timestamp() * 1e9)
    record = LogRecord(
        time_unix_nano=moment,
        observed_time_unix_nano=moment,
        severity_number=SEVERITY_INFO,  # type: ignore[arg-type]
        severity_text="INFO",
        event_name=EVENT_NAME,
        trace_id=bytes.fromhex(score.trace_id),
        span_id=bytes.fromhex(score.span_id),
    )
    attributes = [_kv("gen_ai.evaluation.name", score.check)]
    if score.score is not None:
        attributes.append(_kv("gen_ai.evaluation.score.value", float(score.score)))
    if score.passed is not None:
        attributes.append(_kv("gen_ai.evaluation.score.label", "pass" if score.passed else "fail"))
    if score.explanation:
        attributes.append(
            _kv("gen_ai.evaluation.explanation", score.explanation[:MAX_EXPLANATION_CHARS])
        )
    attributes += [
        _kv("scorebox.rule", score.rule),
        _kv("scorebox.rule_version", score.rule_version),
        _kv("scorebox.status", score.status),
        _kv("scorebox.score_id", score.score_id),
    ]
    if score.check_version is not None:
        attributes.append(_kv("scorebox.check_version", score.check_version))
    record.attributes.extend(attributes)
    return record


def export_request(scores: Sequence[ExportedScore]) -> ExportLogsServiceRequest:
    """One OTLP/HTTP logs request with a record per score, from ``service.name=scorebox``."""
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.append(_kv("service.name", "scorebox"))
    scope_logs = resource_logs.scope_logs.add()
    scope_logs.scope.name = SCOPE
    scope_logs.log_records.extend(_record(s) for s in scores)
    return request
