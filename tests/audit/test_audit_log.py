"""The audit log: API, CLI, /v0, tenant isolation, append-only on both databases."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from engine.audit import KEY_REVOKED, Actor, AuditEvent
from engine.audit.store import AuditLog
from engine.cli import main
from engine.sandbox.fake import fake_runner_factory
from tests.api.conftest import TRIVIAL_CHECK, Api, AppFactory
from tests.hardening.test_v0_half_writes import _setup

ADMIN = {"Authorization": "Bearer admin-secret-for-the-audit-tests"}


def _audit(api: Api, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    reply = api.client.get("/v1/audit", headers=headers, params=params)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def _actions(api: Api, headers: dict[str, str]) -> list[str]:
    return [r["action"] for r in _audit(api, headers, limit=1000)["records"]]


def test_a_tenants_changes_are_recorded_with_who_and_what(make_api: AppFactory) -> None:
    factory = fake_runner_factory(row_seconds=0.05)
    api = make_api(runner_factory=factory, admin_key="admin-secret-for-the-audit-tests")
    made = api.client.post("/v1/admin/tenants", headers=ADMIN, json={"name": "acme"})
    assert made.status_code == 201, made.text
    a = {"Authorization": f"Bearer {made.json()['api_key']}"}
    key_id = made.json()["key"]["id"]
    api.push(a, "t", TRIVIAL_CHECK)
    api.push(a, "t", TRIVIAL_CHECK)  # unchanged: no new version, nothing recorded
    api.push(a, "t", TRIVIAL_CHECK + "# v2\n")
    rows = [{"model_output": "yes"}] * 200
    run = api.client.post("/v1/runs", headers=a, json={"checks": ["t"], "rows": rows}).json()
    cancelled = api.client.post(f"/v1/runs/{run['id']}/cancel", headers=a)
    assert cancelled.json()["status"] == "cancelled", cancelled.text
    api.client.post(f"/v1/runs/{run['id']}/cancel", headers=a)  # already cancelled: no change
    assert api.client.delete("/v1/checks/t", headers=a).status_code == 200
    tenant = made.json()["tenant"]["id"]
    quota = api.client.patch(
        f"/v1/admin/tenants/{tenant}/quotas", headers=ADMIN, json={"queued_runs": 3}
    )
    assert quota.status_code == 200, quota.text
    second = api.client.post(f"/v1/admin/tenants/{tenant}/keys", headers=ADMIN).json()
    assert api.client.delete(f"/v1/admin/keys/{second['key']['id']}", headers=ADMIN).is_success

    records = _audit(api, a)["records"]
    assert [r["action"] for r in records] == [
        "tenant.created",
        "key.created",
        "check.pushed",
        "check.pushed",
        "run.started",
        "run.cancelled",
        "check.deleted",
        "quotas.changed",
        "key.created",
        "key.revoked",
    ]
    by_action = {r["action"]: r for r in records}
    pushed = [r for r in records if r["action"] == "check.pushed"]
    assert [r["target"] for r in pushed] == ["t@1", "t@2"]
    assert pushed[0]["actor"] == {"kind": "tenant", "key_id": key_id, "via": "api"}
    assert by_action["run.started"]["target"] == run["id"]
    assert by_action["run.started"]["detail"]["rows"] == 200
    assert by_action["run.cancelled"]["target"] == run["id"]
    assert by_action["check.deleted"]["detail"] == {"versions_deleted": 2}
    assert by_action["quotas.changed"]["detail"]["changed"] == {"queued_runs": 3}
    assert by_action["quotas.changed"]["actor"] == {
        "kind": "operator",
        "key_id": None,
        "via": "admin-api",
    }
    assert by_action["key.revoked"]["target"] == second["key"]["id"]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs)
    assert all(r["at"] for r in records)
    assert made.json()["api_key"] not in str(records)  # a key's secret is never recorded


def test_pages_and_action_filter(api: Api) -> None:
    a = api.tenant("a")
    for i in range(5):
        api.push(a, f"c{i}", TRIVIAL_CHECK)
    first = _audit(api, a, limit=2)
    assert len(first["records"]) == 2 and first["next_offset"] == 2
    rest = _audit(api, a, offset=4, limit=2)
    assert len(rest["records"]) == 1 and rest["next_offset"] is None
    only = _audit(api, a, action="check.pushed")
    assert len(only["records"]) == 5
    bad = api.client.get("/v1/audit", headers=a, params={"action": "check.push"})
    assert bad.status_code == 422 and "check.pushed" in bad.json()["detail"]
    assert api.client.get("/v1/audit").status_code == 401
    # an offset past what the databases' integers hold is the caller's 422, never a 500
    huge = api.client.get("/v1/audit", headers=a, params={"offset": 2**63})
    assert huge.status_code == 422


def test_a_tenant_reads_only_its_own_records(api: Api) -> None:
    a, b = api.tenant("a"), api.tenant("b")
    api.push(a, "secret_check", TRIVIAL_CHECK)
    reply = api.client.post(
        "/v1/runs",
        headers=a,
        json={"checks": ["exact_match"], "rows": [{"model_output": "x", "scenario_result": "x"}]},
    )
    assert reply.status_code == 202
    assert _actions(api, a) == ["check.pushed", "run.started"]
    assert _audit(api, b)["records"] == []
    api.push(b, "mine", TRIVIAL_CHECK)
    assert [r["target"] for r in _audit(api, b)["records"]] == ["mine@1"]


def test_v0_changes_are_recorded(api: Api) -> None:
    bearer = api.tenant("okareo")
    h = {"api-key": bearer["Authorization"].removeprefix("Bearer ")}
    code = (
        "from okareo.checks import CodeBasedCheck\n\nclass Check(CodeBasedCheck):\n"
        "    @staticmethod\n    def evaluate(model_output: str) -> bool:\n"
        "        return len(model_output) > 3\n"
    )
    body = {"name": "long", "description": "d", "check_config": {"code_contents": code}}
    check = api.client.post("/v0/check_create_or_update", headers=h, json=body)
    assert check.status_code == 200, check.text
    model = api.client.post("/v0/register_model", headers=h, json={"name": "bot"})
    assert model.status_code == 201, model.text
    seed = [{"input": "q", "result": "r"}]
    scenario = api.client.post(
        "/v0/scenario_sets", headers=h, json={"name": "s", "seed_data": seed}
    )
    assert scenario.status_code == 201, scenario.text
    uploaded = api.client.post(
        "/v0/scenario_sets_upload",
        headers=h,
        data={"name": "u"},
        files={"file": ("u.jsonl", b'{"input": "a", "result": "A"}\n')},
    )
    assert uploaded.status_code == 200, uploaded.text
    deleted = api.client.request(
        "DELETE", f"/v0/check/{check.json()['id']}", headers=h, data={"name": "long"}
    )
    assert deleted.status_code == 204, deleted.text
    test_run = api.client.post("/v0/test_run", headers=h, json=_setup(api, h))
    assert test_run.status_code == 201, test_run.text
    records = _audit(api, bearer)["records"]
    assert [r["action"] for r in records] == [
        "check.pushed",
        "model.registered",
        "scenario_set.created",
        "scenario_set.created",
        "check.deleted",
        "model.registered",
        "scenario_set.created",
        "run.started",
    ]
    assert {r["actor"]["via"] for r in records} == {"v0"}
    assert records[2]["target"] == scenario.json()["scenario_id"]
    assert records[-1]["detail"]["checks"] == ["is_json"]


def test_the_log_is_append_only_in_the_database(api: Api) -> None:
    a = api.tenant("a")
    api.push(a, "t", TRIVIAL_CHECK)
    for statement in (
        "UPDATE audit_events SET action = 'check.deleted'",
        "DELETE FROM audit_events",
    ):
        with pytest.raises(DBAPIError, match="append-only"), api.store.engine.begin() as conn:
            conn.execute(text(statement))
    assert _actions(api, a) == ["check.pushed"]


def test_scorebox_audit_shows_every_tenant_to_the_operator(
    make_api: AppFactory, monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: Any
) -> None:
    api = make_api()
    a, b = api.tenant("alpha"), api.tenant("beta")
    api.push(a, "from_a", TRIVIAL_CHECK)
    api.push(b, "from_b", TRIVIAL_CHECK)
    monkeypatch.setenv("SCOREBOX_DATABASE_URL", database_url)
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path))
    runner = CliRunner()
    made = runner.invoke(main, ["tenant", "create", "gamma"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    quota = runner.invoke(main, ["tenant", "set-quota", "gamma", "queued_runs=2"])
    assert quota.exit_code == 0, quota.output
    shown = runner.invoke(main, ["audit"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert any("check.pushed  from_a@1" in line for line in lines), shown.output
    assert any("check.pushed  from_b@1" in line for line in lines), shown.output
    assert any("tenant.created  gamma  by operator via cli" in line for line in lines)
    assert any("quotas.changed  gamma" in line for line in lines)
    only = runner.invoke(main, ["audit", "--tenant", "beta", "--json"], catch_exceptions=False)
    records = [json.loads(line) for line in only.output.splitlines()]
    assert [r["target"] for r in records] == ["from_b@1"]
    bad = runner.invoke(main, ["audit", "--action", "nope"])
    assert bad.exit_code != 0 and "check.pushed" in bad.output


def test_migration_0007_goes_down_and_up_again(database_url: str) -> None:
    from alembic import command
    from sqlalchemy import inspect

    from engine.storage.database import alembic_config, create_db_engine, upgrade

    engine = create_db_engine(database_url)
    try:
        upgrade(engine)
        assert "audit_events" in inspect(engine).get_table_names()
        command.downgrade(alembic_config(engine), "0006")
        assert "audit_events" not in inspect(engine).get_table_names()
        upgrade(engine)
        AuditLog(engine).record(
            AuditEvent(KEY_REVOKED, None, Actor.operator("cli"), "key_x")
        )  # a row for the triggers to refuse to delete
        with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
            conn.execute(text("DELETE FROM audit_events"))
    finally:
        engine.dispose()
