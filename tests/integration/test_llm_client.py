"""The LLM client over real HTTP against the local fake server (no mocked client objects)."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx2
import openai
import pytest

from engine.errors import (
    ConfigurationError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMUnavailableError,
)
from engine.llm.client import Completion, MemoryResponseCache, cache_key
from engine.llm.openai_client import OpenAIClient, translate_error
from engine.settings import Settings
from tests.fake_llm import FakeLLM

MESSAGES = [{"role": "user", "content": "hi"}]


def client(fake: FakeLLM, **overrides: Any) -> OpenAIClient:
    return OpenAIClient(fake.settings(**overrides))


def test_success_returns_text_model_usage(fake_llm: FakeLLM) -> None:
    fake_llm.reply("hello there")
    out = client(fake_llm).complete(MESSAGES, temperature=0.3, max_tokens=50)
    assert out.text == "hello there"
    assert out.model == "fake-model"
    assert out.finish_reason == "stop"
    assert out.usage.completion_tokens >= 0
    sent = fake_llm.requests[0]
    assert sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.3
    assert sent["max_tokens"] == 50
    assert sent["model"] == "fake-model"


def test_429_with_retry_after_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.error(429, retry_after="0").reply("ok")
    assert client(fake_llm).complete(MESSAGES).text == "ok"
    assert len(fake_llm.requests) == 2


def test_500_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.error(500).error(503).reply("ok")
    assert client(fake_llm).complete(MESSAGES).text == "ok"
    assert len(fake_llm.requests) == 3


def test_retries_exhausted_on_429(fake_llm: FakeLLM) -> None:
    for _ in range(3):
        fake_llm.error(429, retry_after="0")
    with pytest.raises(LLMRateLimitError, match="429"):
        client(fake_llm, llm_max_retries=2).complete(MESSAGES)
    assert len(fake_llm.requests) == 3


def test_retries_exhausted_on_500(fake_llm: FakeLLM) -> None:
    for _ in range(2):
        fake_llm.error(500)
    with pytest.raises(LLMUnavailableError, match="500"):
        client(fake_llm, llm_max_retries=1).complete(MESSAGES)


def test_400_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.error(400, message="bad model")
    with pytest.raises(LLMError, match="bad model"):
        client(fake_llm).complete(MESSAGES)
    assert len(fake_llm.requests) == 1


def test_401_names_the_key_variable(fake_llm: FakeLLM) -> None:
    fake_llm.error(401)
    with pytest.raises(LLMError, match="SCOREBOX_LLM_API_KEY"):
        client(fake_llm).complete(MESSAGES)


def test_timeout_is_retried_then_reported(fake_llm: FakeLLM) -> None:
    fake_llm.hang().hang()
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="did not answer in time"):
        client(fake_llm, llm_timeout_seconds=0.3, llm_max_retries=1).complete(MESSAGES)
    assert time.monotonic() - started < 5
    assert len(fake_llm.requests) == 2


def test_timeout_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.hang().reply("late but fine")
    out = client(fake_llm, llm_timeout_seconds=0.3).complete(MESSAGES)
    assert out.text == "late but fine"


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ({"text": ""}, "empty reply"),
        ({"text": "   \n"}, "empty reply"),
        ({"text": None, "refusal": "I can't help with that"}, "refused: I can't help"),
        ({"text": "x", "finish_reason": "content_filter"}, "content filter"),
    ],
)
def test_unusable_replies(fake_llm: FakeLLM, reply: dict[str, object], match: str) -> None:
    fake_llm.reply(**reply)  # type: ignore[arg-type]
    with pytest.raises(LLMResponseError, match=match):
        client(fake_llm).complete(MESSAGES)
    assert len(fake_llm.requests) == 1


def test_garbage_body_is_a_response_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("", raw=b'{"unexpected": true}')
    with pytest.raises(LLMResponseError):
        client(fake_llm).complete(MESSAGES)


def test_connection_refused_is_clear() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        llm_base_url=f"http://127.0.0.1:{port}/v1", llm_api_key="k", llm_max_retries=1
    )
    with pytest.raises(LLMUnavailableError, match=r"cannot connect.*SCOREBOX_LLM_BASE_URL"):
        OpenAIClient(settings).complete(MESSAGES)


def test_unconfigured_names_the_variables() -> None:
    settings = Settings().model_copy(update={"llm_base_url": None, "llm_api_key": None})
    with pytest.raises(ConfigurationError, match=r"SCOREBOX_LLM_BASE_URL.*SCOREBOX_LLM_API_KEY"):
        OpenAIClient(settings)


def test_base_url_without_key_works(fake_llm: FakeLLM) -> None:
    fake_llm.reply("ok")
    settings = fake_llm.settings().model_copy(update={"llm_api_key": None})
    assert OpenAIClient(settings).complete(MESSAGES).text == "ok"


def test_cache_hit_skips_the_endpoint(fake_llm: FakeLLM) -> None:
    fake_llm.reply("first")
    llm = OpenAIClient(fake_llm.settings(), cache=MemoryResponseCache())
    assert llm.complete(MESSAGES, temperature=0).text == "first"
    again = llm.complete(MESSAGES, temperature=0)
    assert (again.text, again.cached) == ("first", True)
    assert len(fake_llm.requests) == 1


def test_cache_key_depends_on_model_messages_parameters() -> None:
    base = cache_key("m", MESSAGES, {"temperature": 0})
    assert base == cache_key("m", MESSAGES, {"temperature": 0, "max_tokens": None})
    assert base != cache_key("n", MESSAGES, {"temperature": 0})
    assert base != cache_key("m", [{"role": "user", "content": "ho"}], {"temperature": 0})
    assert base != cache_key("m", MESSAGES, {"temperature": 1})


def test_memory_cache_is_bounded() -> None:
    cache = MemoryResponseCache(max_entries=2)
    for key in "abc":
        cache.put(key, Completion(text=key, model="m"))
    assert cache.get("a") is None
    assert cache.get("c") is not None


_REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _status(cls: type[openai.APIStatusError], code: int) -> openai.APIStatusError:
    return cls("boom", response=httpx2.Response(code, request=_REQUEST), body=None)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (openai.APITimeoutError(request=_REQUEST), LLMUnavailableError),
        (openai.APIConnectionError(request=_REQUEST), LLMUnavailableError),
        (_status(openai.RateLimitError, 429), LLMRateLimitError),
        (_status(openai.InternalServerError, 500), LLMUnavailableError),
        (_status(openai.InternalServerError, 503), LLMUnavailableError),
        (_status(openai.APIStatusError, 408), LLMUnavailableError),
        (_status(openai.BadRequestError, 400), LLMError),
        (_status(openai.AuthenticationError, 401), LLMError),
        (_status(openai.PermissionDeniedError, 403), LLMError),
        (_status(openai.NotFoundError, 404), LLMError),
        (_status(openai.ConflictError, 409), LLMUnavailableError),
        (_status(openai.UnprocessableEntityError, 422), LLMError),
        (
            openai.APIResponseValidationError(httpx2.Response(200, request=_REQUEST), body=None),
            LLMResponseError,
        ),
        (openai.OpenAIError("other"), LLMError),
    ],
)
def test_every_openai_error_maps_to_an_engine_error(
    exc: openai.OpenAIError, expected: type[LLMError]
) -> None:
    out = translate_error(exc, base_url="http://127.0.0.1/v1", model="m")
    assert type(out) is expected
    # Tenants read these messages: the endpoint is named, its address is not.
    assert "the operator's model endpoint" in str(out)
    assert "127.0.0.1" not in str(out)


def test_retry_after_is_honoured_by_the_sdk_retries(fake_llm: FakeLLM) -> None:
    fake_llm.error(429, retry_after="1.5").reply("ok")
    started = time.monotonic()
    assert client(fake_llm).complete(MESSAGES).text == "ok"
    assert time.monotonic() - started >= 1.4  # waited as asked, not the 0.5 s default backoff
    assert len(fake_llm.requests) == 2


def test_retry_after_beyond_two_minutes_is_not_waited_for(fake_llm: FakeLLM) -> None:
    fake_llm.error(429, retry_after="600")
    with pytest.raises(LLMRateLimitError, match="429"):
        client(fake_llm).complete(MESSAGES)
    assert len(fake_llm.requests) == 1
