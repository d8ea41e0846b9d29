"""The gateway's quota and reply bounds from inside real containers, under each runtime
(``SCOREBOX_TEST_DOCKER=1 SCOREBOX_IMAGE=...``).

24 calls at once from one row cannot pass a run's quota (tokens are reserved before a call,
``max_tokens`` clamped to what is left); a reply over the channel's 1 MiB frame limit is
refused to that call only, and the job's later model calls still work.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.contract import Status
from engine.gateway import ModelGateway, gateway_session
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient, UsageMeter
from engine.models import RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.docker

TWENTY_FOUR_AT_ONCE = """
import random, threading
from openai import OpenAI

def evaluate(model_output):
    client = OpenAI(max_retries=0)
    answered = []

    def call():
        try:
            client.chat.completions.create(
                model="gpt-4o", max_tokens=int(model_output),
                messages=[{"role": "user", "content": f"judge {random.random()}"}],
            )
            answered.append(1)
        except Exception:
            pass

    threads = [threading.Thread(target=call) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(answered)
"""

BIG_THEN_SMALL = """
import openai
from openai import OpenAI

def evaluate(model_output):
    client = OpenAI(max_retries=0)
    refused = ""
    if model_output == "big first":
        try:
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "big"}]
            )
        except openai.APIStatusError as exc:
            refused = f"{exc.status_code} {exc.message}"
    reply = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "small " + model_output}]
    )
    return {"score": reply.choices[0].message.content == "small", "explanation": refused}
"""


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    settings = docker_settings.model_copy(update={"max_parallel_jobs": 2, "job_max_rows": 4})
    with SandboxRunner(settings) as runner:
        yield runner


def gateway_for(fake_llm: FakeLLM, base: Settings, **overrides: Any) -> ModelGateway:
    settings = fake_llm.settings(base, **overrides)
    return ModelGateway(MeteredClient(create_llm_client(settings)), settings)


def score(
    runner: SandboxRunner, gateway: ModelGateway, source: str, rows: list[dict[str, Any]], **kw: Any
) -> list[RowResult]:
    with gateway_session(gateway.session("tenant-a", kw.get("run", "run"), kw.get("meter"))):
        return runner.run_check(CodeCheck(source), rows)


def greedy(body: dict[str, Any]) -> Reply:
    """As long a reply as the call was allowed, a little slowly (so calls overlap)."""
    return Reply(text="abcd" * int(body["max_tokens"]), delay_seconds=0.3)


def test_24_calls_at_once_from_one_row_never_overspend_the_quota(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = greedy
    gateway = gateway_for(fake_llm, docker_settings, quota_llm_tokens_per_run=1000)
    meter = UsageMeter()
    [row] = score(runner, gateway, TWENTY_FOUR_AT_ONCE, [{"model_output": "300"}], meter=meter)
    gateway.close()
    assert row.status is Status.OK, row.error
    spent = meter.snapshot().total_tokens
    assert spent <= 1000, f"{spent} tokens spent against a quota of 1000"
    assert 1 <= int(row.score or 0) < 24  # some answered, the rest were refused
    assert len(fake_llm.requests) == row.score  # a refused call never went upstream


def test_max_tokens_of_a_million_under_a_quota_of_1000_is_clamped(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = greedy
    gateway = gateway_for(fake_llm, docker_settings, quota_llm_tokens_per_run=1000)
    source = TWENTY_FOUR_AT_ONCE.replace("range(24)", "range(1)")
    meter = UsageMeter()
    [row] = score(runner, gateway, source, [{"model_output": "1000000"}], meter=meter)
    gateway.close()
    assert row.status is Status.OK and row.score == 1, row.error
    [sent] = fake_llm.requests
    assert sent["max_tokens"] < 1000
    assert meter.snapshot().total_tokens <= 1000


def test_a_reply_over_the_frame_limit_fails_that_call_and_the_job_carries_on(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        content = str(body["messages"][-1]["content"])
        return Reply(text="x" * 1_200_000 if content == "big" else "small")

    fake_llm.responder = respond
    # The scripted upstream ignores max_tokens: the big reply costs 300,000 tokens.
    gateway = gateway_for(
        fake_llm, docker_settings, llm_timeout_seconds=30, quota_llm_tokens_per_run=10**7
    )
    rows = [{"model_output": "big first"}, {"model_output": "next row"}, {"model_output": "3"}]
    results = score(runner, gateway, BIG_THEN_SMALL, rows)
    gateway.close()
    assert [r.status for r in results] == [Status.OK] * 3, [r.error for r in results]
    assert [r.score for r in results] == [True] * 3  # the later calls of the job answered
    refused = results[0].explanation or ""
    assert refused.startswith("424 ") and "over the gateway's limit of 1048576 bytes" in refused
