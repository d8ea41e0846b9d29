"""Scoring through the API with a real Docker engine: /v1/score and durable runs."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import TRIVIAL_CHECK, Api

pytestmark = pytest.mark.docker

FLOAT_CHECK = (
    "def evaluate(model_output: str, scenario_result: str) -> float:\n"
    "    return len(model_output) / len(scenario_result)\n"
)
ROWS = [
    {"id": f"r{i}", "model_output": "yes" * (i % 3 + 1), "scenario_result": "abc"}
    for i in range(30)
] + [{"id": "no-expected", "model_output": "yes"}]


def test_score_inline(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    api.push(h, "yes", TRIVIAL_CHECK)
    ratio = api.push(h, "ratio", FLOAT_CHECK)
    body = {
        "checks": ["yes", f"ratio@{ratio['version']}", ratio["id"]],
        "rows": ROWS[:3] + ROWS[-1:],
    }
    reply = api.client.post("/v1/score", headers=h, json=body)
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert len(results) == 4 * 3
    assert [r["check"] for r in results[:3]] == ["yes", "ratio", "ratio"]
    assert results[0] == {
        **results[0],
        "row_index": 0,
        "row_id": "r0",
        "status": "ok",
        "score": True,
    }
    assert results[1]["score"] == 1.0
    assert results[-1]["status"] == "skipped"  # no scenario_result
    summary = reply.json()["summary"]
    assert summary[0]["pass_rate"] == 1.0
    assert summary[1]["counts"] == {"ok": 3, "skipped": 1}
    assert summary[1]["p50"] == 2.0


def test_run_lifecycle_summary_and_results(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    api.push(h, "yes", TRIVIAL_CHECK)
    api.push(h, "ratio", FLOAT_CHECK)
    reply = api.client.post(
        "/v1/runs",
        headers=h,
        json={"checks": ["yes", {"name": "ratio"}], "rows": ROWS, "labels": {"k": "v"}},
    )
    assert reply.status_code == 202, reply.text
    assert reply.headers["location"] == f"/v1/runs/{reply.json()['id']}"
    run = api.wait_run(h, reply.json()["id"])
    assert run["status"] == "succeeded", run
    assert run["progress"] == {"done": 62, "total": 62, "fraction": 1.0}
    assert run["labels"] == {"k": "v"}
    yes, ratio = run["summary"]
    assert yes["counts"] == {"ok": 31}
    assert yes["pass_rate"] == 1.0
    assert ratio["counts"] == {"ok": 30, "skipped": 1}
    assert ratio["min"] == 1.0 and ratio["max"] == 3.0 and ratio["p50"] == 2.0
    assert ratio["pass_rate"] is None

    page = api.client.get(f"/v1/runs/{run['id']}/results?limit=25", headers=h).json()
    assert len(page["results"]) == 25 and page["next_offset"] == 25
    assert page["results"][0]["row_id"] == "r0"
    rest = api.client.get(f"/v1/runs/{run['id']}/results?offset=25&limit=100", headers=h).json()
    assert len(rest["results"]) == 37 and rest["next_offset"] is None
    stream = api.client.get(
        f"/v1/runs/{run['id']}/results", headers={**h, "Accept": "application/x-ndjson"}
    )
    assert stream.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in stream.text.splitlines()]
    assert len(lines) == 62
    assert {(r["row_index"], r["check"]) for r in lines} == {
        (i, c) for i in range(31) for c in ("yes", "ratio")
    }
    only = api.client.get(f"/v1/runs/{run['id']}/results?check=ratio", headers=h).json()
    assert {r["check"] for r in only["results"]} == {"ratio"}


def test_run_from_ndjson_upload_and_builtins(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    api.push(h, "yes", TRIVIAL_CHECK)
    payload = "\n".join(json.dumps(r) for r in ROWS[:5]).encode()
    checks = ["yes"]
    listed = api.client.get("/v1/checks", headers=h).json()["checks"]
    if any(c["builtin"] and c["name"] == "exact_match" for c in listed):
        checks.append("exact_match")
    reply = api.client.post(
        "/v1/runs/upload",
        headers=h,
        data={"checks": json.dumps(checks)},
        files={"file": ("rows.jsonl", payload, "application/x-ndjson")},
    )
    assert reply.status_code == 202, reply.text
    run = api.wait_run(h, reply.json()["id"])
    assert run["status"] == "succeeded", run
    assert run["progress"]["done"] == 5 * len(checks)
    bad = api.client.post(
        "/v1/runs/upload",
        headers=h,
        data={"checks": "yes"},
        files={"file": ("r.jsonl", b"{nope\n")},
    )
    assert bad.status_code == 422
    assert "line 1" in bad.json()["detail"]


def test_cancel_keeps_scored_rows(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    api.push(
        h,
        "slow",
        "import time\n\ndef evaluate(model_output: str) -> bool:\n"
        "    time.sleep(0.05)\n    return True\n",
    )
    rows = [{"model_output": "x"}] * 400
    run_id = api.client.post("/v1/runs", headers=h, json={"checks": ["slow"], "rows": rows}).json()[
        "id"
    ]
    cancelled = api.client.post(f"/v1/runs/{run_id}/cancel", headers=h).json()
    assert cancelled["status"] == "cancelled"
    final = api.wait_run(h, run_id)
    assert final["status"] == "cancelled"
    assert final["progress"]["done"] <= 400
