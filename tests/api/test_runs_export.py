"""Issue 11 on the API: GET /v1/runs honours status, label and offset; results as CSV;
``builtin:NAME`` always names the built-in. Built-in checks only (no Docker)."""

from __future__ import annotations

import csv
import io

from tests.api.conftest import TRIVIAL_CHECK, Api

ROWS = [{"id": "a", "model_output": "{}"}, {"id": "b", "model_output": "nope, not JSON"}]


def _run(api: Api, h: dict[str, str], checks: list[object], **labels: str) -> str:
    reply = api.client.post(
        "/v1/runs", headers=h, json={"checks": checks, "rows": ROWS, "labels": labels}
    )
    assert reply.status_code == 202, reply.text
    run_id = str(reply.json()["id"])
    api.wait_run(h, run_id)
    return run_id


def test_list_runs_filters_by_status_label_and_offset(api: Api) -> None:
    h = api.tenant()
    first = _run(api, h, ["is_json"], suite="nightly")
    second = _run(api, h, ["is_json"], suite="pr")
    third = _run(api, h, ["is_json"], suite="nightly")

    def ids(**query: str | int) -> list[str]:
        reply = api.client.get("/v1/runs", headers=h, params=query)
        assert reply.status_code == 200, reply.text
        return [r["id"] for r in reply.json()["runs"]]

    assert ids() == [third, second, first]
    assert ids(offset=1) == [second, first]
    assert ids(offset=1, limit=1) == [second]
    assert ids(label="suite=nightly") == [third, first]
    assert ids(label="suite=nightly", offset=1) == [first]
    assert ids(status="succeeded", label="suite=pr") == [second]
    assert ids(status="failed") == []
    assert api.client.get("/v1/runs", headers=h, params={"status": "nope"}).status_code == 422
    bad = api.client.get("/v1/runs", headers=h, params={"label": "novalue"})
    assert bad.status_code == 422 and "KEY=VALUE" in bad.text


def test_results_as_csv_with_inputs(api: Api) -> None:
    h = api.tenant()
    run_id = _run(api, h, ["is_json"])
    reply = api.client.get(f"/v1/runs/{run_id}/results", headers={**h, "Accept": "text/csv"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(reply.text)))
    assert [(r["row_id"], r["check"], r["score"]) for r in table] == [
        ("a", "is_json", "true"),
        ("b", "is_json", "false"),
    ]
    assert table[1]["model_output"] == "nope, not JSON"
    assert table[1]["explanation"].startswith("not JSON")


def test_builtin_prefix_reaches_the_builtin_past_a_pushed_check(api: Api) -> None:
    h = api.tenant()
    api.push(h, "is_json", TRIVIAL_CHECK)  # shadows the built-in for plain `is_json`
    run_id = _run(api, h, ["builtin:is_json"])
    results = api.client.get(f"/v1/runs/{run_id}/results", headers=h).json()["results"]
    assert [r["score"] for r in results] == [True, False]
    bad = api.client.post("/v1/runs", headers=h, json={"checks": ["builtin:nope"], "rows": ROWS})
    assert bad.status_code == 422 and "no built-in 'nope'" in bad.text


def test_openapi_request_examples_run_on_a_fresh_tenant(api: Api) -> None:
    """Finding 11: the /v1/score and /v1/runs examples named a check that does not exist."""
    h = api.tenant()
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name, path in (("ScoreRequest", "/v1/score"), ("RunRequest", "/v1/runs")):
        [example] = schemas[name]["examples"]
        reply = api.client.post(path, headers=h, json=example)
        assert reply.status_code in (200, 202), (name, reply.text)
