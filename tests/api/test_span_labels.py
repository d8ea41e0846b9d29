"""Human labels on received spans (SQLite and PostgreSQL): add, list by trace and span,
delete; another tenant's span is a 404 and its labels are never listed; a check's
agreement over the spans a rule scored, against a confusion matrix counted by hand; a
rule's pass rate corrected for that agreement (API and Live page); migration 0016 down and
up."""

from __future__ import annotations

import secrets
from typing import Any

from engine.tenancy import auth
from tests.api.conftest import Api
from tests.api.test_labels import _run
from tests.online.otlp_requests import PROTOBUF, new_ids, span, traces
from tests.online.score_rows import add_scores, make_rule

# add_scores scores span i: an error when i % 5 == 0, else passed when i is odd.
# The people label span i helpful unless i % 3 == 0. By hand, over the 16 spans scored
# (1-4, 6-9, 11-14, 16-19):
#   people fail 3, 6, 9, 12, 18: the check fails 6, 12, 18 and passes 3, 9  -> [3, 2]
#   people pass 1, 2, 4, 7, 8, 11, 13, 14, 16, 17, 19: the check fails 2, 4, 8, 14, 16
#   and passes 1, 7, 11, 13, 17, 19                                           -> [5, 6]
N_SPANS = 20
HAND_MATRIX = [[3, 2], [5, 6]]


def _tenant(api: Api) -> tuple[dict[str, str], str]:
    new = auth.create_tenant(api.store, f"t-{secrets.token_hex(4)}")
    return {"Authorization": f"Bearer {new.secret}"}, new.tenant.id


def _spans(api: Api, h: dict[str, str], n: int) -> list[tuple[str, str]]:
    """``n`` LLM spans received over OTLP, one trace each; their (trace id, span id)."""
    ids = [new_ids() for _ in range(n)]
    sent = api.client.post(
        "/v1/traces",
        content=traces(*(span(t, s) for t, s in ids)).SerializeToString(),
        headers={**h, **PROTOBUF},
    )
    assert sent.status_code == 200, sent.text
    return [(t.hex(), s.hex()) for t, s in ids]


def _span_label(key: tuple[str, str], value: Any, annotator: str = "ana") -> dict[str, Any]:
    return {
        "target": {"trace_id": key[0], "span_id": key[1]},
        "name": "helpful",
        "value": value,
        "annotator": annotator,
    }


def _labelled_rule(api: Api, h: dict[str, str], tid: str, name: str) -> list[tuple[str, str]]:
    """A rule that scored N_SPANS spans with is_helpful@3, every one labelled by a person."""
    keys = _spans(api, h, N_SPANS)
    rule = make_rule(api.store.engine, tid, name=name)
    add_scores(api.store.engine, tid, rule, N_SPANS, spans=keys)
    assert api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"}).is_success
    labels = [_span_label(k, i % 3 != 0) for i, k in enumerate(keys)]
    posted = api.client.post("/v1/labels", headers=h, json={"labels": labels})
    assert posted.status_code == 201, posted.text
    return keys


def test_labels_on_spans_are_added_listed_and_deleted(api: Api) -> None:
    h, _ = _tenant(api)
    keys = _spans(api, h, 2)
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    upper = (keys[0][0].upper(), keys[0][1].upper())  # ids are hex in any case
    body = {"labels": [_span_label(upper, "yes"), _span_label(keys[0], False, "bob")]}
    body["labels"].append(_span_label(keys[1], True))
    r = api.client.post("/v1/labels", headers=h, json=body)
    assert r.status_code == 201, r.text
    stored = r.json()["labels"]
    assert stored[0]["target"] == {"trace_id": keys[0][0], "span_id": keys[0][1]}
    assert [x["value"] for x in stored] == [True, False, True]
    by_trace = api.client.get("/v1/labels", headers=h, params={"trace_id": keys[0][0]}).json()
    assert sorted((x["annotator"], x["value"]) for x in by_trace["labels"]) == [
        ("ana", True),
        ("bob", False),
    ]
    by_span = api.client.get("/v1/labels", headers=h, params={"span_id": keys[1][1]}).json()
    assert [x["target"]["span_id"] for x in by_span["labels"]] == [keys[1][1]]
    assert (
        len(api.client.get("/v1/labels", headers=h, params={"kind": "span"}).json()["labels"]) == 3
    )
    assert api.client.get("/v1/labels", headers=h, params={"kind": "row"}).json()["labels"] == []
    one = api.client.delete(f"/v1/labels/{stored[2]['id']}", headers=h)
    assert one.json() == {"deleted": 1}
    gone = api.client.delete(
        "/v1/labels", headers=h, params={"name": "helpful", "trace_id": keys[0][0]}
    )
    assert gone.json() == {"deleted": 2}
    assert api.client.get("/v1/labels", headers=h).json()["labels"] == []


def test_a_span_label_is_checked_like_a_row_label(api: Api) -> None:
    h, _ = _tenant(api)
    keys = _spans(api, h, 1)
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    r = api.client.post("/v1/labels", headers=h, json={"labels": [_span_label(keys[0], "maybe")]})
    assert r.status_code == 422 and "labels[0]" in r.text and "'maybe'" in r.text
    short = {"trace_id": keys[0][0], "span_id": keys[0][1][:8]}
    r = api.client.post(
        "/v1/labels",
        headers=h,
        json={"labels": [{"target": short, "name": "helpful", "value": True}]},
    )
    assert r.status_code == 422
    unknown = (secrets.token_hex(16), secrets.token_hex(8))
    r = api.client.post("/v1/labels", headers=h, json={"labels": [_span_label(unknown, True)]})
    assert r.status_code == 404 and "GET /v1/spans" in r.text
    assert api.client.get("/v1/labels", headers=h).json()["labels"] == []


def test_another_tenants_span_is_404_and_its_labels_never_listed(api: Api) -> None:
    owner, owner_id = _tenant(api)
    other, _ = _tenant(api)
    keys = _labelled_rule(api, owner, owner_id, "tone")
    api.client.put("/v1/label-names/helpful", headers=other, json={"type": "bool"})
    r = api.client.post("/v1/labels", headers=other, json={"labels": [_span_label(keys[0], True)]})
    assert r.status_code == 404, r.text
    listed = api.client.get("/v1/labels", headers=other, params={"trace_id": keys[0][0]})
    assert listed.json()["labels"] == []
    assert api.client.get("/v1/labels", headers=other, params={"kind": "span"}).json() == {
        "labels": []
    }
    report = api.client.get(
        "/v1/agreement",
        headers=other,
        params={"check": "is_helpful@3", "labels": "helpful", "rule": "tone"},
    )
    assert report.status_code == 404
    rule = api.client.get("/v1/rules/tone", headers=other, params={"labels": "helpful"})
    assert rule.status_code == 404
    # the owner's labels are untouched
    mine = api.client.get("/v1/labels", headers=owner, params={"kind": "span"}).json()["labels"]
    assert len(mine) == N_SPANS


def test_agreement_over_a_rule_matches_the_hand_counted_matrix(api: Api) -> None:
    h, tid = _tenant(api)
    keys = _labelled_rule(api, h, tid, "tone")
    # another rule scores other labelled spans with the same check: not in tone's report
    more = _spans(api, h, 4)
    add_scores(api.store.engine, tid, make_rule(api.store.engine, tid, name="other"), 4, spans=more)
    api.client.post("/v1/labels", headers=h, json={"labels": [_span_label(k, True) for k in more]})
    params: dict[str, Any] = {
        "check": "is_helpful@3",
        "labels": "helpful",
        "rule": "tone",
        "min_per_class": 3,
    }
    r = api.client.get("/v1/agreement", headers=h, params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["rule"] == "tone" and body["run"] is None and body["check"] == "is_helpful@3"
    assert body["n"] == 16
    assert body["confusion"]["matrix"] == HAND_MATRIX
    assert abs(body["tpr"]["value"] - 6 / 11) < 1e-6
    assert abs(body["tnr"]["value"] - 3 / 5) < 1e-6
    # a disagreement links to the span on its trace page: span 3, passed, people fail it
    links = {d["link"] for d in body["disagreements"]}
    assert f"/ui/traces/{keys[3][0]}#span-{keys[3][1]}" in links
    # without a rule (and no run): every labelled target the check scored, both rules
    anywhere: dict[str, Any] = {k: v for k, v in params.items() if k != "rule"}
    everything = api.client.get("/v1/agreement", headers=h, params=anywhere).json()
    # the other rule's spans 1-3 were scored (span 0 erred): people pass all three, the
    # check passes 1 and 3
    assert everything["n"] == 16 + 3
    assert everything["confusion"]["matrix"] == [[3, 2], [6, 8]]
    # a run and a rule together are refused, naming why
    both = api.client.get("/v1/agreement", headers=h, params={**params, "run": "run_x"})
    assert both.status_code == 422 and "not both" in both.text


def test_without_run_or_rule_the_report_takes_rows_and_spans(api: Api) -> None:
    h, tid = _tenant(api)
    _labelled_rule(api, h, tid, "tone")
    run = _run(api, tid, [True, False, True, None])  # row 3 erred
    labels = [
        {"target": {"run": run, "row": i}, "name": "helpful", "value": v, "annotator": "ana"}
        for i, v in enumerate([True, True, False, True])
    ]
    assert api.client.post("/v1/labels", headers=h, json={"labels": labels}).status_code == 201
    base: dict[str, Any] = {"check": "is_helpful", "labels": "helpful", "min_per_class": 3}
    both = api.client.get("/v1/agreement", headers=h, params=base).json()
    # spans by hand [[3, 2], [5, 6]]; rows: people pass 0 (check pass), 1 (check fail),
    # fail 2 (check pass); row 3 erred and is left out
    assert "confusion" in both, both
    assert both["confusion"]["matrix"] == [[3, 3], [6, 7]]
    rows_only = api.client.get("/v1/agreement", headers=h, params={**base, "run": run}).json()
    assert rows_only["confusion"]["matrix"] == [[0, 1], [1, 1]]


def test_a_rules_pass_rate_is_corrected_for_its_checks_agreement(api: Api) -> None:
    h, tid = _tenant(api)
    _labelled_rule(api, h, tid, "tone")
    plain = api.client.get("/v1/rules/tone", headers=h).json()
    assert plain["corrected_pass_rates"] is None
    r = api.client.get("/v1/rules/tone", headers=h, params={"labels": "helpful"})
    assert r.status_code == 200, r.text
    (check,) = r.json()["corrected_pass_rates"]["checks"]
    assert check["check"] == "is_helpful@3" and check["scored"] == 16
    assert check["measured"] == 0.5
    # Rogan-Gladen by hand: (p + TNR - 1) / (TPR + TNR - 1) = 0.1 / (6/11 + 3/5 - 1) = 0.6875
    assert abs(check["corrected"]["value"] - 0.6875) < 1e-5  # TPR, TNR rounded to 6 places
    lo, hi = check["corrected"]["ci"]
    assert lo <= 0.6875 <= hi
    assert check["verdict"] == "too few labels"
    # the Live page shows both, only when asked
    key = h["Authorization"].removeprefix("Bearer ")
    assert (
        api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False).status_code
        == 303
    )
    page = api.client.get("/ui/rules/tone", params={"labels": "helpful"})
    assert page.status_code == 200
    row = page.text[page.text.index('data-check="is_helpful@3"') :]
    assert 'data-field="measured">0.5<' in row
    assert 'data-field="corrected">0.688 [' in row or 'data-field="corrected">0.6875 [' in row
    assert 'aria-label="corrected pass rates"' not in api.client.get("/ui/rules/tone").text
    unknown = api.client.get("/ui/rules/tone", params={"labels": "nope"})
    assert "is not declared: PUT /v1/label-names/nope" in unknown.text


def test_migration_0016_goes_down_and_up(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, inspect, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import LabelRow

    h, tid = _tenant(api)
    keys = _spans(api, h, 1)
    run = _run(api, tid, [True])
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    row_label = {"target": {"run": run, "row": 0}, "name": "helpful", "value": True}
    posted = api.client.post(
        "/v1/labels", headers=h, json={"labels": [row_label, _span_label(keys[0], False)]}
    )
    assert posted.status_code == 201, posted.text
    db = api.store.engine
    command.downgrade(alembic_config(db), "0015")
    columns = {c["name"] for c in inspect(db).get_columns("labels")}
    assert "trace_id" not in columns and "span_id" not in columns
    upgrade(db)
    with db.connect() as conn:
        # the row label is kept; the span label had no place in the older table
        assert conn.scalar(select(func.count()).select_from(LabelRow)) == 1
    again = api.client.post("/v1/labels", headers=h, json={"labels": [_span_label(keys[0], True)]})
    assert again.status_code == 201, again.text


def test_the_docs_name_the_parameters_the_api_takes(api: Api) -> None:
    from pathlib import Path

    schema = api.client.get("/openapi.json").json()["paths"]

    def params(path: str) -> set[str]:
        return {p["name"] for p in schema[path]["get"].get("parameters", [])}

    page = (Path(__file__).parents[2] / "docs" / "calibration.md").read_text()
    for path, names in (
        ("/v1/labels", ("trace_id", "span_id", "kind")),
        ("/v1/agreement", ("rule",)),
        ("/v1/rules/{name}", ("labels",)),
    ):
        assert set(names) <= params(path), path
    for text in ("&trace_id=&span_id=&kind=", "&rule=RULE]", "--rule RULE", "?labels=helpful"):
        assert text in page, text
    assert "GET /v1/rules/{name}?labels=helpful" in page
