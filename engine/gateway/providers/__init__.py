"""The model gateway's pure half: each provider's HTTP shape <-> one chat request.

A check's client sends one of three wire formats to the gateway; each becomes one
:class:`ChatRequest` (OpenAI-style messages, the model asked for, parameters, and what the
reply must look like), answered by the operator's OpenAI-compatible endpoint, and the
:class:`~engine.llm.Completion` is rendered back in the shape the client expects. One module
per provider API parses its request and renders its reply and its error:

* :mod:`.openai`: chat completions (``POST .../chat/completions``);
* :mod:`.cohere`: chat v1 (``POST /v1/chat``) and v2 (``POST /v2/chat``);
* :mod:`.gemini`: ``generateContent`` as google-genai sends it, with its response schemas.

:mod:`.registry` assembles them and holds what every provider shares; :mod:`.replies`
checks a reply against the shape asked for (``jsonschema``); :mod:`.request` is the request
and the adapter's shape; :mod:`.fields` reads the fields the providers share. No I/O here:
the host half (:mod:`engine.gateway.service`) does the calls.
"""

from __future__ import annotations

from engine.gateway.providers.registry import (
    PROVIDERS,
    parse_request,
    provider_of,
    render,
    render_error,
)
from engine.gateway.providers.replies import ReplyMismatch, conform, schema_problem
from engine.gateway.providers.request import (
    ChatRequest,
    Expectation,
    GatewayRequestError,
    Provider,
    ProviderAdapter,
)

__all__ = [
    "PROVIDERS",
    "ChatRequest",
    "Expectation",
    "GatewayRequestError",
    "Provider",
    "ProviderAdapter",
    "ReplyMismatch",
    "conform",
    "parse_request",
    "provider_of",
    "render",
    "render_error",
    "schema_problem",
]
