"""OpenAI chat completions (``POST .../chat/completions``): ``messages`` in, ``choices`` out;
``response_format`` passes through to the operator's endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.gateway.providers.fields import integer, model_of, number, text_of
from engine.gateway.providers.request import (
    ChatRequest,
    GatewayRequestError,
    Provider,
    ProviderAdapter,
)
from engine.llm import Completion

_ROLES = {"system", "user", "assistant", "developer"}
_UNSUPPORTED = ("tools", "functions", "tool_choice", "audio", "logprobs")


def serves(route: str) -> bool:
    """Any path ending in ``/chat/completions`` (SDKs put a version or deployment before)."""
    return route.endswith("/chat/completions")


def parse(document: Mapping[str, Any], route: str) -> ChatRequest:
    """A chat completions request; tools, audio, logprobs and ``n > 1`` are refused."""
    for unsupported in _UNSUPPORTED:
        if document.get(unsupported):
            raise GatewayRequestError(f"{unsupported} is not supported by the scorebox gateway")
    if document.get("n") not in (None, 1):
        raise GatewayRequestError("n must be 1 through the scorebox gateway")
    raw = document.get("messages")
    if not isinstance(raw, list) or not raw:
        raise GatewayRequestError("messages must be a non-empty list")
    messages = []
    for index, message in enumerate(raw):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise GatewayRequestError(
                f"messages[{index}]: role must be one of {', '.join(sorted(_ROLES))}"
            )
        role = "system" if message["role"] == "developer" else message["role"]
        messages.append(
            {"role": role, "content": text_of(message.get("content"), f"messages[{index}]")}
        )
    response_format = document.get("response_format")
    if response_format is not None and not isinstance(response_format, dict):
        raise GatewayRequestError("response_format must be an object")
    return ChatRequest(
        Provider.OPENAI,
        tuple(messages),
        model=model_of(document),
        temperature=number(document, "temperature"),
        max_tokens=integer(document, "max_completion_tokens", "max_tokens"),
        response_format=response_format,
    )


def render(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice."""
    usage = completion.usage
    return {
        "id": f"chatcmpl-scorebox-{request_id}",
        "object": "chat.completion",
        "created": created,
        "model": served_by,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": completion.text, "refusal": None},
                "finish_reason": completion.finish_reason or "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }


def render_error(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error object (the openai SDK puts ``error.message`` in its exception)."""
    return {"error": {"message": message, "type": "scorebox_gateway", "code": status}}


ADAPTERS = (ProviderAdapter(Provider.OPENAI, serves, parse, render, render_error),)
