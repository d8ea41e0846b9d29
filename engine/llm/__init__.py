"""The LLM room: one client seam for judges, the generator and (later) the model gateway.

- :mod:`engine.llm.client` — the :class:`LLMClient` protocol and its values (pure, no HTTP);
- :mod:`engine.llm.openai_client` — the one implementation, on the official ``openai``
  package (the only module that imports it), any OpenAI-compatible endpoint;
- :mod:`engine.llm.cache` — the persistent response cache, scoped per tenant;
- :mod:`engine.llm.disk_cache` — the file cache of local runs;
- :mod:`engine.llm.usage` — metering (what a run or request spent).

The names below are the room's public face: callers import ``from engine.llm import
LLMClient``, not from the module that holds it.
"""

from __future__ import annotations

from engine.llm.client import (
    Completion,
    LLMClient,
    MemoryResponseCache,
    Message,
    ResponseCache,
    Usage,
    WrappedClient,
    cache_key,
)

__all__ = [
    "Completion",
    "LLMClient",
    "MemoryResponseCache",
    "Message",
    "ResponseCache",
    "Usage",
    "WrappedClient",
    "cache_key",
]
