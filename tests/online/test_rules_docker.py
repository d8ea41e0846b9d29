"""Online scoring with the tenant's own code checks in real containers: a rule pins a
check version, and a new version (re-pinned by changing the rule) scores as a new series,
live and in a backfill. SQLite and PostgreSQL."""

from __future__ import annotations

from tests.api.conftest import Api
from tests.online.otlp_requests import new_ids, span
from tests.online.test_rules import WINDOW, send, wait_backfill, wait_scored

V1 = "def evaluate(model_output: str) -> bool:\n    return 'Paris' in model_output\n"
V2 = "def evaluate(model_output: str) -> float:\n    return len(model_output) / 100\n"


def test_a_changed_check_version_scores_as_a_new_series(docker_api: Api) -> None:
    api = docker_api
    h = api.tenant()
    api.push(h, "mentions_paris", V1)
    made = api.client.post(
        "/v1/rules", headers=h, json={"name": "paris", "checks": ["mentions_paris"]}
    )
    assert made.status_code == 201, made.text
    first, first_span = new_ids()
    send(api, h, span(first, first_span))
    (one,) = wait_scored(api, h, first, timeout=180)
    assert (one["check"], one["check_version"], one["status"]) == ("mentions_paris", 1, "scored")
    assert (one["score"], one["passed"]) == (1.0, True)
    # version 2 of the check: the rule keeps version 1 until it is changed to pin it
    api.push(h, "mentions_paris", V2)
    changed = api.client.patch("/v1/rules/paris", headers=h, json={"checks": ["mentions_paris"]})
    assert changed.json()["version"] == 2
    assert changed.json()["checks"][0]["version"] == 2
    second, second_span = new_ids()
    send(api, h, span(second, second_span, start=WINDOW_START + 1))
    (two,) = wait_scored(api, h, second, timeout=180)
    assert (two["rule_version"], two["check_version"]) == (2, 2)
    assert two["score"] == len("Paris is the capital of France.") / 100
    assert two["passed"] is None  # a number with no pass flag has no verdict
    # a backfill with the new version scores the first span again, as version 2
    backfill = api.client.post("/v1/rules/paris/backfill", headers=h, json=WINDOW).json()
    done = wait_backfill(api, h, "paris", backfill["id"], timeout=180)
    assert done["scores"] == {"scored": 1} and done["progress"]["already"] == 1
    series = api.client.get(
        "/v1/rules/paris/series", headers=h, params={"bucket": "1d", **WINDOW}
    ).json()["series"]
    assert [
        (s["check"], s["check_version"], sum(p["count"] for p in s["points"])) for s in series
    ] == [
        ("mentions_paris", 1, 1),
        ("mentions_paris", 2, 2),
    ]
    (v1,) = series[0]["points"]
    assert (v1["mean"], v1["pass_rate"]) == (1.0, 1.0)


WINDOW_START = 1_795_677_253_708_726_650
