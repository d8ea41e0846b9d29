"""The one chat request the gateway serves, whatever client sent it, and what a provider's
adapter is: the routes it serves, how its request becomes a :class:`ChatRequest`, how a
completion and an error are rendered back in its shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.errors import ScoreboxError
from engine.llm import Completion


class GatewayRequestError(ScoreboxError):
    """A request the gateway cannot serve (bad shape, unsupported feature): the check's 4xx."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Provider(StrEnum):
    """A client API the gateway speaks."""

    OPENAI = "openai"
    COHERE_V1 = "cohere_v1"
    COHERE_V2 = "cohere_v2"
    GEMINI = "gemini"


@dataclass(frozen=True)
class Expectation:
    """What the reply must be: one of ``values`` (an enum) or JSON fitting ``schema``."""

    values: tuple[str, ...] | None = None
    schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ChatRequest:
    """One chat request, whatever client sent it."""

    provider: Provider
    messages: tuple[Mapping[str, str], ...]
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    expect: Expectation | None = None
    history: tuple[Mapping[str, str], ...] = field(default=())  # Cohere v1: echoed back


#: ``render(request, completion, text, served_by, created, request_id)``: the client's
#: success body, ``text`` being the completion's text as the reply conformed it.
Renderer = Callable[[ChatRequest, Completion, str, str, int, int], dict[str, Any]]


@dataclass(frozen=True)
class ProviderAdapter:
    """One client API: its routes, its request, its reply and its error."""

    provider: Provider
    #: Whether a route (the path without its query) is this API's.
    serves: Callable[[str], bool]
    #: The request's JSON document (and its route) as a ChatRequest; GatewayRequestError if
    #: it asks for what the gateway does not do.
    parse: Callable[[Mapping[str, Any], str], ChatRequest]
    render: Renderer
    #: An error body the client's SDK surfaces with the message in its exception text.
    render_error: Callable[[int, str], dict[str, Any]]
