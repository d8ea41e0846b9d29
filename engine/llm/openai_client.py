"""The OpenAI-compatible LLM client: the only module that imports ``openai``.

:class:`OpenAIClient` implements :class:`engine.llm.client.LLMClient` over any
OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp)
configured by ``SCOREBOX_LLM_BASE_URL`` / ``SCOREBOX_LLM_API_KEY`` /
``SCOREBOX_LLM_MODEL`` (falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``).

Every call has a total deadline (``SCOREBOX_LLM_CALL_DEADLINE_SECONDS``), retries
included: the SDK's timeout is per read, so a reply that trickles in one byte every
few seconds would never end. :class:`DeadlineTransport` caps each attempt's timeouts
at the time left and cuts a body off between chunks once the deadline passes; a reply
that is not a chat completion (truncated JSON, a list as ``content``) is an
:class:`~engine.errors.LLMResponseError` naming what was wrong (502 at the API).

Retries are the openai SDK's own (``SCOREBOX_LLM_MAX_RETRIES``): 408, 409, 429,
5xx, timeouts and connection errors, with exponential backoff and jitter, and
``Retry-After`` / ``retry-after-ms`` honoured up to two minutes (a server asking
for longer is not retried). Every ``openai`` exception is translated into the
engine's :class:`~engine.errors.LLMError` tree in :func:`translate_error`.

Those errors reach tenants (a row's ``judge_error``, the gateway's reply to a check, API
answers), so they name "the operator's model endpoint" and never its URL or host; the
server log keeps the address, its credentials masked (:func:`engine.redact.mask_credentials`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx2 as httpx  # the HTTP library openai 3 is built on (not httpx)
import openai
from openai.types.chat import ChatCompletion

from engine.errors import (
    ConfigurationError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMUnavailableError,
)
from engine.llm.client import Completion, LLMClient, Message, ResponseCache, Usage, cache_key
from engine.redact import mask_credentials
from engine.settings import Settings

log = logging.getLogger(__name__)

#: Used as the API key for endpoints that need none (a local vLLM, Ollama, llama.cpp).
_NO_KEY = "scorebox-no-key"
#: How errors name the endpoint: tenants read them, and the address is the operator's.
ENDPOINT = "the operator's model endpoint"
#: A failing endpoint is logged at most once this often (a check can make calls fail at will).
LOG_EVERY_SECONDS = 10.0


class _FailureLog:
    """The operator's log of endpoint failures: the address (credentials masked) and the
    cause, at most one line per :data:`LOG_EVERY_SECONDS`, counting the ones between."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0.0
        self._quiet = 0

    def failed(self, base_url: str, model: str, detail: str) -> None:
        now = time.monotonic()
        with self._lock:
            if self._last and now - self._last < LOG_EVERY_SECONDS:
                self._quiet += 1
                return
            quiet, self._quiet, self._last = self._quiet, 0, now
        more = f" ({quiet} more failures since the last line)" if quiet else ""
        log.warning(
            "model endpoint %s (model %r): %s%s",
            mask_credentials(base_url),
            model,
            mask_credentials(detail),
            more,
        )


class _MaskCredentials(logging.Filter):
    """Masks URL credentials in the lines the HTTP and SDK libraries log themselves
    (``HTTP Request: POST http://user:pass@host/v1/...``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_credentials(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


#: The libraries' loggers that may print the endpoint's URL (a filter applies to its own
#: logger's records only, hence each by name).
_LIBRARY_LOGGERS = ("httpx2", "httpx", "openai", "openai._base_client")
_MASK = _MaskCredentials()


def mask_library_logs() -> None:
    """Install the credential mask on the HTTP and SDK libraries' loggers (once)."""
    for name in _LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if _MASK not in logger.filters:
            logger.addFilter(_MASK)


_FAILURES: dict[str, _FailureLog] = {}
_FAILURES_LOCK = threading.Lock()


def log_failure(base_url: str, model: str, detail: str) -> None:
    """Log a failure of the endpoint at ``base_url`` for the operator (masked, rate-limited)."""
    with _FAILURES_LOCK:
        failures = _FAILURES.setdefault(base_url, _FailureLog())
    failures.failed(base_url, model, detail)


def without_endpoint(text: str, base_url: str) -> str:
    """``text`` with the endpoint's address (URL, host and port, credentials) taken out."""
    parsed = httpx.URL(base_url)
    out = text
    for needle in {base_url, base_url.rstrip("/"), mask_credentials(base_url)}:
        out = out.replace(needle, ENDPOINT)
    host = parsed.host
    if host:
        netloc = f"{host}:{parsed.port}" if parsed.port else host
        for needle in (netloc, host):
            out = out.replace(needle, "the endpoint's host")
    return mask_credentials(out)


def translate_error(exc: openai.OpenAIError, *, base_url: str, model: str) -> LLMError:
    """The engine error for an ``openai`` exception; the one place they are mapped.

    Its message names no address (tenants read it); the log line beside it does, masked.
    """
    error = _translate(exc, model)
    log_failure(base_url, model, f"{type(exc).__name__}: {exc}")
    return type(error)(without_endpoint(str(error), base_url))


def _translate(exc: openai.OpenAIError, model: str) -> LLMError:
    where = ENDPOINT
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


#: The monotonic time the current thread's LLM call must end by (None: no call running).
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "scorebox_llm_deadline", default=None
)


class _DeadlinePassed(BaseException):
    """Raised inside the SDK's request when the call's deadline has passed.

    A BaseException on purpose: the SDK retries every ``Exception`` (sleeping between
    attempts), and a call past its deadline must end now. Caught in :meth:`OpenAIClient._request`.
    """


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise _DeadlinePassed
            yield chunk

    def close(self) -> None:
        self._inner.close()


_TIMEOUTS = ("connect", "read", "write", "pool")


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport that holds each request to the current call's total deadline."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = _DEADLINE.get()
        if deadline is None:
            return self._inner.handle_request(request)
        left = deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed
        timeouts = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {
            name: left if value is None else min(float(value), left)
            for name, value in {
                **dict.fromkeys(("connect", "read", "write", "pool")),
                **timeouts,
            }.items()
        }
        response = self._inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_DeadlineStream(response.stream, deadline),
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        self._inner.close()


class OpenAIClient:
    """:class:`~engine.llm.client.LLMClient` over the official ``openai`` package (its retries)."""

    def __init__(self, settings: Settings, *, cache: ResponseCache | None = None) -> None:
        if settings.llm_base_url is None and settings.llm_api_key is None:
            raise ConfigurationError(
                "no LLM endpoint configured: set SCOREBOX_LLM_BASE_URL (any OpenAI-compatible "
                "server, e.g. http://localhost:11434/v1) and/or SCOREBOX_LLM_API_KEY "
                "(OPENAI_BASE_URL / OPENAI_API_KEY are read too)"
            )
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else _NO_KEY
        mask_library_logs()  # the endpoint's URL may carry credentials
        self.model = settings.llm_model
        self.base_url = settings.llm_base_url or "https://api.openai.com/v1"
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=key or _NO_KEY,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
            http_client=openai.DefaultHttpxClient(
                transport=DeadlineTransport(httpx.HTTPTransport())
            ),
        )
        self.deadline_seconds = settings.llm_call_deadline_seconds
        self._slots = threading.BoundedSemaphore(settings.llm_concurrency)
        self._cache = cache

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
        completion = self._request(model, messages, parameters)
        if self._cache is not None:
            self._cache.put(key, completion)
        return completion

    def _request(
        self, model: str, messages: Sequence[Message], parameters: Mapping[str, Any]
    ) -> Completion:
        kwargs = {k: v for k, v in parameters.items() if v is not None}
        where = ENDPOINT
        try:
            with self._slots:
                token = _DEADLINE.set(time.monotonic() + self.deadline_seconds)
                try:
                    response = self._client.chat.completions.create(
                        model=model,
                        messages=[dict(m) for m in messages],  # type: ignore[misc]
                        **kwargs,
                    )
                finally:
                    _DEADLINE.reset(token)
        except _DeadlinePassed:
            raise LLMUnavailableError(
                f"{where} did not finish its reply within {self.deadline_seconds:g} s (the "
                "total deadline of one call, retries included): check the server or raise "
                "SCOREBOX_LLM_CALL_DEADLINE_SECONDS"
            ) from None
        except openai.OpenAIError as exc:
            raise translate_error(exc, base_url=self.base_url, model=model) from exc
        except ValueError as exc:  # the body is not JSON (truncated, or not JSON at all)
            log_failure(self.base_url, model, f"a reply that is not JSON: {exc}")
            raise LLMResponseError(
                f"{where} sent a reply that is not valid JSON: "
                + without_endpoint(str(exc), self.base_url)
            ) from exc
        try:
            return self._completion(response, model)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise LLMResponseError(
                f"{where} sent a reply that is not a chat completion: {exc.__class__.__name__}: "
                f"{str(exc)[:200]}"
            ) from exc

    def _completion(self, response: ChatCompletion, model: str) -> Completion:
        where = ENDPOINT
        # openai builds the response without validating it: a malformed body lacks fields
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMResponseError(f"{where} sent a reply with no choices")
        choice = choices[0]
        message = choice.message
        if message.refusal:
            raise LLMResponseError(f"the model refused: {message.refusal}")
        if choice.finish_reason == "content_filter":
            raise LLMResponseError(f"{where} refused: the reply was blocked by a content filter")
        text = message.content or ""
        if not isinstance(text, str):
            raise LLMResponseError(
                f"{where} sent a reply whose content is a {type(text).__name__}, not text"
            )
        if not text.strip():
            raise LLMResponseError(
                f"{where} sent an empty reply (finish_reason={choice.finish_reason})"
            )
        usage = response.usage
        return Completion(
            text=text,
            model=response.model or model,
            usage=Usage(
                prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            ),
            finish_reason=choice.finish_reason,
        )


def create_llm_client(settings: Settings, *, cache: ResponseCache | None = None) -> LLMClient:
    """The configured client; :class:`ConfigurationError` naming the variables when unset."""
    return OpenAIClient(settings, cache=cache)
