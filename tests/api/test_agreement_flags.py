"""Where people look (SQLite and PostgreSQL): a check version's required agreement flagged
in ``GET /v1/checks`` and on the dashboard's check list while the labels do not meet it,
re-checked as labels arrive; corrected pass rates beside the measured ones in a run's
summary and on its dashboard page."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine.calibration.prevalence import rogan_gladen
from engine.contract import Status
from engine.models import RowResult
from engine.storage import RunCheck, RunStatus
from tests.api.conftest import Api
from tests.api.test_labels import _run, _tenant
from tests.api.test_labels_dashboard import _sign_in
from tests.conftest import queued_run

SOURCE = "def evaluate(model_output: str) -> bool:\n    return True\n"


def _push(api: Api, h: dict[str, str], name: str) -> None:
    pushed = api.client.post("/v1/checks", headers=h, json={"name": name, "source": SOURCE})
    assert pushed.status_code == 201, pushed.text


def _label(api: Api, h: dict[str, str], tid: str, good: bool, per_class: int = 35) -> str:
    """A run of is_helpful@1 labelled by people; the check agrees with them when ``good``."""
    human = [True] * per_class + [False] * per_class
    check = human if good else [not x if i % 3 else x for i, x in enumerate(human)]
    run = _run(api, tid, list(check))
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    labels = [
        {"target": {"run": run, "row": i}, "name": "helpful", "value": x, "annotator": "ann"}
        for i, x in enumerate(human)
    ]
    stored = api.client.post("/v1/labels", headers=h, json={"labels": labels})
    assert stored.status_code == 201, stored.text
    return run


def _listed(api: Api, h: dict[str, str]) -> dict[str, Any]:
    body = api.client.get("/v1/checks", headers=h, params={"include_builtins": False}).json()
    return {c["name"]: c["required_agreement"] for c in body["checks"]}


def test_checks_list_flags_a_requirement_not_met_now(api: Api) -> None:
    h, tid = _tenant(api)
    _push(api, h, "is_helpful")
    _push(api, h, "plain")
    _label(api, h, tid, good=False)
    put = api.client.put(
        "/v1/checks/is_helpful/required-agreement",
        headers=h,
        json={"requirement": "helpful:tpr=0.8,tnr=0.8"},
    )
    assert put.status_code == 200, put.text
    listed = _listed(api, h)
    assert listed["plain"] is None  # no requirement: nothing judged, nothing flagged
    flag = listed["is_helpful"]
    assert (flag["check"], flag["status"]) == ("is_helpful@1", "below")
    assert flag["requirement"] == "helpful:tpr=0.8,tnr=0.8"
    assert "its lower bound is below 0.8" in flag["message"]
    _sign_in(api, h)
    page = api.client.get("/ui/checks")
    assert page.status_code == 200
    assert "is_helpful@1: agreement below (helpful:tpr=0.8,tnr=0.8)" in page.text
    assert "plain@1: agreement" not in page.text
    # labels the check agrees with arrive: judged again on the next read, no longer flagged
    api.client.delete("/v1/labels", headers=h, params={"name": "helpful"})
    _label(api, h, tid, good=True)
    assert _listed(api, h)["is_helpful"]["status"] == "passed"
    assert "agreement-flag" not in api.client.get("/ui/checks").text
    # too few labels is a flag too
    api.client.delete("/v1/labels", headers=h, params={"name": "helpful"})
    _label(api, h, tid, good=True, per_class=5)
    assert _listed(api, h)["is_helpful"]["status"] == "too few labels"
    assert "is_helpful@1: agreement too few labels" in api.client.get("/ui/checks").text
    # another tenant's list carries none of it
    other, _ = _tenant(api)
    assert _listed(api, other) == {}


def _production(api: Api, tid: str, check_id: str) -> str:
    """A finished, unlabelled run of is_helpful@1 (``check_id``): 60 of 100 rows pass."""
    scores = [True] * 60 + [False] * 40
    run = dataclasses.replace(
        queued_run(tid, len(scores)),
        status=RunStatus.SUCCEEDED,
        checks=[RunCheck("code", "is_helpful", 1, check_id)],
    )
    api.store.create_run(run, ({"model_output": f"row {i}"} for i in range(100)), None)
    results = [(0, i, RowResult(status=Status.OK, score=x)) for i, x in enumerate(scores)]
    api.store.save_results(run.id, results)
    return run.id


def test_run_summary_carries_the_corrected_pass_rate(api: Api) -> None:
    h, tid = _tenant(api)
    _push(api, h, "is_helpful")
    check_id = api.client.get("/v1/checks/is_helpful", headers=h).json()["id"]
    # labelled: 40 people-pass (the check passes 36), 40 people-fail (it fails 32)
    human = [True] * 40 + [False] * 40
    check = [True] * 36 + [False] * 4 + [False] * 32 + [True] * 8
    labelled = _run(api, tid, check)
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    labels = [
        {"target": {"run": labelled, "row": i}, "name": "helpful", "value": x}
        for i, x in enumerate(human)
    ]
    assert api.client.post("/v1/labels", headers=h, json={"labels": labels}).status_code == 201
    run = _production(api, tid, check_id)
    # not asked for, and no requirement: the summary is as it was
    (plain,) = api.client.get(f"/v1/runs/{run}", headers=h).json()["summary"]
    assert plain["pass_rate"] == pytest.approx(0.6)
    assert plain["corrected_pass_rate"] is None
    # asked for: beside the measured rate, as /corrected-pass-rates gives it
    (asked,) = api.client.get(f"/v1/runs/{run}", headers=h, params={"labels": "helpful"}).json()[
        "summary"
    ]
    expected = rogan_gladen(0.6, 100, 36 / 40, 32 / 40, 40, 40)
    assert expected.value is not None and expected.ci is not None
    fixed = asked["corrected_pass_rate"]
    assert fixed["labels"] == "helpful"
    assert fixed["value"] == pytest.approx(0.4 / 0.7, abs=1e-6)
    assert fixed["ci"] == pytest.approx(list(expected.ci), abs=1e-6)
    assert fixed["tpr"]["value"] == pytest.approx(0.9)
    via_route = api.client.get(
        f"/v1/runs/{run}/corrected-pass-rates", headers=h, params={"labels": "helpful"}
    ).json()
    assert via_route["checks"][0]["corrected"]["value"] == pytest.approx(fixed["value"])
    # a label name nobody declared: no value, and the reason
    (none,) = api.client.get(f"/v1/runs/{run}", headers=h, params={"labels": "nope"}).json()[
        "summary"
    ]
    assert none["corrected_pass_rate"]["value"] is None
    assert "not declared" in none["corrected_pass_rate"]["reason"]
    # the version requires an agreement on helpful: a finished run carries it unasked
    put = api.client.put(
        "/v1/checks/is_helpful/required-agreement",
        headers=h,
        json={"requirement": "helpful:tpr=0.5"},
    )
    assert put.status_code == 200, put.text
    (unasked,) = api.client.get(f"/v1/runs/{run}", headers=h).json()["summary"]
    assert unasked["corrected_pass_rate"]["value"] == pytest.approx(0.4 / 0.7, abs=1e-6)
    # and the dashboard's run page shows it beside the measured rate
    _sign_in(api, h)
    page = api.client.get(f"/ui/runs/{run}")
    assert page.status_code == 200
    assert "<th>Corrected</th>" in page.text
    assert f"{100 * 0.4 / 0.7:.1f}% [{100 * expected.ci[0]:.1f}, {100 * expected.ci[1]:.1f}]" in (
        page.text
    )
    # another tenant: the run is 404, labels or not
    other, _ = _tenant(api)
    assert (
        api.client.get(f"/v1/runs/{run}", headers=other, params={"labels": "helpful"}).status_code
        == 404
    )


def test_a_run_is_refused_while_a_check_misses_its_required_agreement(api: Api) -> None:
    h, tid = _tenant(api)
    _push(api, h, "is_helpful")
    _push(api, h, "plain")
    _label(api, h, tid, good=False)
    body = {"checks": ["is_helpful"], "rows": [{"model_output": "x"}]}
    # no requirement yet: the run starts
    assert api.client.post("/v1/runs", headers=h, json=body).status_code == 202
    put = api.client.put(
        "/v1/checks/is_helpful/required-agreement",
        headers=h,
        json={"requirement": "helpful:tpr=0.8,tnr=0.8"},
    )
    assert put.status_code == 200, put.text
    for checks in (["is_helpful"], ["plain", "is_helpful@1"], [{"name": "is_helpful"}]):
        refused = api.client.post("/v1/runs", headers=h, json={**body, "checks": checks})
        assert refused.status_code == 409, (checks, refused.text)
        detail = refused.json()["detail"]
        assert "is_helpful@1 against 'helpful': tpr" in detail
        assert "its lower bound is below 0.8" in detail
        assert "(required of is_helpful@1: below)" in detail
        assert "ignore_required_agreement=true" in detail
    # a run of other checks, or one that opts out, is not refused
    assert (
        api.client.post("/v1/runs", headers=h, json={**body, "checks": ["plain"]}).status_code
        == 202
    )
    opted = api.client.post(
        "/v1/runs", headers=h, json=body, params={"ignore_required_agreement": "true"}
    )
    assert opted.status_code == 202, opted.text
    # the NDJSON upload is held to it too
    upload = api.client.post(
        "/v1/runs/upload",
        headers=h,
        data={"checks": "is_helpful"},
        files={"file": ("rows.jsonl", b'{"model_output": "x"}\n', "application/x-ndjson")},
    )
    assert upload.status_code == 409 and "required of is_helpful@1" in upload.json()["detail"]
    # too few labels is refused with its verdict
    api.client.delete("/v1/labels", headers=h, params={"name": "helpful"})
    _label(api, h, tid, good=True, per_class=5)
    few = api.client.post("/v1/runs", headers=h, json=body)
    assert few.status_code == 409 and "(required of is_helpful@1: too few labels)" in few.text
    # labels the check agrees with arrive: re-checked, the run starts
    api.client.delete("/v1/labels", headers=h, params={"name": "helpful"})
    _label(api, h, tid, good=True)
    assert api.client.post("/v1/runs", headers=h, json=body).status_code == 202
    # another tenant's check of the same name carries none of it
    other, _ = _tenant(api)
    _push(api, other, "is_helpful")
    assert api.client.post("/v1/runs", headers=other, json=body).status_code == 202
