"""NUL characters on SQLite and PostgreSQL, and database errors' text."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import text

from engine.contract import Status
from engine.errors import InvalidRequestError, StorageError
from engine.sandbox.fake import fake_runner_factory
from engine.sandbox.protocol import Job, JobRow, RowRecord
from engine.storage.database import session_factory, transaction
from tests.api.conftest import TRIVIAL_CHECK, Api, AppFactory


def _refused(reply: Any, field: str) -> None:
    assert reply.status_code == 422, reply.text
    detail = reply.json()["detail"]
    assert "NUL" in detail and field in detail, detail
    assert "SELECT" not in detail and "INSERT" not in detail


def test_a_nul_in_a_json_field_is_a_422_naming_it(api: Api) -> None:
    a = api.tenant()
    check = {"name": "t", "source": TRIVIAL_CHECK, "description": "bad\u0000"}
    _refused(api.client.post("/v1/checks", headers=a, json=check), "body.description")
    model = {"name": "m", "kind": "model", "source": "Is {model_output} ok?\u0000"}
    _refused(api.client.post("/v1/checks", headers=a, json=model), "body.source")
    run = {"checks": ["t\u0000"], "rows": [{"model_output": "x"}]}
    _refused(api.client.post("/v1/runs", headers=a, json=run), "body.checks[0]")
    okareo = {"api-key": a["Authorization"].removeprefix("Bearer ")}
    scenario = {"name": "s\u0000", "seed_data": [{"input": "q", "result": "r"}]}
    _refused(api.client.post("/v0/scenario_sets", headers=okareo, json=scenario), "body.name")
    own = [c for c in api.client.get("/v1/checks", headers=a).json()["checks"] if c["id"]]
    assert own == []  # nothing was stored


def test_a_nul_in_a_path_or_query_is_a_422(api: Api) -> None:
    a = api.tenant()
    _refused(api.client.get("/v1/checks/a%00b", headers=a), "path")
    _refused(api.client.get("/v1/runs/run_%00", headers=a), "path")
    _refused(api.client.get("/v0/check/x%00", headers={"api-key": "k"}), "path")
    _refused(api.client.get("/v1/runs", headers=a, params={"label": "a=\x00"}), "'label'")
    _refused(api.client.get("/ui/runs/r/export.csv?q=%00"), "'q'")  # before sign-in too


def test_a_nul_in_a_checks_output_never_fails_the_run(make_api: AppFactory) -> None:
    def handler(job: Job, row: JobRow) -> RowRecord | bool:
        if row.model_output == "nul":
            return RowRecord(
                t="row", i=row.i, status=Status.ERROR, error="bad\x00error", output="out\x00", ms=1
            )
        return RowRecord(t="row", i=row.i, status=Status.OK, score=True, explanation="e\x00x", ms=1)

    api = make_api(runner_factory=fake_runner_factory(handler))
    a = api.tenant()
    api.push(a, "t", TRIVIAL_CHECK)
    rows = [{"model_output": v} for v in ("ok", "nul", "ok")]
    run = api.client.post("/v1/runs", headers=a, json={"checks": ["t"], "rows": rows}).json()
    done = api.wait_run(a, run["id"], timeout=60)
    assert done["status"] == "succeeded", done
    results = api.client.get(f"/v1/runs/{run['id']}/results", headers=a).json()["results"]
    assert [r["status"] for r in results] == ["ok", "error", "ok"]
    assert results[0]["explanation"] == "e\ufffdx"
    assert results[1]["error"] == "bad\ufffderror"


def test_a_database_errors_text_never_reaches_the_caller(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = session_factory(api.store.engine)
    with (
        caplog.at_level(logging.ERROR, "scorebox.storage"),
        pytest.raises(StorageError) as caught,
        transaction(sessions) as s,
    ):
        s.execute(text("SELECT secret FROM no_such_table WHERE k = :k"), {"k": "tnt_secret"})
    message = str(caught.value)
    assert "no_such_table" not in message and "tnt_secret" not in message, message
    assert "server's log" in message
    assert "no_such_table" in caplog.text  # the operator still has it


def test_a_nul_the_database_refuses_is_the_callers_422_not_a_503(
    api: Api, database_url: str
) -> None:
    # a form field (the dashboard's, /v0's multipart) reaches the store unchecked
    if database_url.startswith("sqlite"):
        assert api.store.create_tenant("a\x00b").name == "a\x00b"  # SQLite stores it as is
        return
    with pytest.raises(InvalidRequestError, match="NUL character") as caught:
        api.store.create_tenant("a\x00b")
    assert "INSERT" not in str(caught.value) and "tenants" not in str(caught.value)
