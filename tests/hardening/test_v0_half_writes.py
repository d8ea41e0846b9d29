"""/v0 validates everything before writing anything."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api


def _key(api: Api) -> tuple[dict[str, str], dict[str, str]]:
    bearer = api.tenant()
    return {"api-key": bearer["Authorization"].removeprefix("Bearer ")}, bearer


def _setup(api: Api, h: dict[str, str]) -> dict[str, Any]:
    model = api.client.post("/v0/register_model", headers=h, json={"name": "m"}).json()
    scenario = api.client.post(
        "/v0/scenario_sets",
        headers=h,
        json={"name": "s", "seed_data": [{"input": "q", "result": "r"}]},
    ).json()
    (point,) = api.client.get(
        f"/v0/scenario_data_points/{scenario['scenario_id']}", headers=h
    ).json()
    return {
        "mut_id": model["id"],
        "scenario_id": scenario["scenario_id"],
        "checks": ["is_json"],
        "model_results": {"model_data": {point["id"]: {"actual": "{}"}}},
    }


@pytest.mark.parametrize(
    "change",
    [{"name": "n" * 401}, {"type": "t" * 41}, {"name": "a\u0000b"}],
    ids=["long-name", "long-type", "nul-name"],
)
def test_a_refused_test_run_leaves_no_run_behind(api: Api, change: dict[str, str]) -> None:
    h, bearer = _key(api)
    body = _setup(api, h)
    reply = api.client.post("/v0/test_run", headers=h, json={**body, **change})
    assert reply.status_code == 422, reply.text
    assert api.client.get("/v1/runs", headers=bearer).json()["runs"] == []  # no orphan run
    ok = api.client.post("/v0/test_run", headers=h, json=body)
    assert ok.status_code == 201, ok.text  # and the valid one still goes through


def test_an_upload_with_a_lone_surrogate_or_nul_stores_nothing(api: Api) -> None:
    h, _ = _key(api)
    before = api.client.get("/v0/scenario_sets", headers=h)
    for line in (b'{"input": "\\ud800", "result": "r"}\n', b'{"input": "a\\u0000", "result": 1}\n'):
        reply = api.client.post(
            "/v0/scenario_sets_upload",
            headers=h,
            data={"name": "bad"},
            files={"file": ("rows.jsonl", b'{"input": "ok", "result": "r"}\n' + line)},
        )
        assert reply.status_code == 422, reply.text
        assert "line 2" in reply.json()["detail"]
    if before.status_code == 200:  # the listing route, where the SDK has one
        assert api.client.get("/v0/scenario_sets", headers=h).json() == before.json()
    sets = api.store.engine.connect().exec_driver_sql(
        "SELECT COUNT(*) FROM okareo_scenario_sets WHERE name = 'bad'"
    )
    assert sets.scalar() == 0


def test_deep_nesting_is_a_422_not_a_500(api: Api) -> None:
    h, _ = _key(api)
    deep = b'{"input": ' + b"[" * 5000 + b"]" * 5000 + b', "result": 1}\n'
    reply = api.client.post(
        "/v0/scenario_sets_upload",
        headers=h,
        data={"name": "deep"},
        files={"file": ("rows.jsonl", deep)},
    )
    assert reply.status_code == 422, reply.text
    body = b'{"name": "s", "seed_data": [{"input": ' + b"[" * 5000 + b"]" * 5000 + b"}]}"
    reply = api.client.post(
        "/v0/scenario_sets",
        headers={**h, "content-type": "application/json"},
        content=body,
    )
    assert reply.status_code == 422, reply.text
    assert "nested too deep" in reply.json()["detail"]
