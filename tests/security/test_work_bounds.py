"""Work is bounded by rows x check references, not by rows alone."""

from __future__ import annotations

from tests.api.conftest import Api, AppFactory

ROW = {"model_output": "x", "scenario_result": "x"}


def test_a_run_counts_evaluations_against_the_quota(api: Api) -> None:
    headers = api.tenant(rows_per_run=10, evaluations_per_run=100)
    rows = [ROW] * 10
    over = api.client.post(
        "/v1/runs", headers=headers, json={"checks": ["exact_match"] * 20, "rows": rows}
    )
    assert over.status_code == 429, over.text
    assert "200 evaluations" in over.json()["detail"]
    assert "evaluations per run" in over.json()["detail"]
    assert over.headers["Retry-After"]
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []
    within = api.client.post(
        "/v1/runs", headers=headers, json={"checks": ["exact_match"] * 10, "rows": rows}
    )
    assert within.status_code == 202, within.text


def test_check_references_per_request_are_capped_before_resolving(api: Api) -> None:
    headers = api.tenant(rows_per_run=10)
    # 20,000 references to checks that do not exist: refused for their number, not looked up
    refs = [f"missing_{i}" for i in range(20_000)]
    for path in ("/v1/runs", "/v1/score"):
        reply = api.client.post(path, headers=headers, json={"checks": refs, "rows": [ROW] * 10})
        assert reply.status_code == 422, reply.text
        detail = reply.json()["detail"]
        assert "20000 check references" in detail and "SCOREBOX_MAX_CHECKS_PER_REQUEST" in detail
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []


def test_score_caps_rows_times_checks(make_api: AppFactory) -> None:
    api = make_api(score_max_evaluations=20)
    headers = api.tenant()
    over = api.client.post(
        "/v1/score", headers=headers, json={"checks": ["exact_match"] * 5, "rows": [ROW] * 5}
    )
    assert over.status_code == 422, over.text
    assert "25 evaluations" in over.json()["detail"]
    assert "POST /v1/runs" in over.json()["detail"]
    within = api.client.post(
        "/v1/score", headers=headers, json={"checks": ["exact_match"] * 4, "rows": [ROW] * 5}
    )
    assert within.status_code == 200, within.text


def test_score_is_also_bound_by_the_tenant_quota(api: Api) -> None:
    headers = api.tenant(evaluations_per_run=6)
    reply = api.client.post(
        "/v1/score", headers=headers, json={"checks": ["exact_match"] * 2, "rows": [ROW] * 4}
    )
    assert reply.status_code == 422, reply.text
    assert "8 evaluations" in reply.json()["detail"]
