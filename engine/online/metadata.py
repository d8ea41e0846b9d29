"""A span's metadata for its row: ids, service, operation, provider, models, usage,
session, user, environment and status, each from the conventions that carry it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.online.mapping import Span

STATUS_NAMES = {0: "unset", 1: "ok", 2: "error"}


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _usage(a: dict[str, Any]) -> dict[str, int]:
    usage = {
        "input_tokens": _int(
            _first(
                a.get("gen_ai.usage.input_tokens"),
                a.get("llm.token_count.prompt"),
                a.get("gen_ai.usage.prompt_tokens"),
            )
        ),
        "output_tokens": _int(
            _first(
                a.get("gen_ai.usage.output_tokens"),
                a.get("llm.token_count.completion"),
                a.get("gen_ai.usage.completion_tokens"),
            )
        ),
        "total_tokens": _int(
            _first(
                a.get("gen_ai.usage.total_tokens"),
                a.get("llm.token_count.total"),
                a.get("llm.usage.total_tokens"),
            )
        ),
        "cache_read_input_tokens": _int(
            _first(
                a.get("gen_ai.usage.cache_read.input_tokens"),
                a.get("llm.token_count.prompt_details.cache_read"),
            )
        ),
        "reasoning_output_tokens": _int(a.get("gen_ai.usage.reasoning.output_tokens")),
    }
    inp, out = usage["input_tokens"], usage["output_tokens"]
    if usage["total_tokens"] is None and inp is not None and out is not None:
        usage["total_tokens"] = inp + out
    return {k: v for k, v in usage.items() if v is not None}


def _finish_reasons(a: dict[str, Any], output: list[dict[str, Any]]) -> list[str]:
    reasons = a.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list):
        return [str(r) for r in reasons]
    if isinstance(a.get("llm.finish_reason"), str):
        return [a["llm.finish_reason"]]
    return [m["finish_reason"] for m in output if isinstance(m.get("finish_reason"), str)]


def operation_of(a: dict[str, Any]) -> str | None:
    op = _first(a.get("gen_ai.operation.name"), a.get("llm.request.type"))
    if op is None and str(a.get("openinference.span.kind", "")).upper() == "LLM":
        return "chat"
    return None if op is None else str(op)


def span_metadata(span: Span, a: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
    r = span.resource
    meta: dict[str, Any] = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "span_name": span.name,
        "scope": span.scope_name or None,
        "scope_version": span.scope_version or None,
        "service_name": r.get("service.name"),
        "operation": operation_of(a),
        "provider": _first(
            a.get("gen_ai.provider.name"),
            a.get("gen_ai.system"),
            a.get("llm.provider"),
            a.get("llm.system"),
        ),
        "request_model": _first(a.get("gen_ai.request.model"), a.get("llm.request.model")),
        "response_model": _first(
            a.get("gen_ai.response.model"), a.get("llm.response.model"), a.get("llm.model_name")
        ),
        "response_id": a.get("gen_ai.response.id"),
        "finish_reasons": _finish_reasons(a, output),
        "usage": _usage(a),
        "session_id": _first(a.get("session.id"), a.get("gen_ai.conversation.id")),
        "user_id": _first(a.get("user.id"), a.get("enduser.id")),
        "environment": _first(
            a.get("deployment.environment.name"),
            r.get("deployment.environment.name"),
            a.get("deployment.environment"),
            r.get("deployment.environment"),
        ),
        "status": STATUS_NAMES.get(span.status_code, "unset"),
    }
    if span.status_message:
        meta["status_message"] = span.status_message
    return {k: v for k, v in meta.items() if v is not None}
