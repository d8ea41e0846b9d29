"""A run stored before migration 0019 (its input rows one a database row) is browsed and
exported after it, from its rows' blocks, on SQLite and PostgreSQL; going down gives the
rows back one a database row, and up again."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import command
from sqlalchemy import inspect

from engine.storage.database import alembic_config, create_db_engine, current_revision, upgrade
from engine.storage.records import RunCheck
from engine.storage.tables import RunRow, TenantRow
from engine.tenancy.auth import issue_key
from engine.web import table
from tests.api.conftest import AppFactory

BEFORE = "0018"
ROWS = 2503  # blocks of 100, the last one short

_RUN_ROWS = sa.table(
    "run_rows", sa.column("run_id"), sa.column("row_index"), sa.column("data", sa.JSON)
)
#: ``row_results`` as it was before 0020 (results one a database row).
_ROW_RESULTS = sa.table(
    "row_results",
    sa.column("run_id"),
    sa.column("check_index"),
    sa.column("row_index"),
    sa.column("status"),
    sa.column("score", sa.JSON),
    sa.column("score_num"),
    sa.column("duration_ms"),
)


def _row(i: int) -> dict[str, Any]:
    return {
        "id": f"r{i}",
        "model_output": f"output {i}" + (" needle" if i in (17, 2502) else ""),
        "scenario_input": {"q": i, "text": 'tab\t"quote" é'},
        "scenario_result": None,
        "metadata": {"big": 2**70 + i},  # past 64 bits: read back exactly after the move
    }


def _store_a_run_before(db: sa.Engine) -> None:
    now = datetime.now(UTC)
    check = RunCheck("code", "old-check", 1, "chk_1").to_json()
    with db.begin() as conn:
        conn.execute(
            sa.insert(TenantRow).values(id="ten_1", name="acme", quotas={}, created_at=now)
        )
        conn.execute(
            sa.insert(RunRow).values(
                id="run_1",
                tenant_id="ten_1",
                status="succeeded",
                checks=[check],
                limits=None,
                labels={},
                row_count=ROWS,
                created_at=now,
                finished_at=now,
                results_done=ROWS,
            )
        )
        conn.execute(
            sa.insert(_RUN_ROWS),
            [{"run_id": "run_1", "row_index": i, "data": _row(i)} for i in range(ROWS)],
        )
        conn.execute(
            sa.insert(_ROW_RESULTS),
            [
                {
                    "run_id": "run_1",
                    "check_index": 0,
                    "row_index": i,
                    "status": "ok",
                    "score": i % 2 == 0,
                    "score_num": float(i % 2 == 0),
                    "duration_ms": 1.0,
                }
                for i in range(ROWS)
            ],
        )


def test_a_run_stored_before_is_browsed_and_exported_after(
    database_url: str, make_api: AppFactory
) -> None:
    db = create_db_engine(database_url)
    try:
        upgrade(db, BEFORE)
        _store_a_run_before(db)
        upgrade(db)
        tables = set(inspect(db).get_table_names())
        assert "run_rows" not in tables and "run_row_blocks" in tables
        with db.connect() as conn:
            blocks = conn.execute(
                sa.text("SELECT row_start, row_stop FROM run_row_blocks ORDER BY row_start")
            ).all()
        assert [tuple(b) for b in blocks] == [(s, min(s + 100, ROWS)) for s in range(0, ROWS, 100)]

        api = make_api()
        headers = {"Authorization": f"Bearer {issue_key(api.store, 'ten_1').secret}"}
        assert api.store.load_rows("run_1", [0, 999, 1000, ROWS - 1]) == {
            i: _row(i) for i in (0, 999, 1000, ROWS - 1)
        }
        page = api.client.get("/v1/runs/run_1/results?offset=2500&limit=3", headers=headers)
        assert page.status_code == 200, page.text
        assert [r["row_index"] for r in page.json()["results"]] == [2500, 2501, 2502]
        ndjson = api.client.get(
            "/v1/runs/run_1/results?offset=1998&limit=4",
            headers={**headers, "Accept": "application/x-ndjson"},
        )
        lines = [json.loads(line) for line in ndjson.text.splitlines()]
        assert len(lines) == ROWS - 1998  # every result from the offset on
        assert lines[3]["model_output"] == "output 2001"
        exported = api.client.get(
            "/v1/runs/run_1/results", headers={**headers, "Accept": "text/csv"}
        )
        records = list(csv.DictReader(io.StringIO(exported.text)))
        assert len(records) == ROWS
        assert records[2502]["model_output"] == "output 2502 needle"
        # the dashboard's table: a text search in the model output, sorted by score too
        for sort in table.SORTS:
            found = table.read_page(db, "run_1", table.TableFilter(text="NEEDLE", sort=sort))
            assert sorted(r.row_index for r in found.rows) == [17, 2502], sort
            assert {r.model_output for r in found.rows} == {
                "output 17 needle",
                "output 2502 needle",
            }

        command.downgrade(alembic_config(db), BEFORE)
        assert current_revision(db) == BEFORE
        assert "run_row_blocks" not in set(inspect(db).get_table_names())
        with db.connect() as conn:
            back = dict(
                conn.execute(
                    sa.select(_RUN_ROWS.c.row_index, _RUN_ROWS.c.data).where(
                        _RUN_ROWS.c.run_id == "run_1"
                    )
                ).all()
            )
        assert back == {i: _row(i) for i in range(ROWS)}
        upgrade(db)
        assert api.store.load_rows("run_1", [17]) == {17: _row(17)}
    finally:
        db.dispose()
