"""One pinned example per scorer format, end to end: upload, /v1/runs, results, row view."""

from __future__ import annotations

import html
from typing import Any

import pytest

from tests.api.conftest import Api

pytestmark = pytest.mark.docker

ROW = {
    "id": "r1",
    "model_output": "Paris",
    "scenario_input": "Capital of France?",
    "scenario_result": "Paris",
}

REWARD_KIT = """
from reward_kit import EvaluateResult, MetricResult, reward_function

@reward_function
def exact(messages, ground_truth=None, **kwargs):
    ok = messages[-1]["content"] == ground_truth
    return EvaluateResult(
        score=1.0 if ok else 0.0,
        reason=f"{len(messages)} messages",
        metrics={"exact_match": MetricResult(score=float(ok), reason="compared to truth")},
    )
"""
GRADER = """
def grade(sample, item) -> float:
    return 1.0 if sample["output_text"] == item["scenario_result"] else 0.0
"""
PROMPTFOO = """
def get_assert(output, context):
    ok = context["vars"]["city"] in output
    return {
        "pass": ok,
        "score": 0.9 if ok else 0.1,
        "reason": "names the city",
        "namedScores": {"city_named": 1.0 if ok else 0.0},
    }
"""
BRAINTRUST = """
def handler(input, output, expected):
    return [
        {"name": "exact_match", "score": 1.0 if output == expected else 0.0},
        {"name": "short", "score": 1.0 if len(output) < 20 else 0.0},
    ]
"""
PHOENIX = """
def matches(output, reference):
    ok = output == reference
    return (1.0 if ok else 0.0, "correct" if ok else "incorrect", "compared to reference")
"""
LANGSMITH = """
def correct(outputs: dict, reference_outputs: dict) -> dict:
    ok = outputs["output"] == reference_outputs["output"]
    return {"key": "correct", "score": ok, "comment": "exact comparison"}
"""

CASES: list[tuple[str, str, dict[str, Any], Any, bool | None, str]] = [
    ("reward_kit", REWARD_KIT, {"ground_truth": "Paris"}, 1.0, None, "exact_match"),
    ("grader", GRADER, {}, 1.0, None, ""),
    ("promptfoo", PROMPTFOO, {"vars": {"city": "Paris"}}, 0.9, True, "city_named"),
    ("braintrust", BRAINTRUST, {}, 1.0, None, "short"),
    ("phoenix", PHOENIX, {}, 1.0, None, "correct"),
    ("langsmith", LANGSMITH, {}, True, True, "exact comparison"),
]


@pytest.mark.parametrize(
    ("name", "source", "extra", "score", "passed", "shown"), CASES, ids=[c[0] for c in CASES]
)
def test_format_end_to_end(
    docker_api: Api,
    name: str,
    source: str,
    extra: dict[str, Any],
    score: Any,
    passed: bool | None,
    shown: str,
) -> None:
    api = docker_api
    h = api.tenant()
    upload = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": (f"{name}.py", source.encode(), "text/x-python")},
    )
    assert upload.status_code == 201, upload.text
    failing = {**ROW, **extra, "id": "r2", "model_output": "Lyon"}
    reply = api.client.post(
        "/v1/runs", headers=h, json={"checks": [name], "rows": [{**ROW, **extra}, failing]}
    )
    assert reply.status_code == 202, reply.text
    run = api.wait_run(h, reply.json()["id"])
    assert run["status"] == "succeeded", run
    results = api.client.get(f"/v1/runs/{run['id']}/results", headers=h).json()["results"]
    first, second = results
    assert first["status"] == "ok", first
    assert first["score"] == score and first["passed"] == passed
    assert second["status"] == "ok", second
    if passed is not None:
        assert second["passed"] is False
        assert run["summary"][0]["pass_rate"] == 0.5  # the format's own pass flag
    key = h["Authorization"].removeprefix("Bearer ")
    assert api.client.post("/ui/signin", data={"api_key": key}).status_code in (200, 303)
    page = api.client.get(f"/ui/runs/{run['id']}/rows/0")
    assert page.status_code == 200
    text = html.unescape(page.text)
    if passed is not None:
        assert "pass" in text
    if shown:
        assert shown in text
    for field in extra:
        assert f"<dt>{field}</dt>" in page.text  # the format's own row fields are shown


def test_upload_names_the_entry(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    source = (
        "def first(output, context):\n    return False\n\n"
        "def second(output, context):\n    return True\n"
    )
    files = {"file": ("two.py", source.encode(), "text/x-python")}
    refused = api.client.post("/v1/checks/upload", headers=h, files=files)
    assert refused.status_code == 422 and "entry" in refused.text
    files = {"file": ("two.py", source.encode(), "text/x-python")}
    made = api.client.post("/v1/checks/upload", headers=h, files=files, data={"entry": "second"})
    assert made.status_code == 201, made.text
    assert made.json()["entry"] == "second"
    reply = api.client.post("/v1/score", headers=h, json={"checks": ["two"], "rows": [ROW]})
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert (result["status"], result["score"], result["passed"]) == ("ok", True, True)
