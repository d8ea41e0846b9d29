"""Model checks and built-ins through the API: params checked at submission, LLM usage per
run, and the persistent response cache (a re-run costs no LLM calls)."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, AppFactory
from tests.fake_llm import FakeLLM, Reply

TEMPLATE = "Rate how polite this answer is.\n\nAnswer: {model_output}\n\nReply SCORE: 1-5."
ROWS = [{"model_output": "Thank you kindly."}, {"model_output": "Go away."}]


def _app(make_api: AppFactory, fake: FakeLLM) -> Api:
    return make_api(
        llm_base_url=fake.base_url,
        llm_api_key="test-key",
        llm_model="fake-model",
        llm_max_retries=0,
    )


def _run(api: Api, headers: dict[str, str], checks: list[Any]) -> dict[str, Any]:
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": checks, "rows": ROWS})
    assert reply.status_code == 202, reply.text
    return api.wait_run(headers, reply.json()["id"], timeout=60)


def test_bad_builtin_params_are_refused_before_the_run_is_queued(api: Api) -> None:
    headers = api.tenant()
    bad = {"name": "string_check", "params": {"operation": "sounds-like"}}
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": [bad], "rows": ROWS})
    assert reply.status_code == 422, reply.text
    assert "operation" in reply.json()["detail"]
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []


def test_bad_judge_ensemble_is_refused(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _app(make_api, fake_llm)
    headers = api.tenant()
    body = {"name": "polite", "kind": "model", "prompt_template": TEMPLATE}
    assert api.client.post("/v1/checks", headers=headers, json=body).status_code == 201
    ref = {"name": "polite", "params": {"models": "not-a-list"}}
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": [ref], "rows": ROWS})
    assert reply.status_code == 422, reply.text
    assert "models" in reply.json()["detail"]


def test_model_check_run_records_usage_and_a_rerun_is_served_from_the_cache(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda body: Reply(text="Polite enough.\nSCORE: 4")
    api = _app(make_api, fake_llm)
    headers = api.tenant()
    body = {"name": "polite", "kind": "model", "prompt_template": TEMPLATE}
    assert api.client.post("/v1/checks", headers=headers, json=body).status_code == 201

    first = _run(api, headers, ["polite"])
    assert first["status"] == "succeeded", first
    assert first["summary"][0]["counts"] == {"ok": 2}
    assert first["llm_usage"]["calls"] == 2
    assert first["llm_usage"]["cached_calls"] == 0
    requests_after_first = len(fake_llm.requests)
    assert requests_after_first == 2

    second = _run(api, headers, ["polite"])
    assert second["status"] == "succeeded", second
    assert second["summary"][0]["mean"] == 4
    assert len(fake_llm.requests) == requests_after_first  # zero LLM requests the second time
    assert second["llm_usage"]["calls"] == 0
    assert second["llm_usage"]["cached_calls"] == 2
