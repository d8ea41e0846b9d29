"""Tenant isolation: another tenant's checks and runs are never visible (404)."""

from __future__ import annotations

from tests.api.conftest import Api

SOURCE = "def evaluate(model_output: str) -> bool:\n    return True\n"
ROW = {"model_output": "hello"}


def test_checks_of_another_tenant_are_invisible(api: Api) -> None:
    a, b = api.tenant("a"), api.tenant("b")
    check = api.push(a, "secret_check", SOURCE)
    names = [c["name"] for c in api.client.get("/v1/checks", headers=b).json()["checks"]]
    assert "secret_check" not in names
    every = api.client.get("/v1/checks?all_versions=true", headers=b).json()["checks"]
    assert all(c["builtin"] for c in every)
    for ref in ("secret_check", "secret_check@1", check["id"]):
        assert api.client.get(f"/v1/checks/{ref}", headers=b).status_code == 404
        assert api.client.delete(f"/v1/checks/{ref}", headers=b).status_code == 404
        for path in ("/v1/score", "/v1/runs"):
            reply = api.client.post(path, headers=b, json={"checks": [ref], "rows": [ROW]})
            assert reply.status_code == 404, (path, ref, reply.text)
        obj = {"checks": [{"id": check["id"]}], "rows": [ROW]}
        assert api.client.post("/v1/runs", headers=b, json=obj).status_code == 404
    # still there for its owner
    assert api.client.get("/v1/checks/secret_check", headers=a).status_code == 200
    # the same name in B is B's own check
    mine = api.push(b, "secret_check", SOURCE + "\n")
    assert mine["id"] != check["id"]
    assert mine["version"] == 1


def test_runs_of_another_tenant_are_invisible(api: Api) -> None:
    a, b = api.tenant("a"), api.tenant("b")
    api.push(a, "c", SOURCE)
    run = api.client.post("/v1/runs", headers=a, json={"checks": ["c"], "rows": [ROW]})
    assert run.status_code == 202, run.text
    run_id = run.json()["id"]
    assert api.client.get(f"/v1/runs/{run_id}", headers=b).status_code == 404
    assert api.client.get(f"/v1/runs/{run_id}/results", headers=b).status_code == 404
    assert api.client.post(f"/v1/runs/{run_id}/cancel", headers=b).status_code == 404
    assert api.client.get("/v1/runs", headers=b).json()["runs"] == []
    assert api.client.get(f"/v1/runs/{run_id}", headers=a).status_code == 200
