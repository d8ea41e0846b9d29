"""The LLM response cache is per tenant: B never gets A's cached reply."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, AppFactory
from tests.fake_llm import FakeLLM, Reply

TEMPLATE = "Rate how polite this answer is.\n\nAnswer: {model_output}\n\nReply SCORE: 1-5."
ROWS = [{"model_output": "Thank you kindly."}, {"model_output": "Go away."}]


def _api(make_api: AppFactory, fake: FakeLLM) -> Api:
    fake.responder = lambda body: Reply(text="Polite enough.\nSCORE: 4")
    return make_api(
        llm_base_url=fake.base_url, llm_api_key="k", llm_model="fake-model", llm_max_retries=0
    )


def _run(api: Api, headers: dict[str, str], checks: list[Any]) -> dict[str, Any]:
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": checks, "rows": ROWS})
    assert reply.status_code == 202, reply.text
    run = api.wait_run(headers, reply.json()["id"], timeout=60)
    assert run["status"] == "succeeded", run
    return run


def test_a_model_check_judged_by_one_tenant_is_not_cached_for_another(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _api(make_api, fake_llm)
    alice, bob = api.tenant(), api.tenant()
    body = {"name": "polite", "kind": "model", "prompt_template": TEMPLATE}
    for headers in (alice, bob):
        assert api.client.post("/v1/checks", headers=headers, json=body).status_code == 201

    assert _run(api, alice, ["polite"])["llm_usage"]["calls"] == 2
    sent = len(fake_llm.requests)
    bobs = _run(api, bob, ["polite"])["llm_usage"]
    assert (bobs["calls"], bobs["cached_calls"]) == (2, 0), bobs
    assert len(fake_llm.requests) == sent + 2
    # each tenant's own re-run is still served from its own cache
    again = _run(api, bob, ["polite"])["llm_usage"]
    assert (again["calls"], again["cached_calls"]) == (0, 2), again


def test_builtin_judges_and_score_are_scoped_too(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _api(make_api, fake_llm)
    alice, bob = api.tenant(), api.tenant()
    payload = {"checks": ["fluency"], "rows": ROWS[:1]}
    first = api.client.post("/v1/score", headers=alice, json=payload)
    assert first.status_code == 200, first.text
    sent = len(fake_llm.requests)
    assert sent >= 1
    second = api.client.post("/v1/score", headers=bob, json=payload)
    assert second.status_code == 200, second.text
    assert len(fake_llm.requests) == 2 * sent  # bob's judge called the LLM itself
    again = api.client.post("/v1/score", headers=bob, json=payload)
    assert again.status_code == 200, again.text
    assert len(fake_llm.requests) == 2 * sent  # and his own repeat was cached


def test_pairwise_is_scoped(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _api(make_api, fake_llm)
    fake_llm.responder = lambda body: Reply(text="VERDICT: A")
    alice, bob = api.tenant(), api.tenant()
    payload = {"input": "q", "output_a": "x", "output_b": "y"}
    assert api.client.post("/v1/judge/pairwise", headers=alice, json=payload).status_code == 200
    sent = len(fake_llm.requests)
    assert api.client.post("/v1/judge/pairwise", headers=bob, json=payload).status_code == 200
    assert len(fake_llm.requests) == 2 * sent
