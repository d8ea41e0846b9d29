"""A check pushed as ``generated`` (what the check generator's next steps and the
dashboard's generate page push) is stored and shown so: ``GET /v1/checks`` and
``/v1/checks/{ref}``, ``scorebox check list`` and ``show``, the dashboard's check page.
``builtin`` cannot be pushed, and the refusal names the origins that can. Migration 0017
adds the column, every version stored before it ``pushed``, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from sqlalchemy import inspect

from engine.storage.database import alembic_config, create_db_engine, current_revision, upgrade
from engine.storage.tables import TenantRow
from tests.api.conftest import Api
from tests.api.test_compare_and_dashboard import _csrf, _sign_in
from tests.api.test_labels_cli import _cli, cli  # noqa: F401 (cli: the fixture)

SOURCE = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 3\n"
OTHER = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 9\n"


def _origins(api: Api, headers: dict[str, str]) -> dict[str, str]:
    listed = api.client.get("/v1/checks", headers=headers).json()["checks"]
    return {c["name"]: c["origin"] for c in listed}


def test_a_generated_check_is_stored_and_shown_as_generated(api: Api) -> None:
    h = api.tenant()
    made = api.client.post(
        "/v1/checks",
        headers=h,
        json={"name": "long", "source": SOURCE, "policy": "restricted", "origin": "generated"},
    )
    assert made.status_code == 201, made.text
    assert (made.json()["kind"], made.json()["origin"]) == ("code", "generated")
    mine = api.client.post("/v1/checks", headers=h, json={"name": "mine", "source": OTHER})
    assert mine.json()["origin"] == "pushed"
    origins = _origins(api, h)
    assert (origins["long"], origins["mine"], origins["is_json"]) == (
        "generated",
        "pushed",
        "builtin",
    )
    for ref in ("long", "long@1", made.json()["id"]):
        one = api.client.get(f"/v1/checks/{ref}", headers=h).json()
        assert one["origin"] == "generated", ref
    # origin is not content: the same source pushed again is the same version, as it was
    again = api.client.post(
        "/v1/checks", headers=h, json={"name": "long", "source": SOURCE, "policy": "restricted"}
    )
    assert again.status_code == 200, again.text
    assert (again.json()["version"], again.json()["origin"]) == (1, "generated")
    # the upload form takes it too
    upload = api.client.post(
        "/v1/checks/upload",
        headers=h,
        data={"origin": "generated"},
        files={"file": ("up.py", SOURCE.replace("3", "4").encode(), "text/x-python")},
    )
    assert upload.status_code == 201, upload.text
    assert _origins(api, h)["up"] == "generated"


def test_a_run_keeps_its_generated_checks_origin(api: Api) -> None:
    h = api.tenant()
    for name, source, origin in (("gen", SOURCE, "generated"), ("hand", OTHER, "pushed")):
        body = {"name": name, "source": source, "origin": origin}
        assert api.client.post("/v1/checks", headers=h, json=body).status_code == 201
    posted = api.client.post(
        "/v1/runs",
        headers=h,
        json={"checks": ["gen", "hand", "is_json"], "rows": [{"model_output": "hello"}]},
    )
    assert posted.status_code == 202, posted.text
    for run in (posted.json(), api.client.get(f"/v1/runs/{posted.json()['id']}", headers=h).json()):
        assert [(c["name"], c["origin"]) for c in run["checks"]] == [
            ("gen", "generated"),
            ("hand", "pushed"),
            ("is_json", "builtin"),
        ]


def test_builtin_cannot_be_pushed_and_the_refusal_names_the_origins_that_can(
    api: Api,
) -> None:
    h = api.tenant()
    json_push = api.client.post(
        "/v1/checks", headers=h, json={"name": "x", "source": SOURCE, "origin": "builtin"}
    )
    upload = api.client.post(
        "/v1/checks/upload",
        headers=h,
        data={"origin": "builtin"},
        files={"file": ("x.py", SOURCE.encode(), "text/x-python")},
    )
    for refused in (json_push, upload):
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert "origin 'builtin' cannot be pushed" in detail
        assert "use `pushed` (the default) or `generated`" in detail
    assert api.client.get("/v1/checks/x", headers=h).status_code == 404
    document = api.client.get("/openapi.json").json()
    generate = document["paths"]["/v1/checks/generate"]["post"]["description"]
    assert "`POST /v1/checks` and `origin: generated`" in generate
    schema = document["components"]["schemas"]
    assert schema["CheckSpec"]["properties"]["origin"]["enum"] == ["pushed", "generated"]
    assert schema["CheckOut"]["properties"]["origin"]["enum"] == [
        "builtin",
        "pushed",
        "generated",
    ]


def test_the_cli_pushes_generated_and_lists_and_shows_it(
    cli: tuple[Api, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    path = tmp_path / "city.py"
    path.write_text(SOURCE)
    pushed = _cli("check", "push", str(path), "--policy", "restricted", "--origin", "generated")
    assert pushed.exit_code == 0, pushed.output
    other = tmp_path / "plain.py"
    other.write_text(OTHER)
    assert _cli("check", "push", str(other)).exit_code == 0
    listed = _cli("check", "list")
    lines = {line.split()[0]: line.split()[1:3] for line in listed.output.splitlines()}
    assert lines["city@1"] == ["code", "generated"]
    assert lines["plain@1"] == ["code", "pushed"]
    shown = _cli("check", "show", "city")
    assert "origin: generated\n" in shown.output
    refused = _cli("check", "push", str(path), "--origin", "builtin")
    assert refused.exit_code == 2 and "'builtin' is not one of 'pushed', 'generated'" in (
        refused.output
    )


def test_the_dashboards_generated_save_is_generated_and_its_page_says_so(api: Api) -> None:
    h = api.tenant()
    _sign_in(api, h)
    token = _csrf(api.client.get("/ui/checks/generate").text)
    page = Path("engine/web/templates/generate.html").read_text()
    assert '<input type="hidden" name="origin" value="generated">' in page
    for name, source, origin in (("gen", SOURCE, "generated"), ("hand", OTHER, None)):
        form = {"csrf": token, "name": name, "source": source, "policy": "restricted"}
        if origin:
            form["origin"] = origin
        saved = api.client.post("/ui/checks/save", data=form, follow_redirects=False)
        assert saved.status_code == 303, saved.text
    assert api.client.get("/v1/checks/gen", headers=h).json()["origin"] == "generated"
    assert api.client.get("/v1/checks/hand", headers=h).json()["origin"] == "pushed"
    shown = api.client.get("/ui/checks/gen").text
    assert '<span data-field="origin">generated</span>' in shown


def test_migration_0017_adds_origin_pushed_to_the_versions_stored_before(
    database_url: str,
) -> None:
    db = create_db_engine(database_url)
    now = datetime.now(UTC)
    # the table as 0016 left it: no origin column
    names = "id tenant_id name version kind policy requires_scenario_input"
    names += " requires_scenario_result sha256 created_at"
    versions = sa.table(
        "check_versions", sa.column("tags", sa.JSON), *(sa.column(c) for c in names.split())
    )
    try:
        upgrade(db, "0016")
        with db.begin() as conn:
            conn.execute(
                sa.insert(TenantRow).values(id="ten_1", name="acme", quotas={}, created_at=now)
            )
            conn.execute(
                sa.insert(versions).values(
                    id="chk_1",
                    tenant_id="ten_1",
                    name="old",
                    version=1,
                    kind="code",
                    tags=[],
                    policy="standard",
                    requires_scenario_input=False,
                    requires_scenario_result=False,
                    sha256="0" * 64,
                    created_at=now,
                )
            )
        upgrade(db, "0017")
        with db.connect() as conn:
            rows = conn.execute(sa.text("SELECT id, origin FROM check_versions")).all()
        assert [tuple(r) for r in rows] == [("chk_1", "pushed")]
        command.downgrade(alembic_config(db), "0016")
        assert current_revision(db) == "0016"
        columns = {c["name"] for c in inspect(db).get_columns("check_versions")}
        assert "origin" not in columns
        with db.connect() as conn:
            kept = conn.execute(sa.text("SELECT id, name FROM check_versions")).all()
        assert [tuple(r) for r in kept] == [("chk_1", "old")]
        upgrade(db)
        with db.connect() as conn:
            origin = conn.scalar(sa.text("SELECT origin FROM check_versions WHERE id = 'chk_1'"))
        assert origin == "pushed"
    finally:
        db.dispose()
