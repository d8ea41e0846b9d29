"""A check version's configuration (identity, upload form, storage, migration 0012) and
what ``POST /v1/checks/validate`` says of a file's format (SQLite and PostgreSQL)."""

from __future__ import annotations

import json

from tests.api.conftest import Api

PROMPTFOO = (
    "def get_assert(output, context):\n"
    "    limit = context['config'].get('limit', 10)\n"
    "    ok = len(output) <= limit\n"
    "    return {'pass': ok, 'score': float(ok), 'reason': f'limit {limit}'}\n"
)


def test_configuration_is_part_of_the_versions_identity(api: Api) -> None:
    h = api.tenant()
    body = {"name": "short", "source": PROMPTFOO, "config": {"limit": 3}}
    first = api.client.post("/v1/checks", headers=h, json=body)
    assert first.status_code == 201, first.text
    assert (first.json()["version"], first.json()["config"]) == (1, {"limit": 3})
    again = api.client.post("/v1/checks", headers=h, json=body)
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    changed = api.client.post("/v1/checks", headers=h, json={**body, "config": {"limit": 4}})
    assert (changed.status_code, changed.json()["version"]) == (201, 2)
    assert changed.json()["sha256"] != first.json()["sha256"]
    shown = api.client.get("/v1/checks/short@1", headers=h).json()
    assert shown["config"] == {"limit": 3}
    # a version without configuration keeps the digest it had before configurations existed
    plain = api.client.post("/v1/checks", headers=h, json={"name": "plain", "source": PROMPTFOO})
    assert plain.json()["config"] is None


def test_upload_form_takes_a_json_configuration(api: Api) -> None:
    h = api.tenant()
    files = {"file": ("short.py", PROMPTFOO.encode(), "text/x-python")}
    reply = api.client.post(
        "/v1/checks/upload", headers=h, files=files, data={"config": json.dumps({"limit": 5})}
    )
    assert reply.status_code == 201, reply.text
    assert reply.json()["config"] == {"limit": 5}
    bad = api.client.post("/v1/checks/upload", headers=h, files=files, data={"config": "[1]"})
    assert bad.status_code == 422
    assert "JSON object" in bad.text


def test_validate_names_no_format_when_none_fits(api: Api) -> None:
    h = api.tenant()
    none_fits = api.client.post(
        "/v1/checks/validate",
        headers=h,
        json={"name": "x", "source": "def f(a, b, c):\n    pass\n"},
    ).json()
    assert (none_fits["valid"], none_fits["format"], none_fits["format_title"]) == (
        False,
        None,
        None,
    )
    plain = api.client.post(
        "/v1/checks/validate",
        headers=h,
        json={"name": "x", "source": "def evaluate(model_output):\n    return True\n"},
    ).json()
    assert plain["format"] == "okareo"
    assert plain["format_title"] == "plain function (it also runs as an Okareo check)"
    phoenix = api.client.post(
        "/v1/checks/validate",
        headers=h,
        json={
            "name": "x",
            "source": "from phoenix.evals import llm_classify\n\ndef handler(output):\n"
            "    return 1.0\n",
        },
    ).json()
    assert not phoenix["valid"]
    [issue] = [i for i in phoenix["issues"] if i["code"] == "undeclared-import"]
    assert "`phoenix.evals.llm_classify`" in issue["message"]
    assert '"arize-phoenix-evals"' in issue["message"]


def test_migration_0012_goes_down_and_up_again_keeping_checks(api: Api) -> None:
    from alembic import command
    from sqlalchemy import func, select

    from engine.storage.database import alembic_config, upgrade
    from engine.storage.tables import CheckVersionRow

    h = api.tenant()
    api.client.post(
        "/v1/checks", headers=h, json={"name": "kept", "source": PROMPTFOO, "config": {"a": 1}}
    )
    db = api.store.engine
    with db.connect() as conn:
        before = conn.scalar(select(func.count()).select_from(CheckVersionRow))
    command.downgrade(alembic_config(db), "0011")
    with db.connect() as conn:
        assert conn.scalar(select(func.count(CheckVersionRow.id))) == before
    upgrade(db)
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(CheckVersionRow)) == before
    shown = api.client.get("/v1/checks/kept", headers=h).json()
    assert shown["config"] is None  # the column came back empty: down dropped it
    again = api.client.post(
        "/v1/checks", headers=h, json={"name": "kept", "source": PROMPTFOO, "config": {"a": 2}}
    )
    assert again.status_code == 201 and again.json()["config"] == {"a": 2}
