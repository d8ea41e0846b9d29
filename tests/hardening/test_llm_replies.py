"""Malformed LLM replies are 502 with the reason; every call has a total
deadline (a reply that trickles in is cut off), for the client, the generator and the judges."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine.errors import LLMResponseError, LLMUnavailableError
from engine.llm.openai_client import OpenAIClient
from tests.api.conftest import AppFactory
from tests.api.test_generate_api import REQUEST, _app
from tests.fake_llm import FakeLLM, Reply

MESSAGES = [{"role": "user", "content": "hi"}]
TRUNCATED = b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "mess'
LIST_CONTENT = (
    b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
    b'[{"index": 0, "message": {"role": "assistant", "content": ["a", "b"]}, '
    b'"finish_reason": "stop"}]}'
)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(TRUNCATED, "not valid JSON"), (LIST_CONTENT, "content is a list")],
)
def test_a_malformed_reply_is_a_response_error_with_the_reason(
    fake_llm: FakeLLM, raw: bytes, reason: str
) -> None:
    fake_llm.reply("", raw=raw)
    with pytest.raises(LLMResponseError, match=reason):
        OpenAIClient(fake_llm.settings(llm_max_retries=0)).complete(MESSAGES)


def test_a_trickling_reply_is_cut_off_by_the_total_deadline(fake_llm: FakeLLM) -> None:
    fake_llm.replies.append(Reply(text="a long answer", trickle_seconds=0.3))
    client = OpenAIClient(
        fake_llm.settings(llm_timeout_seconds=5, llm_max_retries=3, llm_call_deadline_seconds=1.5)
    )
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="SCOREBOX_LLM_CALL_DEADLINE_SECONDS"):
        client.complete(MESSAGES)
    took = time.monotonic() - started
    assert took < 3.0, took  # each read is quick (0.3 s < 5 s): only the total deadline ends it
    assert len(fake_llm.requests) == 1  # past the deadline nothing is retried


def test_a_silent_endpoint_is_cut_off_at_the_deadline_not_the_read_timeout(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.hang()
    client = OpenAIClient(
        fake_llm.settings(llm_timeout_seconds=30, llm_max_retries=0, llm_call_deadline_seconds=1)
    )
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError):
        client.complete(MESSAGES)
    assert time.monotonic() - started < 3.0


def test_a_call_within_its_deadline_succeeds(fake_llm: FakeLLM) -> None:
    fake_llm.replies.append(Reply(text="ok", trickle_seconds=0.001))
    client = OpenAIClient(fake_llm.settings(llm_call_deadline_seconds=30))
    assert client.complete(MESSAGES).text == "ok"


@pytest.mark.parametrize("raw", [TRUNCATED, LIST_CONTENT])
def test_the_generator_answers_502_for_malformed_replies(
    make_api: AppFactory, fake_llm: FakeLLM, raw: bytes
) -> None:
    api = _app(make_api, fake_llm)
    fake_llm.responder = lambda body: Reply(raw=raw)
    reply = api.client.post(
        "/v1/checks/generate", headers=api.tenant(), json={**REQUEST, "check_type": "model"}
    )
    assert reply.status_code == 502, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "the operator's model endpoint" in reply.json()["detail"]


def test_the_generator_answers_502_for_a_trickling_endpoint(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm, llm_call_deadline_seconds=1.0)
    fake_llm.responder = lambda body: Reply(text="x", trickle_seconds=0.3)
    started = time.monotonic()
    reply = api.client.post(
        "/v1/checks/generate", headers=api.tenant(), json={**REQUEST, "check_type": "model"}
    )
    assert reply.status_code == 502, reply.text
    assert "SCOREBOX_LLM_CALL_DEADLINE_SECONDS" in reply.json()["detail"]
    assert time.monotonic() - started < 15


def test_a_judge_in_a_run_is_a_judge_error_past_the_deadline(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm, llm_call_deadline_seconds=1.0)
    fake_llm.responder = lambda body: Reply(text="x", trickle_seconds=0.3)
    a = api.tenant()
    judge: dict[str, Any] = {
        "name": "polite",
        "kind": "model",
        "prompt_template": "Rate how polite this is: {model_output}\n\nReply SCORE: 1-5.",
    }
    made = api.client.post("/v1/checks", headers=a, json=judge)
    assert made.status_code == 201, made.text
    run = api.client.post(
        "/v1/runs", headers=a, json={"checks": ["polite"], "rows": [{"model_output": "hi"}]}
    ).json()
    done = api.wait_run(a, run["id"], timeout=60)
    results = api.client.get(f"/v1/runs/{run['id']}/results", headers=a).json()["results"]
    assert done["status"] == "succeeded", done
    assert results[0]["status"] == "judge_error", results
    assert "SCOREBOX_LLM_CALL_DEADLINE_SECONDS" in results[0]["error"]
