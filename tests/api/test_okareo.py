"""The /v0 Okareo-compatible API through the app factory (SQLite and PostgreSQL).

Status codes are the ones the okareo SDK's generated client accepts (one per
route); errors are JSON with ``detail``. The real SDK drives a live server in
``tests/okareo``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.api.conftest import Api

CODE = (
    "from okareo.checks import CodeBasedCheck\n\n"
    "class Check(CodeBasedCheck):\n"
    "    @staticmethod\n"
    "    def evaluate(model_output: str) -> bool:\n"
    "        return len(model_output) > 3\n"
)


def _key(api: Api) -> dict[str, str]:
    """A new tenant's key as the SDK sends it."""
    bearer = api.tenant()["Authorization"]
    return {"api-key": bearer.removeprefix("Bearer ")}


def _save(api: Api, h: dict[str, str], name: str, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "description": "d", "check_config": {"code_contents": CODE}, **fields}
    reply = api.client.post("/v0/check_create_or_update", headers=h, json=body)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def test_projects_with_api_key_header(api: Api) -> None:
    h = _key(api)
    reply = api.client.get("/v0/projects", headers=h)
    assert reply.status_code == 201, reply.text
    (project,) = reply.json()
    assert project["name"] == "Global" and project["onboarding_status"]
    uuid.UUID(project["id"])
    assert api.client.get("/v0/projects", headers=h).json() == [project]  # made once
    one = api.client.get(f"/v0/projects/{project['id']}", headers=h)
    assert one.status_code == 201 and one.json()["id"] == project["id"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"api-key": "sbx_wrong"}, {"Authorization": "Bearer sbx_wrong"}],
    ids=["missing", "wrong api-key", "wrong bearer"],
)
def test_bad_key_is_401_json_detail(api: Api, headers: dict[str, str]) -> None:
    reply = api.client.get("/v0/projects", headers=headers)
    assert reply.status_code == 401
    assert "API key" in reply.json()["detail"]


def test_bearer_works_beside_api_key(api: Api) -> None:
    h = api.tenant()
    assert api.client.get("/v0/checks", headers=h).status_code == 201


def test_versioning_as_okareo_asserts(api: Api) -> None:
    h = _key(api)
    v1 = _save(api, h, "ver check")
    assert v1["version"] == 1 and v1["name"] == "ver check" and v1["is_predefined"] is False
    assert v1["check_config"] == {"code_contents": CODE} and v1["code_contents"] == CODE
    same = _save(api, h, "ver check")
    assert (same["id"], same["version"]) == (v1["id"], 1)
    described = _save(api, h, "ver check", description="another description")
    assert (described["id"], described["version"]) == (v1["id"], 1)
    v2 = _save(api, h, "ver check", check_config={"code_contents": CODE.replace("3", "4")})
    assert v2["version"] == 2 and v2["id"] != v1["id"]

    latest = api.client.get("/v0/checks", headers=h)
    assert latest.status_code == 201
    own = [c for c in latest.json() if not c["is_predefined"]]
    assert [(c["name"], c["version"], c["id"]) for c in own] == [("ver check", 2, v2["id"])]
    every = api.client.get("/v0/checks", headers=h, params={"all-versions": "true"}).json()
    assert sorted(c["version"] for c in every if c["name"] == "ver check") == [1, 2]
    builtins = [c for c in latest.json() if c["is_predefined"]]
    assert {"is_json", "levenshtein_distance"} <= {c["name"] for c in builtins}

    got = api.client.get(f"/v0/check/{v1['id']}", headers=h)
    assert got.status_code == 201 and got.json()["version"] == 1


def test_one_id_reachable_from_both_apis(api: Api) -> None:
    h = _key(api)
    v0 = _save(api, h, "shared")
    bearer = {"Authorization": f"Bearer {h['api-key']}"}
    v1 = api.client.get(f"/v1/checks/{v0['id']}", headers=bearer)
    assert v1.status_code == 200, v1.text
    assert (v1.json()["name"], v1.json()["version"]) == ("shared", 1)
    back = api.client.get(f"/v0/check/{v0['id']}", headers=h).json()
    assert back["id"] == v0["id"]
    by_v1_id = api.client.get(f"/v1/checks/{v1.json()['id']}", headers=bearer).json()
    assert by_v1_id["id"] == v1.json()["id"]


def test_model_check_and_its_types(api: Api) -> None:
    h = _key(api)
    config = {"prompt_template": "Is {model_output} polite?", "type": "pass_fail", "audio": False}
    saved = _save(api, h, "polite", check_config=config)
    assert saved["output_data_type"] == "bool"
    assert saved["check_config"]["prompt_template"] == "Is {model_output} polite?"
    analysis = {**config, "type": "analysis"}
    bad = api.client.post(
        "/v0/check_create_or_update",
        headers=h,
        json={"name": "free text", "check_config": analysis},
    )
    assert bad.status_code == 422
    assert "PASS_FAIL" in bad.json()["detail"]


def test_names_with_spaces_and_a_clear_422_otherwise(api: Api) -> None:
    h = _key(api)
    assert _save(api, h, "test_create_check abcde")["name"] == "test_create_check abcde"
    for name in ("a/b", " leading", "trailing ", "x@2", "new\nline"):
        reply = api.client.post(
            "/v0/check_create_or_update",
            headers=h,
            json={"name": name, "check_config": {"code_contents": CODE}},
        )
        assert reply.status_code == 422, name
        assert "letters, digits, spaces" in reply.json()["detail"]


def test_invalid_code_is_422_with_detail(api: Api) -> None:
    h = _key(api)
    reply = api.client.post(
        "/v0/check_create_or_update",
        headers=h,
        json={"name": "broken", "check_config": {"code_contents": "def evaluate(:\n"}},
    )
    assert reply.status_code == 422
    assert reply.json()["detail"]


def test_delete_archives_every_version_and_frees_the_name(api: Api) -> None:
    h = _key(api)
    v1 = _save(api, h, "gone")
    _save(api, h, "gone", check_config={"code_contents": CODE.replace("3", "5")})
    wrong = api.client.request(
        "DELETE", f"/v0/check/{v1['id']}", headers=h, data={"name": "not its name"}
    )
    assert wrong.status_code == 422
    reply = api.client.request("DELETE", f"/v0/check/{v1['id']}", headers=h, data={"name": "gone"})
    assert reply.status_code == 204 and reply.content == b""
    every = api.client.get("/v0/checks", headers=h, params={"all-versions": "true"}).json()
    assert [c for c in every if c["name"] == "gone"] == []
    # the deleted version stays readable by id; the name starts again at version 1
    kept = api.client.get(f"/v0/check/{v1['id']}", headers=h)
    assert kept.status_code == 201 and kept.json()["version"] == 1
    again = _save(api, h, "gone")
    assert again["id"] != v1["id"] and again["version"] == 1
    every = api.client.get("/v0/checks", headers=h, params={"all-versions": "true"}).json()
    assert [c["id"] for c in every if c["name"] == "gone"] == [again["id"]]
    again_delete = api.client.request(
        "DELETE", f"/v0/check/{v1['id']}", headers=h, data={"name": "gone"}
    )
    assert again_delete.status_code == 404  # deleting asks for a live version


def test_predefined_checks_have_a_creation_time(api: Api) -> None:
    h = _key(api)
    listed = api.client.get("/v0/checks", headers=h).json()
    predefined = [c for c in listed if c["is_predefined"]]
    assert predefined and all(c["time_created"] for c in predefined)
    bearer = {"Authorization": f"Bearer {h['api-key']}"}
    listing = api.client.get("/v1/checks", headers=bearer).json()["checks"]
    assert all(c["created_at"] for c in listing if c["builtin"])


def test_another_tenant_sees_none_of_it(api: Api) -> None:
    a, b = _key(api), _key(api)
    check = _save(api, a, "private")
    scenario = api.client.post(
        "/v0/scenario_sets",
        headers=a,
        json={"name": "s", "seed_data": [{"input": "q", "result": "r"}]},
    ).json()
    assert api.client.get(f"/v0/check/{check['id']}", headers=b).status_code == 404
    listed = api.client.get("/v0/checks", headers=b, params={"all-versions": "true"}).json()
    assert all(c["is_predefined"] for c in listed)
    points = api.client.get(f"/v0/scenario_data_points/{scenario['scenario_id']}", headers=b)
    assert points.status_code == 404 and points.json()["detail"]
    delete = api.client.request("DELETE", f"/v0/check/{check['id']}", headers=b, data={"name": "x"})
    assert delete.status_code == 404
    a_project = api.client.get("/v0/projects", headers=a).json()[0]["id"]
    assert api.client.get(f"/v0/projects/{a_project}", headers=b).status_code == 404


def test_models_and_scenario_sets(api: Api) -> None:
    h = _key(api)
    model = api.client.post(
        "/v0/register_model",
        headers=h,
        json={
            "name": "bot",
            "tags": ["x"],
            "models": {"custom": {"name": "bot", "type": "custom"}},
        },
    )
    assert model.status_code == 201, model.text
    again = api.client.post("/v0/register_model", headers=h, json={"name": "bot"}).json()
    assert again["id"] == model.json()["id"] and again["tags"] == ["x"]

    seed = [{"input": {"q": "France?"}, "result": "Paris"}, {"input": "Italy?", "result": "Rome"}]
    created = api.client.post(
        "/v0/scenario_sets", headers=h, json={"name": "caps", "seed_data": seed}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["scenario_count"] == 2 and body["type"] == "SEED"
    points = api.client.get(f"/v0/scenario_data_points/{body['scenario_id']}", headers=h)
    assert points.status_code == 200
    assert [(p["input"], p["result"]) for p in points.json()] == [
        ({"q": "France?"}, "Paris"),
        ("Italy?", "Rome"),
    ]
    empty = api.client.post("/v0/scenario_sets", headers=h, json={"name": "e", "seed_data": []})
    assert empty.status_code == 422

    jsonl = b'{"input": "a", "result": "A"}\n\n{"input": "b", "result": "B"}\n'
    uploaded = api.client.post(
        "/v0/scenario_sets_upload",
        headers=h,
        data={"name": "up"},
        files={"file": ("rows.jsonl", jsonl, "application/octet-stream")},
    )
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["scenario_count"] == 2
    broken = api.client.post(
        "/v0/scenario_sets_upload",
        headers=h,
        data={"name": "bad"},
        files={"file": ("rows.jsonl", b'{"input": 1}\nnot json\n', "application/octet-stream")},
    )
    assert broken.status_code == 422 and "line 2" in broken.json()["detail"]


def test_test_run_refusals_are_422_or_404(api: Api) -> None:
    h = _key(api)
    model = api.client.post("/v0/register_model", headers=h, json={"name": "m"}).json()
    scenario = api.client.post(
        "/v0/scenario_sets",
        headers=h,
        json={"name": "s", "seed_data": [{"input": "q", "result": "r"}]},
    ).json()
    body = {"mut_id": model["id"], "scenario_id": scenario["scenario_id"], "checks": ["is_json"]}
    no_outputs = api.client.post("/v0/test_run", headers=h, json=body)
    assert no_outputs.status_code == 422 and "CustomModel" in no_outputs.json()["detail"]
    outputs = {"model_data": {"not-a-point": {"actual": "x"}}}
    stray = api.client.post("/v0/test_run", headers=h, json={**body, "model_results": outputs})
    assert stray.status_code == 422 and "not in the scenario set" in stray.json()["detail"]
    unknown = api.client.post(
        "/v0/test_run", headers=h, json={**body, "mut_id": str(uuid.uuid4()), "model_results": {}}
    )
    assert unknown.status_code == 404
    missing = api.client.get(f"/v0/test_runs/{uuid.uuid4()}", headers=h)
    assert missing.status_code == 404 and missing.json()["detail"]


def test_a_run_whose_model_failed_everywhere_scores_nothing(api: Api) -> None:
    """Builtins run on the host: no Docker needed. Failed rows say why and are not scored."""
    h = _key(api)
    model = api.client.post("/v0/register_model", headers=h, json={"name": "m"}).json()
    scenario = api.client.post(
        "/v0/scenario_sets",
        headers=h,
        json={"name": "s", "seed_data": [{"input": "q", "result": "r"}]},
    ).json()
    (point,) = api.client.get(
        f"/v0/scenario_data_points/{scenario['scenario_id']}", headers=h
    ).json()
    data = {point["id"]: {"actual": None, "error_message": {"message": "model timed out"}}}
    reply = api.client.post(
        "/v0/test_run",
        headers=h,
        json={
            "mut_id": model["id"],
            "scenario_id": scenario["scenario_id"],
            "checks": ["is_json"],
            "model_results": {"model_data": data},
        },
    )
    assert reply.status_code == 201, reply.text
    run = reply.json()
    assert run["status"] == "FINISHED"
    (row,) = run["model_metrics"]["scores_by_row"]
    assert row["error_message"] == "model timed out" and "is_json" not in row
    found = api.client.post("/v0/find_test_data_points", headers=h, json={"test_run_id": run["id"]})
    assert found.status_code == 201
    assert found.json()[0]["error_message"] == "model timed out"
    assert found.json()[0]["check_values"] == []


def test_a_test_run_of_builtins_is_a_scorebox_run(api: Api) -> None:
    h = _key(api)
    model = api.client.post("/v0/register_model", headers=h, json={"name": "m"}).json()
    seed = [{"input": "a", "result": "A"}, {"input": "b", "result": "B"}]
    scenario = api.client.post(
        "/v0/scenario_sets", headers=h, json={"name": "s", "seed_data": seed}
    ).json()
    points = api.client.get(f"/v0/scenario_data_points/{scenario['scenario_id']}", headers=h)
    outputs = ['{"ok": true}', "not json"]
    data = {p["id"]: {"actual": out} for p, out in zip(points.json(), outputs, strict=True)}
    reply = api.client.post(
        "/v0/test_run",
        headers=h,
        json={
            "mut_id": model["id"],
            "scenario_id": scenario["scenario_id"],
            "name": "builtins",
            "type": "NL_GENERATION",
            "checks": ["is_json"],
            "model_results": {"model_data": data},
        },
    )
    assert reply.status_code == 201, reply.text
    run = reply.json()
    assert run["status"] == "FINISHED" and run["test_data_point_count"] == 2
    assert [r["is_json"] for r in run["model_metrics"]["scores_by_row"]] == [True, False]
    assert run["model_metrics"]["mean_scores"] == {"is_json": 0.5}
    assert run["app_link"].startswith("/v1/runs/run_")

    bearer = {"Authorization": f"Bearer {h['api-key']}"}
    runs = api.client.get("/v1/runs", headers=bearer).json()
    listed = runs["runs"] if isinstance(runs, dict) else runs
    mine = [r for r in listed if r["id"] == run["app_link"].rsplit("/", 1)[1]]
    assert mine and mine[0]["labels"]["okareo_test_run"] == run["id"]

    again = api.client.get(f"/v0/test_runs/{run['id']}", headers=h)
    assert again.status_code == 201 and again.json()["model_metrics"] == run["model_metrics"]
    found = api.client.post(
        "/v0/find_test_data_points",
        headers=h,
        json={"test_run_id": run["id"], "full_data_point": True},
    ).json()
    assert [p["checks"]["is_json"] for p in found] == [True, False]
    values = found[0]["check_values"]
    assert values[0]["name"] == "is_json" and values[0]["value"] is True
    uuid.UUID(values[0]["check_id"])
    one = api.client.post("/v0/find_test_data_points", headers=h, json={"id": found[1]["id"]})
    assert [p["id"] for p in one.json()] == [found[1]["id"]]

    other = _key(api)
    assert api.client.get(f"/v0/test_runs/{run['id']}", headers=other).status_code == 404
    for query in ({"test_run_id": run["id"]}, {"id": found[1]["id"]}):
        hidden = api.client.post("/v0/find_test_data_points", headers=other, json=query)
        assert hidden.status_code == 404, query
    bearer_b = {"Authorization": f"Bearer {other['api-key']}"}
    run_id = run["app_link"].rsplit("/", 1)[1]
    assert api.client.get(f"/v1/runs/{run_id}", headers=bearer_b).status_code == 404


def test_a_name_that_shadows_a_builtin_says_so_in_warning(api: Api) -> None:
    """/v1 answers a `shadows-builtin` warning; /v0 carries it in Okareo's `warning`."""
    h = _key(api)
    shadowing = _save(api, h, "is_json")
    assert "'is_json' shadows the built-in is_json" in shadowing["warning"]
    assert "builtin:is_json" in shadowing["warning"]
    again = _save(api, h, "is_json")  # unchanged: the warning still holds
    assert again["version"] == 1 and "shadows the built-in" in again["warning"]
    assert _save(api, h, "a name of its own")["warning"] is None


def _builtin(api: Api, h: dict[str, str], name: str) -> dict[str, Any]:
    listed = api.client.get("/v0/checks", headers=h).json()
    (builtin,) = [c for c in listed if c["name"] == name and c["is_predefined"]]
    return dict(builtin)


def _one_row_test(api: Api, h: dict[str, str], output: str) -> Callable[[list[str]], Any]:
    """A model and a one-point scenario set; the returned call runs ``checks`` on ``output``."""
    model = api.client.post("/v0/register_model", headers=h, json={"name": "m"}).json()
    scenario = api.client.post(
        "/v0/scenario_sets", headers=h, json={"name": "s", "seed_data": [{"input": "q"}]}
    ).json()
    (point,) = api.client.get(
        f"/v0/scenario_data_points/{scenario['scenario_id']}", headers=h
    ).json()

    def run_test(checks: list[str]) -> Any:
        return api.client.post(
            "/v0/test_run",
            headers=h,
            json={
                "mut_id": model["id"],
                "scenario_id": scenario["scenario_id"],
                "checks": checks,
                "model_results": {"model_data": {point["id"]: {"actual": output}}},
            },
        )

    return run_test


def test_a_builtin_id_reaches_the_builtin_even_when_a_check_shadows_it(api: Api) -> None:
    h = _key(api)
    _save(api, h, "is_json")  # the tenant's own is_json: len(model_output) > 3
    builtin = _builtin(api, h, "is_json")
    reply = _one_row_test(api, h, "not json")([builtin["id"]])
    assert reply.status_code == 201, reply.text
    (row,) = reply.json()["model_metrics"]["scores_by_row"]
    assert row["is_json"] is False  # the built-in's verdict; the tenant's check says True
    found = api.client.post(
        "/v0/find_test_data_points", headers=h, json={"test_run_id": reply.json()["id"]}
    ).json()
    assert found[0]["check_values"][0]["check_id"] == builtin["id"]


def test_two_references_to_one_check_name_are_a_422_naming_both(api: Api) -> None:
    """Okareo keys a row's results by check name: a name and a pinned older version, or a
    check and the built-in it shadows, would overwrite each other (and mix in one mean)."""
    h = _key(api)
    first = _save(api, h, "is_json")
    second = _save(api, h, "is_json", check_config={"code_contents": CODE.replace("> 3", "> 4")})
    assert second["version"] == 2 and second["id"] != first["id"]
    builtin = _builtin(api, h, "is_json")
    run_test = _one_row_test(api, h, "12345")

    for checks in (["is_json", first["id"]], [builtin["id"], "is_json"]):
        refused = run_test(checks)
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert f"{checks[0]!r} and {checks[1]!r} are both named 'is_json'" in detail
    bearer = {"Authorization": f"Bearer {h['api-key']}"}
    listed_runs = api.client.get("/v1/runs", headers=bearer).json()
    assert not (listed_runs["runs"] if isinstance(listed_runs, dict) else listed_runs)
    ok = run_test([first["id"], "does_code_compile"])  # distinct names: scored
    assert ok.status_code == 201, ok.text
    (row,) = ok.json()["model_metrics"]["scores_by_row"]
    assert row["is_json"] is True  # v1: len > 3
