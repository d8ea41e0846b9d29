"""The dashboard's annotation queue and agreement page (SQLite and PostgreSQL): one item at
a time with the score hidden until labelled, labels stored with the annotator, the
agreement page's confusion matrix, another tenant's run is 404."""

from __future__ import annotations

import re

from tests.api.conftest import Api
from tests.api.test_labels import _run, _tenant


def _sign_in(api: Api, headers: dict[str, str]) -> None:
    key = headers["Authorization"].removeprefix("Bearer ")
    reply = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert reply.status_code == 303


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found
    return found.group(1)


def test_queue_labels_rows_then_agreement_page_shows_them(api: Api) -> None:
    h, tid = _tenant(api)
    scores = [True, False, True, True, False, False]
    run = _run(api, tid, scores)
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    _sign_in(api, h)
    params = {"run": run, "check": "is_helpful@1", "labels": "helpful", "annotator": "ann"}
    page = api.client.get("/ui/queue", params=params)
    assert page.status_code == 200
    assert "score is shown once you have labelled" in page.text
    row = int(re.search(r'data-row="(\d+)"', page.text).group(1))  # type: ignore[union-attr]
    # the score of the row on show is not on the page
    assert 'name="value" value="true"' in page.text and "is_helpful@1</code> said" not in page.text
    given = {}
    for _ in range(len(scores)):
        row = int(re.search(r'data-row="(\d+)"', page.text).group(1))  # type: ignore[union-attr]
        value = "true" if row % 2 == 0 else "false"  # people pass even rows
        given[row] = value == "true"
        page = api.client.post(
            "/ui/queue",
            data={
                **params,
                "strategy": "random",
                "row": str(row),
                "value": value,
                "csrf": _csrf(page.text),
            },
        )
        assert page.status_code == 200  # followed the redirect to the next item
        assert f"Row {row}: you said" in page.text  # the score revealed once labelled
    assert "Nothing left for ann to label here" in page.text
    assert 'data-annotator="ann">ann: 6' in page.text
    stored = api.client.get("/v1/labels", headers=h, params={"run": run}).json()["labels"]
    assert {x["target"]["row"]: x["value"] for x in stored} == given
    assert {x["annotator"] for x in stored} == {"ann"}
    report = api.client.get(
        "/ui/agreement", params={"check": "is_helpful@1", "labels": "helpful", "run": run}
    )
    assert report.status_code == 200
    tn = sum(1 for r, h_ in given.items() if not h_ and not scores[r])
    fp = sum(1 for r, h_ in given.items() if not h_ and scores[r])
    fn = sum(1 for r, h_ in given.items() if h_ and not scores[r])
    tp = sum(1 for r, h_ in given.items() if h_ and scores[r])
    cells = re.findall(r'data-cell="(\d),(\d)">(\d+)<', report.text)
    assert {(int(i), int(j)): int(v) for i, j, v in cells} == {
        (0, 0): tn,
        (0, 1): fp,
        (1, 0): fn,
        (1, 1): tp,
    }
    assert "too few labels" in report.text
    assert 'id="corrected">Pass rate on run' in report.text


def test_queue_refuses_a_missing_csrf_and_another_tenants_run(api: Api) -> None:
    h, tid = _tenant(api)
    other, _ = _tenant(api)
    run = _run(api, tid, [True, False])
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    _sign_in(api, h)
    params = {"run": run, "check": "is_helpful@1", "labels": "helpful"}
    refused = api.client.post(
        "/ui/queue", data={**params, "row": "0", "value": "true", "csrf": "x"}
    )
    assert refused.status_code == 403
    assert api.client.get("/v1/labels", headers=h).json()["labels"] == []
    api.client.cookies.clear()
    _sign_in(api, other)
    assert api.client.get("/ui/queue", params=params).status_code == 404
    agreement = api.client.get(
        "/ui/agreement", params={"check": "is_helpful@1", "labels": "helpful"}
    )
    assert agreement.status_code == 404
