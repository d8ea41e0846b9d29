"""Gemini ``generateContent`` as google-genai sends it (``contents`` with the history a chat
resends, ``systemInstruction``, ``generationConfig``).

A ``responseSchema`` with ``text/x.enum`` is asked for upstream as a JSON-schema
``response_format`` holding one string, with the allowed values also in the prompt;
``application/json`` with a schema is asked for as that schema. The reply is checked against
it before the check sees it (:func:`engine.gateway.providers.replies.conform`), so
google-genai's ``response.parsed`` is a member of the check's enum.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.gateway.providers.fields import integer, json_schema_format, number
from engine.gateway.providers.replies import schema_error
from engine.gateway.providers.request import (
    ChatRequest,
    Expectation,
    GatewayRequestError,
    Provider,
    ProviderAdapter,
)
from engine.llm import Completion

_PATH = re.compile(r"^/(?:v1|v1beta|v1alpha)/models/([A-Za-z0-9._-]{1,128}):generateContent$")
#: Gemini's ``Type`` values that are JSON-schema types (``TYPE_UNSPECIFIED`` is none).
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def serves(route: str) -> bool:
    """``/v1*/models/<model>:generateContent``."""
    return _PATH.match(route) is not None


def _parts(content: Any, where: str) -> str:
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        raise GatewayRequestError(f"{where}: needs parts")
    pieces = []
    for part in content["parts"]:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise GatewayRequestError(f"{where}: only text parts are supported")
        if part.get("thought"):
            continue
        pieces.append(part["text"])
    return "".join(pieces)


def _pick(document: Mapping[str, Any], camel: str, snake: str) -> Any:
    return document.get(camel, document.get(snake))


def schema_to_json(schema: Any) -> dict[str, Any]:
    """An OpenAPI-style Gemini ``Schema`` (``type: STRING``...) as a JSON schema."""
    if not isinstance(schema, dict):
        raise GatewayRequestError("responseSchema must be an object")
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if isinstance(kind, str) and kind.lower() in _JSON_TYPES:
        out["type"] = kind.lower()
    if isinstance(schema.get("enum"), list):
        out["enum"] = [str(v) for v in schema["enum"]]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: schema_to_json(v) for k, v in schema["properties"].items()}
        out["additionalProperties"] = False
    if isinstance(schema.get("required"), list):
        out["required"] = [str(v) for v in schema["required"]]
    if "items" in schema:
        out["items"] = schema_to_json(schema["items"])
    if schema.get("nullable") is True and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def _enum(schema: Any, messages: list[dict[str, str]]) -> tuple[Mapping[str, Any], Expectation]:
    values = schema.get("enum") if isinstance(schema, dict) else None
    if not isinstance(values, list) or not values:
        raise GatewayRequestError("text/x.enum needs a responseSchema with enum values")
    allowed = [str(v) for v in values]
    messages.append(
        {
            "role": "system",
            "content": "Answer with exactly one of these values and nothing else: "
            + ", ".join(json.dumps(v) for v in allowed)
            + '. Reply as JSON: {"value": <one of them>}.',
        }
    )
    fmt = json_schema_format(
        {
            "type": "object",
            "properties": {"value": {"type": "string", "enum": allowed}},
            "required": ["value"],
            "additionalProperties": False,
        }
    )
    return fmt, Expectation(values=tuple(allowed))


def _json(schema: Any, json_schema: Any) -> tuple[Mapping[str, Any], Expectation]:
    if isinstance(json_schema, dict):
        problem = schema_error(json_schema)
        if problem:
            raise GatewayRequestError(f"responseJsonSchema is not a JSON schema: {problem}")
        return json_schema_format(json_schema), Expectation(schema=json_schema)
    if isinstance(schema, dict):
        converted = schema_to_json(schema)
        return json_schema_format(converted), Expectation(schema=converted)
    return {"type": "json_object"}, Expectation(schema={})


def _expect(
    config: Mapping[str, Any], messages: list[dict[str, str]]
) -> tuple[Mapping[str, Any] | None, Expectation | None]:
    mime = _pick(config, "responseMimeType", "response_mime_type")
    schema = _pick(config, "responseSchema", "response_schema")
    if mime == "text/x.enum":
        return _enum(schema, messages)
    if mime == "application/json":
        return _json(schema, _pick(config, "responseJsonSchema", "response_json_schema"))
    if mime not in (None, "text/plain"):
        raise GatewayRequestError(f"responseMimeType {mime!r} is not supported by the gateway")
    return None, None


def parse(document: Mapping[str, Any], route: str) -> ChatRequest:
    """The system instruction and contents as messages; the model from the route."""
    match = _PATH.match(route)
    if match is None:
        raise GatewayRequestError(f"{route} is not a Gemini generateContent path", 404)
    if document.get("tools"):
        raise GatewayRequestError("tools are not supported by the scorebox gateway")
    messages: list[dict[str, str]] = []
    system = _pick(document, "systemInstruction", "system_instruction")
    if system is not None:
        messages.append({"role": "system", "content": _parts(system, "systemInstruction")})
    contents = document.get("contents")
    if not isinstance(contents, list) or not contents:
        raise GatewayRequestError("contents must be a non-empty list")
    for index, content in enumerate(contents):
        role = content.get("role", "user") if isinstance(content, dict) else None
        if role not in ("user", "model"):
            raise GatewayRequestError(f"contents[{index}]: role must be user or model")
        text = _parts(content, f"contents[{index}]")
        messages.append({"role": "assistant" if role == "model" else "user", "content": text})
    config = _pick(document, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise GatewayRequestError("generationConfig must be an object")
    if config.get("candidateCount") not in (None, 1):
        raise GatewayRequestError("candidateCount must be 1 through the scorebox gateway")
    response_format, expect = _expect(config, messages)
    return ChatRequest(
        Provider.GEMINI,
        tuple(messages),
        model=match.group(1),
        temperature=number(config, "temperature"),
        max_tokens=integer(config, "maxOutputTokens", "max_output_tokens"),
        response_format=response_format,
        expect=expect,
    )


def render(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` with one candidate holding ``text`` (the conformed
    reply: an enum's bare value, or the checked JSON)."""
    usage = completion.usage
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "MAX_TOKENS" if completion.finish_reason == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage.prompt_tokens,
            "candidatesTokenCount": usage.completion_tokens,
            "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
        },
        "modelVersion": served_by,
    }


def render_error(status: int, message: str) -> dict[str, Any]:
    """Google's error object (google-genai puts ``error.message`` in its exception)."""
    return {"error": {"code": status, "message": message, "status": "FAILED_PRECONDITION"}}


ADAPTERS = (ProviderAdapter(Provider.GEMINI, serves, parse, render, render_error),)
