"""The model gateway through the service (embedded mode): the tenant's quota from the store,
a run's ``llm_usage`` with its checks' spend, and ``/v1/score`` naming the model."""

from __future__ import annotations

import pytest

from engine.settings import Settings
from tests.api.conftest import AppFactory
from tests.fake_llm import MODEL, FakeLLM

pytestmark = pytest.mark.docker

CALL_OPENAI = """
from openai import OpenAI

def evaluate(model_output):
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": model_output}]
    )
    return reply.choices[0].message.content.strip() == "yes"
"""


def test_a_runs_llm_usage_counts_its_checks_model_calls(
    docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("yes").reply("yes")
    api = make_api(
        pool_size=0,
        image=docker_settings.image,
        runtime=docker_settings.runtime,
        llm_base_url=fake_llm.base_url,
        llm_api_key="real-key",
        llm_model=MODEL,
    )
    headers = api.tenant()
    api.push(headers, "judge", CALL_OPENAI)
    rows = [{"model_output": "first"}, {"model_output": "second"}]
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": ["judge"], "rows": rows})
    assert reply.status_code in (200, 201, 202), reply.text
    run = api.wait_run(headers, reply.json()["id"])
    assert run["status"] == "succeeded", run
    assert run["llm_usage"]["calls"] == 2
    assert run["llm_usage"]["total_tokens"] > 0


def test_the_tenants_quota_turns_the_gateway_off_and_score_names_the_model(
    docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("yes")
    api = make_api(
        pool_size=0,
        image=docker_settings.image,
        runtime=docker_settings.runtime,
        llm_base_url=fake_llm.base_url,
        llm_api_key="real-key",
        llm_model=MODEL,
        llm_model_map={"gpt-4o": "served-model"},
    )
    on = api.tenant()
    off = api.tenant(llm_tokens_per_run=0)
    body = {"checks": ["judge"], "rows": [{"model_output": "x"}]}
    for headers in (on, off):
        api.push(headers, "judge", CALL_OPENAI)
    [allowed] = api.client.post("/v1/score", headers=on, json=body).json()["results"]
    assert allowed["status"] == "ok", allowed
    assert allowed["model"] == "served-model"
    [refused] = api.client.post("/v1/score", headers=off, json=body).json()["results"]
    assert refused["status"] == "error"
    assert "llm_tokens_per_run" in refused["error"]
    assert len(fake_llm.requests) == 1
