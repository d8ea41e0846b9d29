"""Errors a tenant or a check reads never name the operator's model endpoint.

The operator's ``SCOREBOX_LLM_BASE_URL`` may carry credentials (``http://user:pass@host/v1``).
An upstream that refuses a request (a check sending ``temperature=5``) gives an error that
reaches the row (``judge_error``), the gateway's reply to the check and API answers: it says
"the operator's model endpoint"; the server log keeps the address with the credentials masked.
"""

from __future__ import annotations

import json
import logging

import pytest

from engine.errors import LLMError
from engine.gateway import ModelGateway
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient
from engine.settings import Settings
from tests.fake_llm import FakeLLM, Reply

SECRET = "s3cret-pw-9f2"


def credentialed_url(fake_llm: FakeLLM) -> tuple[str, str]:
    host = fake_llm.base_url.removeprefix("http://").split("/")[0]
    return f"http://operator:{SECRET}@{host}/v1", host


def assert_names_no_endpoint(text: str, host: str) -> None:
    assert SECRET not in text
    assert "operator:" not in text
    assert host not in text
    assert host.partition(":")[0] not in text
    assert "http://" not in text


def test_an_upstream_400_names_no_url_host_or_credentials(
    fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    url, host = credentialed_url(fake_llm)
    fake_llm.error(400, message="temperature must be at most 2")
    client = create_llm_client(fake_llm.settings(llm_base_url=url))
    with caplog.at_level(logging.WARNING), pytest.raises(LLMError) as caught:
        client.complete([{"role": "user", "content": "hi"}], temperature=5)
    message = str(caught.value)
    assert "the operator's model endpoint rejected the request (400)" in message
    assert "temperature must be at most 2" in message  # the upstream's reason stays useful
    assert_names_no_endpoint(message, host)
    # The operator's log keeps where, with the credentials masked.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"http://***@{host}/v1" in logged
    assert SECRET not in logged


def test_an_unreachable_endpoint_names_no_url_host_or_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://operator:{SECRET}@127.0.0.1:9/v1"  # the discard port: nothing listens
    settings = Settings(llm_base_url=url, llm_api_key="k", llm_max_retries=0)
    with caplog.at_level(logging.WARNING), pytest.raises(LLMError) as caught:
        create_llm_client(settings).complete([{"role": "user", "content": "hi"}])
    assert "cannot connect to the operator's model endpoint" in str(caught.value)
    assert_names_no_endpoint(str(caught.value), "127.0.0.1:9")
    assert SECRET not in "\n".join(r.getMessage() for r in caplog.records)


def test_the_gateway_reply_to_a_check_names_no_endpoint(fake_llm: FakeLLM) -> None:
    url, host = credentialed_url(fake_llm)
    fake_llm.error(400, message="temperature must be at most 2")
    settings = fake_llm.settings(llm_base_url=url, quota_llm_tokens_per_run=10_000)
    gateway = ModelGateway(MeteredClient(create_llm_client(settings)), settings)
    try:
        body = json.dumps(
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 5}
        )
        reply = gateway.session("tenant-a", "run-1").answer("POST", "/v1/chat/completions", body)
    finally:
        gateway.close()
    assert reply.status == 424
    assert "the operator's model endpoint rejected the request (400)" in reply.body
    assert_names_no_endpoint(reply.body, host)
    # What the row gets (its judge_error) is as clean.
    assert reply.upstream_error is not None
    assert_names_no_endpoint(reply.upstream_error, host)


def test_a_check_failing_calls_at_will_cannot_flood_the_operators_log(
    fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    url, host = credentialed_url(fake_llm)
    fake_llm.responder = lambda body: Reply(status=400, text="temperature must be at most 2")
    client = create_llm_client(fake_llm.settings(llm_base_url=url))
    with caplog.at_level(logging.WARNING):
        for _ in range(20):
            with pytest.raises(LLMError):
                client.complete([{"role": "user", "content": "hi"}], temperature=5)
    lines = [r.getMessage() for r in caplog.records if "model endpoint" in r.getMessage()]
    assert len(lines) == 1 and f"http://***@{host}/v1" in lines[0]


def test_the_http_librarys_own_request_lines_are_masked(
    fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    url, host = credentialed_url(fake_llm)
    fake_llm.reply("4")
    client = create_llm_client(fake_llm.settings(llm_base_url=url))
    with caplog.at_level(logging.DEBUG):
        client.complete([{"role": "user", "content": "hi"}])
    lines = [r.getMessage() for r in caplog.records]
    assert any(f"http://***@{host}/v1/chat/completions" in line for line in lines), lines
    assert not [line for line in lines if SECRET in line]
