"""Human labels on run rows (SQLite and PostgreSQL): declare a name, add, list, delete;
values checked against the type; annotators kept apart; another tenant gets 404; the
agreement report from the check's stored results; migration 0011 down and up."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

import pytest

from engine.contract import Status
from engine.models import RowResult
from engine.storage import RunCheck, RunStatus
from engine.tenancy import auth
from tests.api.conftest import Api
from tests.conftest import queued_run


def _tenant(api: Api) -> tuple[dict[str, str], str]:
    new = auth.create_tenant(api.store, f"t-{secrets.token_hex(4)}")
    return {"Authorization": f"Bearer {new.secret}"}, new.tenant.id


def _run(api: Api, tenant_id: str, scores: list[Any], check: str = "is_helpful") -> str:
    """A finished run of ``check@1`` whose row i scored ``scores[i]`` (None: an error)."""
    run = dataclasses.replace(
        queued_run(tenant_id, len(scores)),
        status=RunStatus.SUCCEEDED,
        checks=[RunCheck("code", check, 1, "chk_x")],
    )
    api.store.create_run(run, ({"model_output": f"row {i}"} for i in range(len(scores))), None)
    results = [
        (
            0,
            i,
            RowResult(status=Status.OK, score=s)
            if s is not None
            else RowResult(status=Status.ERROR, error="boom"),
        )
        for i, s in enumerate(scores)
    ]
    api.store.save_results(run.id, results)
    return run.id


def _declare(api: Api, h: dict[str, str], name: str, **body: Any) -> Any:
    return api.client.put(f"/v1/label-names/{name}", headers=h, json=body)


def _label(
    run: str, row: int, value: Any, annotator: str = "ann", name: str = "helpful"
) -> dict[str, Any]:
    return {
        "target": {"run": run, "row": row},
        "name": name,
        "value": value,
        "annotator": annotator,
    }


def test_declare_add_list_delete(api: Api) -> None:
    h, tid = _tenant(api)
    run = _run(api, tid, [True, False, True])
    assert _declare(api, h, "helpful", type="bool").status_code == 201
    assert _declare(api, h, "helpful", type="bool").status_code == 200  # the same again
    r = api.client.post(
        "/v1/labels",
        headers=h,
        json={"labels": [_label(run, 0, True), _label(run, 0, "no", "bob"), _label(run, 1, 0)]},
    )
    assert r.status_code == 201, r.text
    stored = r.json()["labels"]
    assert [x["value"] for x in stored] == [True, False, False]  # "no" and 0 are false
    assert [x["annotator"] for x in stored] == ["ann", "bob", "ann"]
    # several annotators on row 0: both kept, never merged
    row0 = api.client.get("/v1/labels", headers=h, params={"run": run, "row": 0}).json()["labels"]
    assert sorted(x["annotator"] for x in row0) == ["ann", "bob"]
    bob = api.client.get("/v1/labels", headers=h, params={"annotator": "bob"}).json()["labels"]
    assert len(bob) == 1 and bob[0]["target"] == {"run": run, "row": 0}
    # another type is refused while labels exist
    again = _declare(api, h, "helpful", type="float")
    assert again.status_code == 409 and "delete them first" in again.json()["detail"]
    assert api.client.delete(f"/v1/labels/{bob[0]['id']}", headers=h).json() == {"deleted": 1}
    assert api.client.delete(f"/v1/labels/{bob[0]['id']}", headers=h).status_code == 404
    gone = api.client.delete("/v1/labels", headers=h, params={"name": "helpful"}).json()
    assert gone == {"deleted": 2}


def test_values_are_checked_against_the_type(api: Api) -> None:
    h, tid = _tenant(api)
    run = _run(api, tid, [1, 2, 3])
    assert _declare(api, h, "quality", type="ordinal").status_code == 422  # no levels
    assert _declare(api, h, "quality", type="ordinal", levels=[1, 2, 3, 4, 5]).status_code == 201
    bad = api.client.post(
        "/v1/labels",
        headers=h,
        json={
            "labels": [
                _label(run, 0, 3, name="quality"),
                _label(run, 1, 7, name="quality"),
            ]
        },
    )
    assert bad.status_code == 422
    detail = bad.json()["detail"]
    assert "labels[1]" in detail and "7 is not one of its levels [1, 2, 3, 4, 5]" in detail
    # all or none: the good label was not stored either
    assert api.client.get("/v1/labels", headers=h).json()["labels"] == []
    undeclared = api.client.post(
        "/v1/labels", headers=h, json={"labels": [_label(run, 0, True, name="nope")]}
    )
    assert (
        undeclared.status_code == 404 and "PUT /v1/label-names/nope" in undeclared.json()["detail"]
    )
    out_of_range = api.client.post(
        "/v1/labels", headers=h, json={"labels": [_label(run, 3, 2, name="quality")]}
    )
    assert out_of_range.status_code == 422 and "rows 0 to 2" in out_of_range.json()["detail"]


def test_another_tenants_labels_runs_and_reports_are_404(api: Api) -> None:
    a, tid_a = _tenant(api)
    b, _ = _tenant(api)
    run = _run(api, tid_a, [True] * 3)
    _declare(api, a, "helpful", type="bool")
    made = api.client.post("/v1/labels", headers=a, json={"labels": [_label(run, 0, True)]}).json()
    label_id = made["labels"][0]["id"]
    _declare(api, b, "helpful", type="bool")
    # B cannot label A's run, see A's labels, delete them, or read A's report
    r = api.client.post("/v1/labels", headers=b, json={"labels": [_label(run, 0, True)]})
    assert r.status_code == 404
    assert api.client.get("/v1/labels", headers=b).json()["labels"] == []
    assert api.client.delete(f"/v1/labels/{label_id}", headers=b).status_code == 404
    report = api.client.get(
        "/v1/agreement", headers=b, params={"check": "is_helpful", "labels": "helpful", "run": run}
    )
    assert report.status_code == 404
    assert api.client.get("/v1/labels", headers=a).json()["labels"][0]["id"] == label_id


def test_agreement_report_from_stored_results(api: Api) -> None:
    h, tid = _tenant(api)
    human = [True] * 35 + [False] * 35
    check: list[Any] = [True] * 30 + [False] * 5 + [False] * 28 + [True] * 7
    check[0] = None  # an error: no verdict, left out
    run = _run(api, tid, check)
    _declare(api, h, "helpful", type="bool")
    labels = [_label(run, i, v) for i, v in enumerate(human)]
    assert api.client.post("/v1/labels", headers=h, json={"labels": labels}).status_code == 201
    r = api.client.get(
        "/v1/agreement",
        headers=h,
        params={"check": "is_helpful@1", "labels": "helpful", "resamples": 500},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["check"] == "is_helpful@1"
    assert body["n"] == 69 and body["skipped"]["no_check_result"] == 1
    assert body["confusion"]["matrix"] == [[28, 7], [5, 29]]
    assert body["tpr"]["value"] == pytest.approx(29 / 34)
    assert body["verdict"] == "enough labels"
    first = body["disagreements"][0]
    assert first["link"] == f"/ui/runs/{run}/rows/{first['target']['row']}"
    few = api.client.get(
        "/v1/agreement",
        headers=h,
        params={
            "check": "is_helpful@1",
            "labels": "helpful",
            "resamples": 500,
            "min_per_class": 40,
        },
    ).json()
    assert few["verdict"] == "too few labels"
    assert few["missing"] == {"false": 5, "true": 6}
    missing = api.client.get(
        "/v1/agreement", headers=h, params={"check": "other", "labels": "helpful"}
    )
    assert missing.status_code == 404 and "no run" in missing.json()["detail"]


def test_migration_0011_goes_down_and_up_keeping_every_tenants_data(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, inspect, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import CheckVersionRow, LabelRow, RunRow, TenantRow

    h, tid = _tenant(api)
    run = _run(api, tid, [True, False])
    _declare(api, h, "helpful", type="bool")
    api.client.post("/v1/labels", headers=h, json={"labels": [_label(run, 0, True)]})
    api.push(h, "kept", "def evaluate(model_output: str) -> bool:\n    return True\n")
    required = api.client.put(
        "/v1/checks/kept/required-agreement", headers=h, json={"requirement": "helpful:kappa=0.5"}
    )
    assert required.status_code == 200, required.text
    db = api.store.engine

    def counts() -> tuple[Any, ...]:
        with db.connect() as conn:
            return tuple(
                conn.scalar(select(func.count()).select_from(t))
                for t in (TenantRow, RunRow, CheckVersionRow)
            )

    before = counts()
    command.downgrade(alembic_config(db), "0010")
    assert "labels" not in inspect(db).get_table_names()
    assert "label_names" not in inspect(db).get_table_names()
    assert "agreement_requirements" not in inspect(db).get_table_names()
    assert counts() == before
    upgrade(db)
    assert counts() == before
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(LabelRow)) == 0
    # the tables work again after the round trip
    _declare(api, h, "helpful", type="bool")
    r = api.client.post("/v1/labels", headers=h, json={"labels": [_label(run, 1, False)]})
    assert r.status_code == 201, r.text
