"""What a check is (``kind``) and where it comes from (``origin``) are two fields, in
``GET /v1/checks``, a run's checks, and ``scorebox check list``; the boolean ``builtin``
they replace stays readable, marked deprecated in the OpenAPI document."""

from __future__ import annotations

import dataclasses

from engine.contract import Status
from engine.models import RowResult
from engine.storage import RunCheck, RunStatus
from tests.api.conftest import Api
from tests.api.test_labels import _tenant
from tests.api.test_labels_cli import _cli, cli  # noqa: F401 (cli: the fixture)
from tests.conftest import queued_run

SOURCE = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 3\n"


def test_kind_and_origin_are_apart_in_the_checks_list(api: Api) -> None:
    h = api.tenant()
    api.push(h, "long_enough", SOURCE)
    listed = {c["name"]: c for c in api.client.get("/v1/checks", headers=h).json()["checks"]}
    fields = ("kind", "origin", "builtin")
    assert tuple(listed["long_enough"][f] for f in fields) == ("code", "pushed", False)
    # a judged built-in is a model check that comes with scorebox
    assert tuple(listed["fluency"][f] for f in fields) == ("model", "builtin", True)
    assert tuple(listed["is_json"][f] for f in fields) == ("builtin", "builtin", True)
    one = api.client.get("/v1/checks/fluency", headers=h).json()
    assert (one["kind"], one["origin"]) == ("model", "builtin")


def test_the_old_field_is_marked_deprecated_in_the_openapi_document(api: Api) -> None:
    schemas = api.client.get("/openapi.json").json()["components"]["schemas"]
    check = schemas["CheckOut"]["properties"]
    assert check["builtin"]["deprecated"] is True
    assert "read `origin`" in check["builtin"]["description"]
    assert check["origin"]["enum"] == ["builtin", "pushed", "generated"]
    assert "a judged built-in is `kind` `model`, `origin` `builtin`" in check["kind"]["description"]


def test_a_runs_checks_say_their_origin(api: Api) -> None:
    h, tenant_id = _tenant(api)
    run = dataclasses.replace(
        queued_run(tenant_id, 1),
        status=RunStatus.SUCCEEDED,
        checks=[RunCheck("code", "mine", 1, "chk_x"), RunCheck("model", "fluency")],
    )
    api.store.create_run(run, iter([{"model_output": "hello"}]), None)
    api.store.save_results(run.id, [(0, 0, RowResult(status=Status.OK, score=True))])
    checks = api.client.get(f"/v1/runs/{run.id}", headers=h).json()["checks"]
    assert [(c["name"], c["kind"], c["origin"]) for c in checks] == [
        ("mine", "code", "pushed"),
        ("fluency", "model", "builtin"),
    ]


def test_check_list_prints_kind_and_origin(cli: tuple[Api, str]) -> None:  # noqa: F811
    api, _ = cli
    pushed = api.client.post("/v1/checks", json={"name": "long_enough", "source": SOURCE})
    assert pushed.status_code == 201, pushed.text
    r = _cli("check", "list")
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line.split()[1:3] for line in r.output.splitlines()}
    assert lines["long_enough@1"] == ["code", "pushed"]
    assert lines["fluency"] == ["model", "builtin"]
    assert lines["is_json"] == ["builtin", "builtin"]
