"""The providers the gateway speaks, assembled from their modules, and the generic half of
a request: which provider a path is, the HTTP checks every provider shares, and rendering
a reply or an error in the client's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.gateway.providers import cohere, gemini, openai
from engine.gateway.providers.request import (
    ChatRequest,
    GatewayRequestError,
    Provider,
    ProviderAdapter,
)
from engine.llm import Completion

#: Each provider's adapter, in the order a path is matched against their routes.
PROVIDERS: Mapping[Provider, ProviderAdapter] = {
    adapter.provider: adapter for module in (openai, cohere, gemini) for adapter in module.ADAPTERS
}


def _route(path: str) -> str:
    return path.split("?", 1)[0]


def provider_of(path: str) -> Provider | None:
    """Which client's API ``path`` belongs to (None: none the gateway serves)."""
    route = _route(path)
    return next((p for p, adapter in PROVIDERS.items() if adapter.serves(route)), None)


def parse_request(method: str, path: str, body: str) -> ChatRequest:
    """The chat request in one HTTP request from a check; GatewayRequestError if none."""
    route = _route(path)
    provider = provider_of(route)
    if provider is None:
        raise GatewayRequestError(
            f"the scorebox model gateway serves chat only (OpenAI /v1/chat/completions, Cohere "
            f"/v1/chat and /v2/chat, Gemini models/*:generateContent), not {method} {route}",
            404,
        )
    if method != "POST":
        raise GatewayRequestError(f"{route} takes POST, not {method}", 405)
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise GatewayRequestError(f"the request body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise GatewayRequestError("the request body must be a JSON object")
    if document.get("stream") or document.get("stream_options"):
        raise GatewayRequestError("streaming is not supported by the scorebox model gateway")
    return PROVIDERS[provider].parse(document, route)


def render(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """The client's success body for ``completion`` (``text`` already conformed)."""
    return PROVIDERS[request.provider].render(
        request, completion, text, served_by, created, request_id
    )


def render_error(provider: Provider | None, status: int, message: str) -> dict[str, Any]:
    """An error body each client SDK surfaces with ``message`` in its exception text (a
    path no provider serves gets OpenAI's shape)."""
    adapter = PROVIDERS[provider if provider is not None else Provider.OPENAI]
    return adapter.render_error(status, message)
