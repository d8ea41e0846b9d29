"""Where people look, a check version's required agreement (SQLite and PostgreSQL): flagged
in ``GET /v1/checks`` and on the dashboard's check list while the labels do not meet it,
re-checked as labels arrive."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.api.test_labels import _run, _tenant
from tests.api.test_labels_dashboard import _sign_in

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
