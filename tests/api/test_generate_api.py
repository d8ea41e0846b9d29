"""POST /v1/checks/generate through the app factory; the generated check uploaded and scored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, AppFactory
from tests.fake_llm import FakeLLM

GOOD = """\
def evaluate(model_output: str, scenario_result: str) -> bool:
    return str(scenario_result).lower() in model_output.lower()
"""
CASE_SENSITIVE = GOOD.replace(".lower()", "")
REQUEST = {
    "description": "The answer names the expected city, ignoring case.",
    "requires_scenario_result": True,
    "output_data_type": "bool",
    "examples": [
        {"row": {"model_output": "It is Paris.", "scenario_result": "Paris"}, "expected": True},
        {"row": {"model_output": "Lyon.", "scenario_result": "Paris"}, "expected": False},
        {"row": {"model_output": "paris!", "scenario_result": "Paris"}, "expected": True},
    ],
}


def _app(make_api: AppFactory, fake: FakeLLM, **overrides: Any) -> Api:
    api = make_api(
        llm_base_url=fake.base_url,
        llm_api_key="test-key",
        llm_model="fake-model",
        llm_max_retries=0,
        **overrides,
    )
    return api


@pytest.mark.docker
def test_generated_check_uploaded_runs_in_the_sandbox_restricted(
    docker_settings: Any, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm, pool_size=1)
    h = api.tenant()
    fake_llm.reply(f"```python\n{CASE_SENSITIVE}```").reply(f"Fixed:\n```python\n{GOOD}```")

    reply = api.client.post("/v1/checks/generate", headers=h, json=REQUEST)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["accepted"] is True
    assert body["code"] == GOOD
    assert body["agreement"] == {"passed": 3, "total": 3}
    assert [a["n"] for a in body["attempts"]] == [1, 2]
    assert "expected True, got False" in body["attempts"][0]["feedback"]
    assert body["report"]["valid"] is True
    listed = api.client.get("/v1/checks", headers=h).json()["checks"]
    assert all(c["builtin"] for c in listed)  # nothing saved

    saved = api.client.post(
        "/v1/checks",
        headers=h,
        json={"name": "city", "source": body["code"], "policy": "restricted"},
    )
    assert saved.status_code == 201, saved.text
    rows = [
        {"model_output": "PARIS, France", "scenario_result": "Paris"},
        {"model_output": "Rome", "scenario_result": "Paris"},
    ]
    scored = api.client.post("/v1/score", headers=h, json={"checks": ["city"], "rows": rows})
    assert scored.status_code == 200, scored.text
    results = scored.json()["results"]
    assert [(r["status"], r["score"]) for r in results] == [("ok", True), ("ok", False)]


def test_generate_needs_a_key(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _app(make_api, fake_llm)
    assert api.client.post("/v1/checks/generate", json=REQUEST).status_code == 401
    assert fake_llm.requests == []


def test_bad_example_is_422(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _app(make_api, fake_llm)
    bad = {**REQUEST, "examples": [{"row": {"model_output": "x"}, "expected": 2}]}
    reply = api.client.post("/v1/checks/generate", headers=api.tenant(), json=bad)
    assert reply.status_code == 422
    assert "not a bool" in reply.json()["detail"]


def test_llm_outage_is_502(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _app(make_api, fake_llm)
    fake_llm.error(500)
    reply = api.client.post(
        "/v1/checks/generate", headers=api.tenant(), json={**REQUEST, "check_type": "model"}
    )
    assert reply.status_code == 502
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "500" in reply.json()["detail"]


@pytest.mark.docker
def test_generator_sandbox_runs_go_through_the_run_service(
    docker_settings: Any, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm, pool_size=1)
    h = api.tenant()
    fake_llm.reply(f"```python\n{CASE_SENSITIVE}```").reply(f"Fixed:\n```python\n{GOOD}```")
    reply = api.client.post("/v1/checks/generate", headers=h, json=REQUEST)
    assert reply.status_code == 200, reply.text
    metrics = api.client.get("/metrics").text
    # two attempts on three examples, metered like /v1/score (the engine was called directly)
    assert 'scorebox_rows_scored_total{status="ok"} 6.0' in metrics
    assert "scorebox_score_request_seconds_count 2.0" in metrics
