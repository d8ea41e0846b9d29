"""The annotation queue over a rule's spans (SQLite and PostgreSQL): one span at a time
with the check's score hidden until labelled, the labels stored on the spans, the
agreement page over the rule; another tenant's rule is a 404 page."""

from __future__ import annotations

import re

from tests.api.conftest import Api
from tests.api.test_labels_dashboard import _csrf, _sign_in
from tests.api.test_span_labels import _spans, _tenant
from tests.online.score_rows import add_scores, make_rule

N = 6


def test_queue_labels_a_rules_spans_then_the_agreement_page_shows_them(api: Api) -> None:
    h, tid = _tenant(api)
    keys = _spans(api, h, N)
    scored = add_scores(
        api.store.engine, tid, make_rule(api.store.engine, tid, name="tone"), N, spans=keys
    )
    check = {(r["trace_id"], r["span_id"]): r["passed"] for r in scored}  # None: erred
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    _sign_in(api, h)
    params = {"rule": "tone", "check": "is_helpful@3", "labels": "helpful", "annotator": "ann"}
    page = api.client.get("/ui/queue", params=params)
    assert page.status_code == 200, page.text
    assert "spans of rule" in page.text and "score is shown once you have labelled" in page.text
    assert "said" not in page.text  # no verdict on show before a label
    given: dict[tuple[str, str], bool] = {}
    for _ in range(N):
        span_id = re.search(r'data-row="([0-9a-f]{16})"', page.text).group(1)  # type: ignore[union-attr]
        trace_id = re.search(r'name="trace_id" value="([0-9a-f]{32})"', page.text).group(1)  # type: ignore[union-attr]
        value = keys.index((trace_id, span_id)) % 3 != 0  # people fail spans 0 and 3
        given[(trace_id, span_id)] = value
        page = api.client.post(
            "/ui/queue",
            data={
                **params,
                "strategy": "random",
                "trace_id": trace_id,
                "span_id": span_id,
                "value": "true" if value else "false",
                "csrf": _csrf(page.text),
            },
        )
        assert page.status_code == 200, page.text  # followed the redirect to the next span
        assert f"Span {span_id}: you said" in page.text  # the score revealed once labelled
    assert "Nothing left for ann to label here" in page.text
    assert 'data-annotator="ann">ann: 6' in page.text
    stored = api.client.get("/v1/labels", headers=h, params={"kind": "span"}).json()["labels"]
    assert {(x["target"]["trace_id"], x["target"]["span_id"]): x["value"] for x in stored} == given
    report = api.client.get(
        "/ui/agreement", params={"check": "is_helpful@3", "labels": "helpful", "rule": "tone"}
    )
    assert report.status_code == 200
    counted = [(given[k], check[k]) for k in keys if check[k] is not None]
    want = {
        (0, 0): sum(1 for h_, c in counted if not h_ and not c),
        (0, 1): sum(1 for h_, c in counted if not h_ and c),
        (1, 0): sum(1 for h_, c in counted if h_ and not c),
        (1, 1): sum(1 for h_, c in counted if h_ and c),
    }
    cells = re.findall(r'data-cell="(\d),(\d)">(\d+)<', report.text)
    assert {(int(i), int(j)): int(v) for i, j, v in cells} == want


def test_another_tenants_rule_queue_is_a_404_page(api: Api) -> None:
    _, tid = _tenant(api)
    other, _ = _tenant(api)
    make_rule(api.store.engine, tid, name="tone")
    api.client.put("/v1/label-names/helpful", headers=other, json={"type": "bool"})
    _sign_in(api, other)
    params = {"rule": "tone", "check": "is_helpful@3", "labels": "helpful"}
    assert api.client.get("/ui/queue", params=params).status_code == 404
