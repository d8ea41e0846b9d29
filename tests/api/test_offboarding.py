"""Retention and offboarding through the CLI, on SQLite and PostgreSQL: `scorebox db prune`,
`scorebox tenant disable|enable|delete`, `scorebox tenant show` with effective quotas and
`set-quota NAME=default` (docs/operating/backup.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text

from engine.cli import main
from engine.contract import Status
from engine.models import RowResult
from engine.storage import RunStatus, SqlStore
from engine.storage.records import utcnow
from tests.api.conftest import Api, AppFactory
from tests.conftest import queued_run

CHECK = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: Any) -> CliRunner:
    monkeypatch.setenv("SCOREBOX_DATABASE_URL", database_url)
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path))
    return CliRunner()


def _run(cli: CliRunner, *args: str) -> Result:
    return cli.invoke(main, list(args), catch_exceptions=False)


def _events(store: SqlStore, tenant_id: str) -> list[tuple[str, dict[str, Any]]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT action, detail FROM audit_events WHERE tenant_id = :t ORDER BY seq"),
            {"t": tenant_id},
        )
        return [(r[0], json.loads(r[1]) if isinstance(r[1], str) else r[1]) for r in rows]


def _tenant_id(store: SqlStore, name: str) -> str:
    return store.get_tenant(name).id


def test_a_disabled_tenants_keys_answer_401_until_enabled(
    make_api: AppFactory, cli: CliRunner
) -> None:
    api = make_api(key_cache_seconds=0)
    headers = api.tenant("leaving")
    other = api.tenant("staying")
    assert api.client.get("/v1/checks", headers=headers).status_code == 200

    done = _run(cli, "tenant", "disable", "leaving")
    assert done.exit_code == 0 and done.output.strip() == "leaving: disabled"
    answer = api.client.get("/v1/checks", headers=headers)
    assert answer.status_code == 401
    assert answer.json()["detail"] == (
        "tenant leaving is disabled: its keys work again once an operator runs "
        "`scorebox tenant enable leaving`"
    )
    assert api.client.get("/v1/checks", headers=other).status_code == 200
    assert "state:    disabled since" in _run(cli, "tenant", "show", "leaving").output
    listed = _run(cli, "tenant", "list").output.splitlines()
    assert [line.endswith("  disabled") for line in listed if "  leaving  " in line] == [True]

    assert _run(cli, "tenant", "enable", "leaving").output.strip() == "leaving: enabled"
    assert api.client.get("/v1/checks", headers=headers).status_code == 200
    actions = [a for a, _ in _events(api.store, _tenant_id(api.store, "leaving"))]
    assert actions[-2:] == ["tenant.disabled", "tenant.enabled"]


def test_delete_removes_the_tenants_data_and_is_audited(
    make_api: AppFactory, cli: CliRunner
) -> None:
    api = make_api(key_cache_seconds=0)
    headers = api.tenant("gone")
    kept = api.tenant("kept")
    api.push(headers, "yes", CHECK)
    api.push(kept, "yes", CHECK)
    gone_id = _tenant_id(api.store, "gone")
    run = api.store.create_run(queued_run(gone_id, 3), [{"model_output": "y"}] * 3, None)
    api.store.save_results(run.id, [(0, 0, RowResult(status=Status.OK, score=1.0))])

    asked = cli.invoke(main, ["tenant", "delete", "gone"], input="n\n")
    assert asked.exit_code == 1  # refused at the prompt: nothing deleted
    assert "delete tenant gone" in asked.output and "1 runs (3 rows, 1 results)" in asked.output
    assert api.store.get_tenant("gone").id == gone_id

    done = _run(cli, "tenant", "delete", "gone", "--yes")
    assert done.exit_code == 0
    assert done.output.strip() == (
        f"deleted tenant gone ({gone_id}): 1 keys, 1 check versions, 1 runs (3 rows, 1 results)"
    )
    answer = api.client.get("/v1/checks", headers=headers)
    assert answer.status_code == 401
    with api.store.engine.connect() as conn:
        for table in ("api_keys", "check_versions", "runs"):
            left = conn.scalar(
                text(f"SELECT count(*) FROM {table} WHERE tenant_id = :t"), {"t": gone_id}
            )
            assert left == 0, table
        assert (
            conn.scalar(
                text("SELECT count(*) FROM run_row_blocks WHERE run_id = :r"), {"r": run.id}
            )
            == 0
        )
    assert api.client.get("/v1/checks", headers=kept).json()  # the other tenant keeps its check
    deleted = [d for a, d in _events(api.store, gone_id) if a == "tenant.deleted"]
    assert deleted == [{"keys": 1, "checks": 1, "runs": 1, "rows": 3, "results": 1}]


def _finished_run(store: SqlStore, tenant_id: str, status: RunStatus, days_ago: float) -> str:
    run = store.create_run(queued_run(tenant_id, 2), [{"model_output": "y"}] * 2, None)
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE runs SET status = :s, finished_at = :f, created_at = :f WHERE id = :i"),
            {"s": status.value, "f": utcnow() - timedelta(days=days_ago), "i": run.id},
        )
    return run.id


def test_prune_deletes_finished_runs_past_their_age_and_dry_run_only_counts(
    api: Api, cli: CliRunner
) -> None:
    api.tenant("busy")
    tenant_id = _tenant_id(api.store, "busy")
    old = _finished_run(api.store, tenant_id, RunStatus.SUCCEEDED, 40)
    old_failed = _finished_run(api.store, tenant_id, RunStatus.FAILED, 31)
    running = _finished_run(api.store, tenant_id, RunStatus.RUNNING, 60)
    recent = _finished_run(api.store, tenant_id, RunStatus.SUCCEEDED, 2)

    dry = _run(cli, "db", "prune", "--older-than", "30d", "--dry-run")
    assert dry.exit_code == 0
    assert dry.output.startswith("would delete 2 runs (4 rows, 0 results) finished before ")
    with api.store.engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM runs")) == 4

    done = _run(cli, "db", "prune", "--older-than", "30d")
    assert done.output.startswith("deleted 2 runs (4 rows, 0 results) finished before ")
    with api.store.engine.connect() as conn:
        ids = set(conn.scalars(text("SELECT id FROM runs")))
        stored = "SELECT coalesce(sum(row_stop - row_start), 0) FROM run_row_blocks"
        assert conn.scalar(text(stored)) == 4
    assert ids == {running, recent}
    assert old not in ids and old_failed not in ids


def test_prune_names_what_it_needs(
    api: Api, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCOREBOX_RETENTION_DAYS", raising=False)
    bare = cli.invoke(main, ["db", "prune"])
    assert bare.exit_code == 2
    assert "how old? pass --older-than (e.g. 90d) or set SCOREBOX_RETENTION_DAYS" in bare.output
    wrong = cli.invoke(main, ["db", "prune", "--older-than", "3 months"])
    assert wrong.exit_code == 1
    assert "use a number of days, hours or weeks, e.g. 90d, 36h, 2w" in wrong.output
    monkeypatch.setenv("SCOREBOX_RETENTION_DAYS", "90")
    assert cli.invoke(main, ["db", "prune", "--dry-run"]).output.startswith("would delete 0 runs")


def test_show_marks_overrides_and_an_override_can_be_cleared(api: Api, cli: CliRunner) -> None:
    made = _run(cli, "tenant", "create", "quotaed", "--quota", "rows_per_run=5000")
    assert made.exit_code == 0
    shown = _lines(_run(cli, "tenant", "show", "quotaed").output)
    assert "rows_per_run 5000 override (default 1000000)" in shown
    assert "concurrent_jobs 4 default (SCOREBOX_QUOTA_CONCURRENT_JOBS)" in shown
    assert "runsc_only 0 default" in shown

    cleared = _run(cli, "tenant", "set-quota", "quotaed", "rows_per_run=default")
    assert cleared.output.strip() == "quotaed: default quotas"
    shown = _lines(_run(cli, "tenant", "show", "quotaed").output)
    assert "rows_per_run 1000000 default (SCOREBOX_QUOTA_ROWS_PER_RUN)" in shown
    unknown = cli.invoke(main, ["tenant", "set-quota", "quotaed", "rows=default"])
    assert unknown.exit_code == 1 and "unknown quota 'rows'" in unknown.output


def _lines(output: str) -> list[str]:
    """Each line with its runs of spaces made one (the table's columns are padded)."""
    return [" ".join(line.split()) for line in output.splitlines()]
