"""Runs on the API: GET /v1/runs honours status, label and offset; results as CSV;
``builtin:NAME`` always names the built-in. Built-in checks only (no Docker)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from engine.cli import run_manage
from engine.cli.remote import Remote
from engine.contract import Status
from engine.models import RowResult
from engine.runs.export import FIELDS
from engine.storage import RunStatus, new_id
from engine.tenancy import auth
from tests.api.conftest import TRIVIAL_CHECK, Api
from tests.conftest import queued_run

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
    """The /v1/score and /v1/runs examples named a check that does not exist."""
    h = api.tenant()
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name, path in (("ScoreRequest", "/v1/score"), ("RunRequest", "/v1/runs")):
        [example] = schemas[name]["examples"]
        reply = api.client.post(path, headers=h, json=example)
        assert reply.status_code in (200, 202), (name, reply.text)


def _stored_run(api: Api) -> tuple[str, dict[str, str]]:
    """A finished run whose results carry a pass flag, metadata and a serving model."""
    new = auth.create_tenant(api.store, f"export-{new_id('t')}")
    run = queued_run(new.tenant.id, 3, 1)
    rows: list[dict[str, Any]] = [
        {"id": "q1", "model_output": "Paris", "scenario_input": "capital?"},
        {"id": "q2", "model_output": "", "scenario_result": {"expected": "Rome"}},
        {"id": "q3", "model_output": "=1+1"},
    ]
    api.store.create_run(run, iter(rows), None)
    results = [
        RowResult(
            row_id="q1",
            status=Status.OK,
            score=0.75,
            passed=True,
            model="judge-a",
            metadata={"sub": {"tone": 0.5}},
            explanation="fine",
        ),
        RowResult(row_id="q2", status=Status.OK, score=0.1, passed=False, model="judge-b"),
        RowResult(row_id="q3", status=Status.ERROR, error="KeyError: 'x'"),
    ]
    api.store.save_results(run.id, [(0, i, r) for i, r in enumerate(results)])
    api.store.set_run_status(run.id, RunStatus.RUNNING)
    api.store.set_run_status(run.id, RunStatus.SUCCEEDED)
    return run.id, {"Authorization": f"Bearer {new.secret}"}


def test_every_export_has_the_same_columns_inputs_pass_flags_metadata_and_model(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, h = _stored_run(api)
    rest_csv = api.client.get(f"/v1/runs/{run_id}/results", headers={**h, "Accept": "text/csv"})
    assert rest_csv.status_code == 200, rest_csv.text
    table = list(csv.DictReader(io.StringIO(rest_csv.text)))
    assert list(table[0]) == list(FIELDS)
    assert [(r["row_id"], r["passed"], r["model"]) for r in table] == [
        ("q1", "true", "judge-a"),
        ("q2", "false", "judge-b"),
        ("q3", "", ""),
    ]
    assert json.loads(table[0]["metadata"]) == {"sub": {"tone": 0.5}}
    assert table[0]["scenario_input"] == "capital?"
    assert table[2]["model_output"] == "'=1+1"  # a formula is escaped in CSV only

    ndjson = api.client.get(
        f"/v1/runs/{run_id}/results", headers={**h, "Accept": "application/x-ndjson"}
    )
    lines = [json.loads(line) for line in ndjson.text.splitlines()]
    assert [(r["passed"], r["model"], r["model_output"]) for r in lines] == [
        (True, "judge-a", "Paris"),
        (False, "judge-b", ""),
        (None, None, "=1+1"),
    ]
    assert lines[1]["scenario_result"] == {"expected": "Rome"}
    assert lines[0]["metadata"] == {"sub": {"tone": 0.5}}

    # `scorebox run results ID -o FILE` against the same app
    api.client.headers.update(h)

    def remote(server: str | None, api_key: str | None) -> Remote:
        made = Remote("http://testserver", "key")
        made.client = cast(Any, api.client)  # a TestClient is an httpx.Client
        return made

    monkeypatch.setattr(run_manage, "Remote", remote)
    for name in ("x.csv", "x.jsonl"):
        reply = CliRunner().invoke(
            run_manage.run_results, [run_id, "-o", str(tmp_path / name), "--api-key", "k"]
        )
        assert reply.exit_code == 0, reply.output
    assert (tmp_path / "x.csv").read_bytes().decode() == rest_csv.text
    cli_lines = [json.loads(x) for x in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert [list(r) for r in cli_lines] == [list(FIELDS)] * 3
    assert cli_lines == [{k: line[k] for k in FIELDS} for line in lines]
