"""The LLM client: the only module that imports ``openai``.

Callers depend on the :class:`LLMClient` protocol; :class:`OpenAIClient` talks
to any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
llama.cpp) configured by ``SCOREBOX_LLM_BASE_URL`` / ``SCOREBOX_LLM_API_KEY`` /
``SCOREBOX_LLM_MODEL`` (falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``).

The openai package's own retries are off; this module retries 429, 5xx,
timeouts and connection errors itself (exponential backoff with full jitter,
``Retry-After`` honoured), and translates every ``openai`` exception into the
engine's :class:`~engine.errors.LLMError` tree in :func:`translate_error`.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from engine.errors import (
    ConfigurationError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMUnavailableError,
)
from engine.settings import Settings

Message = Mapping[str, str]
"""One chat message: ``{"role": "system"|"user"|"assistant", "content": "..."}``."""

#: Used as the API key for endpoints that need none (a local vLLM, Ollama, llama.cpp).
_NO_KEY = "scorebox-no-key"
#: Longest ``Retry-After`` honoured, in seconds; a server asking for more gets this.
MAX_RETRY_AFTER_SECONDS = 60.0


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


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Delay asked for by ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def translate_error(exc: openai.OpenAIError, *, base_url: str, model: str) -> LLMError:
    """The engine error for an ``openai`` exception; the one place they are mapped."""
    where = f"the LLM endpoint at {base_url}"
    if isinstance(exc, openai.APITimeoutError):
        return LLMUnavailableError(
            f"{where} did not answer in time; check the server or raise "
            "SCOREBOX_LLM_TIMEOUT_SECONDS"
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMUnavailableError(
            f"cannot connect to {where}: {exc.__cause__ or exc}; start the server or set "
            "SCOREBOX_LLM_BASE_URL"
        )
    if isinstance(exc, openai.RateLimitError):
        return LLMRateLimitError(f"{where} kept answering 429 (rate limited): {exc.message}")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return LLMError(
            f"{where} rejected the API key ({exc.status_code}): set SCOREBOX_LLM_API_KEY"
        )
    if isinstance(exc, openai.NotFoundError):
        return LLMError(
            f"{where} answered 404 for model {model!r}: check SCOREBOX_LLM_MODEL and "
            f"SCOREBOX_LLM_BASE_URL (it usually ends in /v1): {exc.message}"
        )
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return LLMError(f"{where} rejected the request ({exc.status_code}): {exc.message}")
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMResponseError(f"{where} sent a reply that is not a chat completion: {exc}")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500 or exc.status_code in {408, 409}:
            return LLMUnavailableError(f"{where} kept failing ({exc.status_code}): {exc.message}")
        return LLMError(f"{where} answered {exc.status_code}: {exc.message}")
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return LLMResponseError(f"{where} refused: the reply was blocked by a content filter")
    if isinstance(exc, openai.LengthFinishReasonError):
        return LLMResponseError(f"{where} cut the reply at the token limit")
    return LLMError(f"{where} failed: {exc}")


def _retryable(exc: openai.OpenAIError) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIResponseValidationError):
        return False
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in {408, 409, 429} or exc.status_code >= 500
    return False


class OpenAIClient:
    """:class:`LLMClient` over the official ``openai`` package, with our retries and limits."""

    def __init__(
        self,
        settings: Settings,
        *,
        cache: ResponseCache | None = None,
        backoff_base_seconds: float = 0.5,
        backoff_max_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if settings.llm_base_url is None and settings.llm_api_key is None:
            raise ConfigurationError(
                "no LLM endpoint configured: set SCOREBOX_LLM_BASE_URL (any OpenAI-compatible "
                "server, e.g. http://localhost:11434/v1) and/or SCOREBOX_LLM_API_KEY "
                "(OPENAI_BASE_URL / OPENAI_API_KEY are read too)"
            )
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else _NO_KEY
        self.model = settings.llm_model
        self.base_url = settings.llm_base_url or "https://api.openai.com/v1"
        self.max_retries = settings.llm_max_retries
        self.timeout_seconds = settings.llm_timeout_seconds
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=key or _NO_KEY,
            timeout=settings.llm_timeout_seconds,
            max_retries=0,
        )
        self._slots = threading.BoundedSemaphore(settings.llm_concurrency)
        self._cache = cache
        self._backoff_base = backoff_base_seconds
        self._backoff_max = backoff_max_seconds
        self._sleep = sleep

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        model = model or self.model
        parameters: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "response_format": dict(response_format) if response_format else None,
        }
        key = cache_key(model, messages, parameters) if self._cache is not None else ""
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return Completion(hit.text, hit.model, hit.usage, hit.finish_reason, cached=True)
        completion = self._complete_with_retries(model, messages, parameters)
        if self._cache is not None:
            self._cache.put(key, completion)
        return completion

    def _complete_with_retries(
        self, model: str, messages: Sequence[Message], parameters: Mapping[str, Any]
    ) -> Completion:
        kwargs = {k: v for k, v in parameters.items() if v is not None}
        attempt = 0
        while True:
            try:
                with self._slots:
                    response = self._client.chat.completions.create(
                        model=model,
                        messages=[dict(m) for m in messages],  # type: ignore[misc]
                        **kwargs,
                    )
            except openai.OpenAIError as exc:
                if attempt >= self.max_retries or not _retryable(exc):
                    raise translate_error(exc, base_url=self.base_url, model=model) from exc
                self._sleep(self._delay(attempt, exc))
                attempt += 1
                continue
            return self._completion(response, model)

    def _delay(self, attempt: int, exc: openai.OpenAIError) -> float:
        if isinstance(exc, openai.APIStatusError):
            asked = retry_after_seconds(exc.response.headers)
            if asked is not None:
                return min(asked, MAX_RETRY_AFTER_SECONDS)
        ceiling = min(self._backoff_max, self._backoff_base * 2**attempt)
        return random.uniform(0, ceiling)  # full jitter

    def _completion(self, response: Any, model: str) -> Completion:
        where = f"the LLM endpoint at {self.base_url}"
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMResponseError(f"{where} sent a reply with no choices")
        choice = choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise LLMResponseError(f"the model refused: {refusal}")
        if choice.finish_reason == "content_filter":
            raise LLMResponseError(f"{where} refused: the reply was blocked by a content filter")
        text = message.content or ""
        if not text.strip():
            raise LLMResponseError(
                f"{where} sent an empty reply (finish_reason={choice.finish_reason})"
            )
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=getattr(response, "model", None) or model,
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            ),
            finish_reason=choice.finish_reason,
        )


def create_llm_client(settings: Settings, *, cache: ResponseCache | None = None) -> LLMClient:
    """The configured client; :class:`ConfigurationError` naming the variables when unset."""
    return OpenAIClient(settings, cache=cache)
