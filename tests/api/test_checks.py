"""Checks API: auth, versioning, upload, validate, list, get, delete (docs/architecture.md,
"Upload to first run")."""

from __future__ import annotations

from engine.tenancy.auth import hash_key
from tests.api.conftest import Api

SOURCE = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 3\n"
CLASS_SOURCE = (
    "from okareo.checks import CodeBasedCheck\n\n"
    "class Check(CodeBasedCheck):\n"
    "    @staticmethod\n"
    "    def evaluate(model_output: str, scenario_result: str) -> bool:\n"
    "        return scenario_result in model_output\n"
)


def test_missing_invalid_and_revoked_keys_are_401(api: Api) -> None:
    assert api.client.get("/v1/checks").status_code == 401
    reply = api.client.get("/v1/checks", headers={"Authorization": "Bearer sbx_nope"})
    assert reply.status_code == 401
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert reply.headers["www-authenticate"] == "Bearer"
    headers = api.tenant()
    assert api.client.get("/v1/checks", headers=headers).status_code == 200
    found = api.store.find_key(hash_key(headers["Authorization"].removeprefix("Bearer ")))
    assert found is not None
    # through the app's own store, as the admin API does: at once (tests/api/test_request_caches.py
    # has the admin API itself, and a revocation from another process within the cache's bound)
    api.client.app.state.services.store.revoke_key(found[0].prefix)  # type: ignore[attr-defined]
    assert api.client.get("/v1/checks", headers=headers).status_code == 401


def test_versioning_identical_is_200_changed_is_201(api: Api) -> None:
    h = api.tenant()
    first = api.client.post("/v1/checks", headers=h, json={"name": "len", "source": SOURCE})
    assert first.status_code == 201
    assert first.json()["version"] == 1
    again = api.client.post("/v1/checks", headers=h, json={"name": "len", "source": SOURCE})
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    changed = api.client.post(
        "/v1/checks", headers=h, json={"name": "len", "source": SOURCE.replace("3", "4")}
    )
    assert changed.status_code == 201
    assert changed.json()["version"] == 2
    assert changed.json()["sha256"] != first.json()["sha256"]


def test_upload_py_file(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": ("contains_expected.py", CLASS_SOURCE.encode(), "text/x-python")},
        data={"tags": "a,b"},
    )
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert body["name"] == "contains_expected"
    assert body["requires_scenario_result"] is True
    assert body["output_data_type"] == "bool"
    assert body["tags"] == ["a", "b"]


def test_invalid_check_is_422_with_line_and_col(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/checks",
        headers=h,
        json={"name": "bad", "source": "def evaluate(model_output, colour):\n    return 1\n"},
    )
    assert reply.status_code == 422
    assert reply.headers["content-type"].startswith("application/problem+json")
    errors = reply.json()["errors"]
    assert errors and {"code", "message", "line", "col"} <= set(errors[0])
    assert errors[0]["line"] == 1
    syntax = api.client.post(
        "/v1/checks", headers=h, json={"name": "bad", "source": "def evaluate(:\n"}
    )
    assert syntax.status_code == 422
    assert api.client.get("/v1/checks/bad", headers=h).status_code == 404


def test_validate_saves_nothing(api: Api) -> None:
    h = api.tenant()
    ok = api.client.post("/v1/checks/validate", headers=h, json={"source": SOURCE})
    assert ok.status_code == 200
    assert ok.json()["valid"] is True
    bad = api.client.post("/v1/checks/validate", headers=h, json={"source": "x = 1\n"})
    assert bad.status_code == 200
    assert bad.json()["valid"] is False
    assert bad.json()["issues"]
    assert api.client.get("/v1/checks?include_builtins=false", headers=h).json()["checks"] == []


def test_list_get_and_delete(api: Api) -> None:
    h = api.tenant()
    v1 = api.push(h, "len", SOURCE)
    v2 = api.push(h, "len", SOURCE.replace("3", "5"))
    api.push(h, "other", CLASS_SOURCE)
    latest = api.client.get("/v1/checks", headers=h).json()["checks"]
    own = [c for c in latest if not c["builtin"]]
    assert [(c["name"], c["version"]) for c in own] == [("len", 2), ("other", 1)]
    builtins = [c for c in latest if c["builtin"]]
    assert all(c["id"] is None for c in builtins)
    by_name = {c["name"]: c for c in builtins}
    string_check = by_name["string_check"]
    assert string_check["output_data_type"] == "bool"
    assert string_check["description"]
    assert set(string_check["params"]["properties"]) >= {"operation", "reference"}
    one = api.client.get("/v1/checks/string_check", headers=h).json()
    assert one["builtin"] is True and one["params"] == string_check["params"]
    every = api.client.get("/v1/checks?all_versions=true", headers=h).json()["checks"]
    assert [(c["name"], c["version"]) for c in every if not c["builtin"]] == [
        ("len", 1),
        ("len", 2),
        ("other", 1),
    ]
    assert api.client.get("/v1/checks/len", headers=h).json()["version"] == 2
    assert api.client.get("/v1/checks/len@1", headers=h).json()["id"] == v1["id"]
    assert api.client.get("/v1/checks/len?version=1", headers=h).json()["id"] == v1["id"]
    assert api.client.get(f"/v1/checks/{v2['id']}", headers=h).json()["version"] == 2
    assert api.client.get("/v1/checks/len@9", headers=h).status_code == 404

    assert api.client.delete("/v1/checks/len@2", headers=h).json() == {"deleted": 1}
    assert api.client.get("/v1/checks/len", headers=h).json()["version"] == 1
    assert api.client.delete("/v1/checks/len", headers=h).json() == {"deleted": 1}
    assert api.client.get("/v1/checks/len", headers=h).status_code == 404
    assert api.client.delete("/v1/checks/len", headers=h).status_code == 404
    # a name deleted whole starts again at version 1 (as in Okareo), with a new id
    again = api.push(h, "len", SOURCE)
    assert again["version"] == 1 and again["id"] not in (v1["id"], v2["id"])
    assert api.push(h, "len", SOURCE.replace("3", "7"))["version"] == 2
    # the deleted versions stay readable by id; the name means the live ones only
    old = api.client.get(f"/v1/checks/{v2['id']}", headers=h).json()
    assert old["version"] == 2 and old["deleted_at"] is not None
    assert api.client.get("/v1/checks/len@1", headers=h).json()["id"] == again["id"]
    assert api.client.get("/v1/checks/len", headers=h).json()["deleted_at"] is None


def test_a_version_deleted_alone_is_not_numbered_again(api: Api) -> None:
    h = api.tenant()
    api.push(h, "num", SOURCE)
    api.push(h, "num", SOURCE.replace("3", "5"))
    assert api.client.delete("/v1/checks/num@2", headers=h).json() == {"deleted": 1}
    # the name still lives (version 1): the next save is 3, not 2 again
    assert api.push(h, "num", SOURCE.replace("3", "6"))["version"] == 3


def test_model_check_versions_and_legacy_placeholders(api: Api) -> None:
    h = api.tenant()
    body = {
        "name": "judge",
        "kind": "model",
        "prompt_template": "Is {generation} polite?",
        "check_type": "pass_fail",
    }
    reply = api.client.post("/v1/checks", headers=h, json=body)
    assert reply.status_code == 201, reply.text
    assert reply.json()["prompt_template"] == "Is {model_output} polite?"
    assert reply.json()["output_data_type"] == "bool"
    bad = api.client.post(
        "/v1/checks", headers=h, json={**body, "prompt_template": "Rate {model_output} {nope}"}
    )
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["code"]


def test_checks_and_builtins_list_the_same_builtins(api: Api) -> None:
    h = api.tenant()
    builtins = api.client.get("/v1/builtins", headers=h).json()["builtins"]
    checks = [c for c in api.client.get("/v1/checks", headers=h).json()["checks"] if c["builtin"]]
    assert [b["name"] for b in builtins] == [c["name"] for c in checks]
    assert [b["name"] for b in builtins] == sorted(b["name"] for b in builtins)
    for b, c in zip(builtins, checks, strict=True):
        assert (c["kind"], c["output_data_type"], c["params"]) == (
            b["kind"],
            b["output_data_type"],
            b["params_schema"],
        )
    one = api.client.get("/v1/checks/fluency", headers=h).json()
    assert one == next(c for c in checks if c["name"] == "fluency")


def test_migration_0009_goes_down_and_up_again(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import CheckVersionRow

    h = api.tenant()
    old = api.push(h, "again", SOURCE)
    assert api.client.delete("/v1/checks/again", headers=h).status_code == 200
    new = api.push(h, "again", SOURCE.replace("3", "4"))
    assert new["version"] == old["version"] == 1
    db = api.store.engine
    command.downgrade(alembic_config(db), "0008")
    # back to one row per number: the live version 1 is kept, the deleted one dropped
    with db.connect() as conn:
        ids = conn.scalars(select(CheckVersionRow.id).where(CheckVersionRow.name == "again"))
        assert list(ids) == [new["id"]]
    upgrade(db)
    api.push(h, "again", SOURCE.replace("3", "9"))
    with db.connect() as conn:
        count = conn.scalar(select(func.count()).where(CheckVersionRow.name == "again"))
    assert count == 2


def test_migration_0010_goes_down_and_up_again_keeping_every_tenants_data(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import ApiKeyRow, CheckVersionRow, TenantRow

    h = api.tenant()
    api.push(h, "kept", SOURCE)
    db = api.store.engine

    def counts() -> tuple[int | None, int | None, int | None]:
        with db.connect() as conn:
            return (
                conn.scalar(select(func.count()).select_from(TenantRow)),
                conn.scalar(select(func.count()).select_from(ApiKeyRow)),
                conn.scalar(select(func.count()).select_from(CheckVersionRow)),
            )

    before = counts()
    assert all(before)
    # dropping tenants.disabled_at must not copy and drop the tenants table: on SQLite
    # that would cascade to every key, check and run
    command.downgrade(alembic_config(db), "0009")
    with db.connect() as conn:
        assert conn.scalar(select(func.count(CheckVersionRow.id))) == before[2]
    upgrade(db)
    assert counts() == before
    assert api.client.get("/v1/checks/kept", headers=h).status_code == 200
