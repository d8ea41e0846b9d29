"""``langsmith.wrappers``, as a stand-in: the client wrappers return the client unchanged."""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["wrap_anthropic", "wrap_openai"]

C = TypeVar("C")


def wrap_openai(
    client: C,
    *,
    tracing_extra: Any = None,
    chat_name: str = "ChatOpenAI",
    completions_name: str = "OpenAI",
) -> C:
    """The OpenAI client, unchanged: its calls go to the model gateway as they are."""
    return client


def wrap_anthropic(client: C, *, tracing_extra: Any = None) -> C:
    """The Anthropic client, unchanged."""
    return client
