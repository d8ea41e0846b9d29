"""Cohere chat, v1 (``POST /v1/chat``: ``message``, ``preamble``, ``chat_history`` ->
``text``) and v2 (``POST /v2/chat``: ``messages`` -> ``message.content[].text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.gateway.providers.fields import (
    integer,
    json_schema_format,
    model_of,
    number,
    text_of,
)
from engine.gateway.providers.request import (
    ChatRequest,
    GatewayRequestError,
    Provider,
    ProviderAdapter,
)
from engine.llm import Completion

_V1_ROLES = {"USER": "user", "CHATBOT": "assistant", "SYSTEM": "system"}
_V2_ROLES = ("system", "user", "assistant")


def _response_format(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fmt = document.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object"):
        raise GatewayRequestError("response_format.type must be text or json_object")
    if fmt["type"] == "text":
        return None
    schema = fmt.get("json_schema", fmt.get("schema"))
    if isinstance(schema, dict):
        return json_schema_format(schema)
    return {"type": "json_object"}


def serves_v1(route: str) -> bool:
    """``/v1/chat``."""
    return route == "/v1/chat"


def serves_v2(route: str) -> bool:
    """``/v2/chat``."""
    return route == "/v2/chat"


def parse_v1(document: Mapping[str, Any], route: str) -> ChatRequest:
    """A v1 chat: the preamble as a system message, the history, then ``message``."""
    message = document.get("message")
    if not isinstance(message, str) or not message:
        raise GatewayRequestError("message must be a non-empty string")
    messages: list[Mapping[str, str]] = []
    preamble = document.get("preamble")
    if isinstance(preamble, str) and preamble:
        messages.append({"role": "system", "content": preamble})
    history = document.get("chat_history") or []
    if not isinstance(history, list):
        raise GatewayRequestError("chat_history must be a list")
    echoed: list[Mapping[str, str]] = []
    for index, turn in enumerate(history):
        role = turn.get("role") if isinstance(turn, dict) else None
        text = turn.get("message") if isinstance(turn, dict) else None
        if role not in _V1_ROLES or not isinstance(text, str):
            raise GatewayRequestError(
                f"chat_history[{index}]: needs role USER, CHATBOT or SYSTEM and a message"
            )
        messages.append({"role": _V1_ROLES[role], "content": text})
        echoed.append({"role": role, "message": text})
    messages.append({"role": "user", "content": message})
    echoed.append({"role": "USER", "message": message})
    return ChatRequest(
        Provider.COHERE_V1,
        tuple(messages),
        model=model_of(document),
        temperature=number(document, "temperature"),
        max_tokens=integer(document, "max_tokens"),
        response_format=_response_format(document),
        history=tuple(echoed),
    )


def parse_v2(document: Mapping[str, Any], route: str) -> ChatRequest:
    """A v2 chat: OpenAI-like ``messages`` (text only, no tools)."""
    raw = document.get("messages")
    if not isinstance(raw, list) or not raw:
        raise GatewayRequestError("messages must be a non-empty list")
    if document.get("tools"):
        raise GatewayRequestError("tools are not supported by the scorebox gateway")
    messages = []
    for index, message in enumerate(raw):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _V2_ROLES:
            raise GatewayRequestError(f"messages[{index}]: role must be system, user or assistant")
        messages.append(
            {"role": role, "content": text_of(message.get("content"), f"messages[{index}]")}
        )
    return ChatRequest(
        Provider.COHERE_V2,
        tuple(messages),
        model=model_of(document),
        temperature=number(document, "temperature"),
        max_tokens=integer(document, "max_tokens"),
        response_format=_response_format(document),
    )


def _finish(completion: Completion) -> str:
    return "MAX_TOKENS" if completion.finish_reason == "length" else "COMPLETE"


def _usage(completion: Completion) -> dict[str, Any]:
    counts = {
        "input_tokens": completion.usage.prompt_tokens,
        "output_tokens": completion.usage.completion_tokens,
    }
    return {"billed_units": dict(counts), "tokens": dict(counts)}


def render_v1(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """A v1 reply: ``text``, and the history echoed with the reply appended."""
    return {
        "response_id": f"scorebox-{request_id}",
        "generation_id": f"scorebox-{request_id}",
        "text": completion.text,
        "finish_reason": _finish(completion),
        "chat_history": [*request.history, {"role": "CHATBOT", "message": completion.text}],
        "meta": {"api_version": {"version": "1"}, **_usage(completion)},
    }


def render_v2(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """A v2 reply: the assistant message's text content."""
    return {
        "id": f"scorebox-{request_id}",
        "finish_reason": _finish(completion),
        "message": {"role": "assistant", "content": [{"type": "text", "text": completion.text}]},
        "usage": _usage(completion),
    }


def render_error(status: int, message: str) -> dict[str, Any]:
    """Cohere's error body (both SDK versions show ``message``)."""
    return {"message": message}


ADAPTERS = (
    ProviderAdapter(Provider.COHERE_V1, serves_v1, parse_v1, render_v1, render_error),
    ProviderAdapter(Provider.COHERE_V2, serves_v2, parse_v2, render_v2, render_error),
)
