"""The LLM seam: the :class:`LLMClient` protocol, :class:`Completion` and response caching.

Judging and the generator depend on this module only; it imports no HTTP
client. The implementation over the ``openai`` package is
:class:`engine.llm.openai_client.OpenAIClient` (the only ``import openai``), built
by :func:`engine.llm.openai_client.create_llm_client`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = Mapping[str, str]
"""One chat message: ``{"role": "system"|"user"|"assistant", "content": "..."}``."""


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the endpoint (0 when it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    """One reply of the model."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    cached: bool = False


class LLMClient(Protocol):
    """Sends chat messages, returns the reply text. Raises only :class:`LLMError` subclasses."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The model's reply to ``messages``; ``model`` defaults to the configured one."""
        ...


class WrappedClient:
    """Base of the :class:`LLMClient` wrappers (metering, cache scoping): ``complete``
    calls ``inner``'s, passed to :meth:`around` as a call of no arguments."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner

    def around(self, call: Callable[[], Completion]) -> Completion:
        """What the wrapper does around the inner call; this base only makes it."""
        return call()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        return self.around(
            functools.partial(
                self.inner.complete,
                messages,
                model=model,
                temperature=temperature,
                max_tokens=max_tokens,
                response_format=response_format,
            )
        )


class ResponseCache(Protocol):
    """Stores replies keyed by :func:`cache_key` (model, messages, parameters)."""

    def get(self, key: str) -> Completion | None:
        """The stored reply, or None."""
        ...

    def put(self, key: str, completion: Completion) -> None:
        """Store a reply."""
        ...


class MemoryResponseCache:
    """A bounded, thread-safe, in-process :class:`ResponseCache` (least recently used out)."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._entries: OrderedDict[str, Completion] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: str, completion: Completion) -> None:
        with self._lock:
            self._entries[key] = completion
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)


def cache_key(model: str, messages: Sequence[Message], parameters: Mapping[str, Any]) -> str:
    """A stable key of one request: sha256 of canonical JSON of model, messages, parameters."""
    document = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "parameters": {k: v for k, v in parameters.items() if v is not None},
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
