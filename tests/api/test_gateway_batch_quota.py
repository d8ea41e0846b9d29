"""One ``/v1/score`` batch has one gateway quota: every check reference and every chunk of
rows spends from the same ``llm_tokens_per_run``, as a run does.

The upstream (``tests/fake_llm.py``) answers every call with as long a reply as it was
allowed (``max_tokens``), so what the batch spent is the sum of the ``max_tokens`` sent.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.settings import Settings
from tests.api.conftest import Api, AppFactory
from tests.fake_llm import MODEL, FakeLLM, Reply

pytestmark = pytest.mark.docker

#: Each call may take 50 completion tokens; a random prompt, so no call is a cache hit.
CALL_50 = """
import random
from openai import OpenAI

def evaluate(model_output):
    prompt = f"{model_output} {random.random()}"
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", max_tokens=50, messages=[{"role": "user", "content": prompt}]
    )
    return bool(reply.choices[0].message.content)
"""
QUOTA = 150


def greedy(body: dict[str, Any]) -> Reply:
    return Reply(text="abcd" * int(body.get("max_tokens") or 1000))


def start(docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM, **more: Any) -> Api:
    fake_llm.responder = greedy
    return make_api(
        pool_size=0,
        image=docker_settings.image,
        runtime=docker_settings.runtime,
        llm_base_url=fake_llm.base_url,
        llm_api_key="real-key",
        llm_model=MODEL,
        **more,
    )


def spent(fake_llm: FakeLLM) -> int:
    """Tokens as the upstream counted them: prompt (characters / 4) and completion."""
    return sum(
        int(request["max_tokens"]) + sum(len(m["content"]) for m in request["messages"]) // 4
        for request in fake_llm.requests
    )


def assert_one_quota(results: list[dict[str, Any]], fake_llm: FakeLLM) -> None:
    assert spent(fake_llm) <= QUOTA, f"{spent(fake_llm)} tokens spent against {QUOTA}"
    statuses = [r["status"] for r in results]
    assert "ok" in statuses
    refused = [r for r in results if r["status"] != "ok"]
    assert refused, statuses  # five calls of 50 do not fit in one quota of 150
    assert all("llm_tokens_per_run" in (r["error"] or "") for r in refused), refused


def test_five_references_to_one_check_share_the_batchs_quota(
    docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = start(docker_settings, make_api, fake_llm)
    headers = api.tenant(llm_tokens_per_run=QUOTA)
    api.push(headers, "judge", CALL_50)
    body = {"checks": ["judge"] * 5, "rows": [{"model_output": "x"}]}
    reply = api.client.post("/v1/score", headers=headers, json=body)
    assert reply.status_code == 200, reply.text
    assert_one_quota(reply.json()["results"], fake_llm)


def test_the_chunks_of_one_batch_share_its_quota(
    docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = start(docker_settings, make_api, fake_llm, run_chunk_rows=2)
    headers = api.tenant(llm_tokens_per_run=QUOTA)
    api.push(headers, "judge", CALL_50)
    body = {"checks": ["judge"], "rows": [{"model_output": str(i)} for i in range(6)]}
    reply = api.client.post("/v1/score", headers=headers, json=body)
    assert reply.status_code == 200, reply.text
    assert_one_quota(reply.json()["results"], fake_llm)
    # A second batch of the tenant starts from a full quota.
    before = len(fake_llm.requests)
    again = api.client.post(
        "/v1/score", headers=headers, json={"checks": ["judge"], "rows": [{"model_output": "y"}]}
    )
    assert again.json()["results"][0]["status"] == "ok"
    assert len(fake_llm.requests) == before + 1
