"""A run stored before migration 0020 (its results one a database row, ``row_results``) is
browsed, exported, compared and summarised after it, from its results' blocks, on SQLite
and PostgreSQL, exactly as a run written by the block writer; going down gives the
results back one a database row, in the table and indexes 0019 left, and up again."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import inspect

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import summarize
from engine.storage import SqlStore
from engine.storage.database import alembic_config, create_db_engine, current_revision, upgrade
from engine.storage.records import RunCheck, StoredResult
from engine.storage.result_blocks import decode_block
from engine.storage.run_blocks import row_blocks
from engine.storage.tables import RunRow, TenantRow
from engine.tenancy.auth import issue_key
from engine.web import table
from tests.api.conftest import AppFactory

BEFORE = "0019"
AFTER = "0020"
ROWS = 2503
#: Check 1 has no result on these rows (a cancelled run's gaps): its blocks skip indices.
GAP = range(1200, 1300)
BIG = 2**53 + 1  # an int score a float cannot hold
MIGRATION = Path(__file__).parents[2] / "engine/migrations/versions/0020_run_result_blocks.py"

_ROW_RESULTS = sa.table(
    "row_results",
    sa.column("run_id", sa.String),
    sa.column("check_index", sa.Integer),
    sa.column("row_index", sa.Integer),
    sa.column("status", sa.String),
    sa.column("score", sa.JSON),
    sa.column("score_num", sa.Float),
    sa.column("explanation", sa.Text),
    sa.column("error", sa.Text),
    sa.column("output", sa.Text),
    sa.column("duration_ms", sa.Float),
    sa.column("passed", sa.Boolean),
    sa.column("result_metadata", sa.JSON),
    sa.column("model", sa.String),
)
_ROW_BLOCKS = sa.table(
    "run_row_blocks",
    sa.column("run_id"),
    sa.column("row_start"),
    sa.column("row_stop"),
    sa.column("rows"),
)
CHECKS = [
    RunCheck("code", "exact", 1, "chk_exact").to_json(),
    RunCheck("code", "graded", 2, "chk_graded").to_json(),
]
NOT_OK = [s for s in Status if s is not Status.OK]


def _input(i: int) -> dict[str, Any]:
    return {"id": f"r{i}", "model_output": f"output {i}", "scenario_input": {"q": i}}


def _result(check_index: int, i: int) -> RowResult | None:
    """The result of a check on row ``i`` (None: the row has none): every status, score
    kind and optional part, awkward text and a NUL the old writer replaced."""
    if check_index == 1 and (i in GAP or i % 10 == 9):
        return None
    duration = round(i * 0.37, 3) + check_index
    if i % 50 == 3:  # every status that is not ok, each several times
        status = NOT_OK[(i // 50 + check_index) % len(NOT_OK)]
        return RowResult(
            status=status,
            error=f"boom {i}\nTraceback: \ufffd tab\t'quote\"",
            output=f"printed {i} \ufffd" if i % 100 == 3 else None,
            duration_ms=duration,
        )
    if check_index == 0:
        score: bool | int | float = i % 3 != 0
        passed = (i % 14 == 0) if i % 7 == 0 else None
    else:
        score = (i, (i + 0.5) / 7, 0.5, -3)[i % 4]
        score = {2: BIG, 5: 3.0}.get(i, score)
        passed = None
    return RowResult(
        status=Status.OK,
        score=score,
        explanation=f'row {i}: tab\t "quoted" é 日本 \ufffd' if i % 5 == 0 else None,
        output=f"line\n{i}" if i % 11 == 0 else None,
        duration_ms=duration,
        passed=passed,
        metadata=(
            {"sub": {"a": i, "b": [1.5, None, "x"]}, "big": 2**64 + i} if i % 6 == 0 else None
        ),
        model=("m" * 200 if i == 8 else "judge-model") if i % 8 == 0 else None,
    )


def _results(check_index: int) -> dict[int, RowResult]:
    found = {i: _result(check_index, i) for i in range(ROWS)}
    return {i: r for i, r in found.items() if r is not None}


def _old_row(run_id: str, check_index: int, i: int, r: RowResult) -> dict[str, Any]:
    """A result as the writer before 0020 stored it in ``row_results``."""
    return {
        "run_id": run_id,
        "check_index": check_index,
        "row_index": i,
        "status": r.status.value,
        "score": r.score,
        "score_num": None if r.score is None else float(r.score),
        "explanation": r.explanation,
        "error": r.error,
        "output": r.output,
        "duration_ms": r.duration_ms,
        "passed": r.passed,
        "result_metadata": r.metadata,
        "model": r.model,
    }


def _store_run(conn: sa.Connection, run_id: str, done: int) -> None:
    now = datetime.now(UTC)
    conn.execute(
        sa.insert(RunRow).values(
            id=run_id,
            tenant_id="ten_1",
            status="succeeded",
            checks=CHECKS,
            limits=None,
            labels={},
            row_count=ROWS,
            created_at=now,
            finished_at=now,
            results_done=done,
        )
    )
    conn.execute(
        sa.insert(_ROW_BLOCKS),
        [
            {"run_id": run_id, "row_start": start, "row_stop": stop, "rows": text}
            for start, stop, text in row_blocks(_input(i) for i in range(ROWS))
        ],
    )


def _every_result() -> list[tuple[int, int, RowResult]]:
    return [(ci, i, r) for ci in (0, 1) for i, r in _results(ci).items()]


def _as_read(r: RowResult, dialect: str) -> RowResult:
    """``r`` as ``row_results`` read it back: SQLite's JSON column, of numeric affinity, held
    a whole float score (3.0) as an integer, read back 3; blocks keep what was read."""
    if dialect == "sqlite" and isinstance(r.score, float) and r.score.is_integer():
        return r.model_copy(update={"score": int(r.score)})
    return r


def _store_a_run_before(db: sa.Engine) -> None:
    with db.begin() as conn:
        conn.execute(
            sa.insert(TenantRow).values(
                id="ten_1", name="acme", quotas={}, created_at=datetime.now(UTC)
            )
        )
        _store_run(conn, "run_1", len(_every_result()))
        conn.execute(
            sa.insert(_ROW_RESULTS), [_old_row("run_1", ci, i, r) for ci, i, r in _every_result()]
        )


def _stored_results(db: sa.Engine, run_id: str = "run_1") -> dict[tuple[int, int], dict[str, Any]]:
    with db.connect() as conn:
        found = conn.execute(sa.select(_ROW_RESULTS).where(_ROW_RESULTS.c.run_id == run_id))
        return {(r.check_index, r.row_index): dict(r._mapping) for r in found}


def _schema(db: sa.Engine, name: str) -> dict[str, Any]:
    """What of a table's definition a migration must give back."""
    found = inspect(db)
    columns = [(c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(name)]
    indexes = sorted((i["name"], tuple(i["column_names"])) for i in found.get_indexes(name))
    keys = [
        (k["name"], tuple(k["constrained_columns"]), k["referred_table"], k["options"])
        for k in found.get_foreign_keys(name)
    ]
    return {
        "columns": columns,
        "primary key": found.get_pk_constraint(name),
        "foreign keys": keys,
        "indexes": indexes,
    }


def _expected_blocks() -> list[tuple[int, int, int, int]]:
    """(check, row_start, row_stop, rows) of each block: 1,000 results in row order each."""
    out = []
    for ci in (0, 1):
        indices = sorted(_results(ci))
        for k in range(0, len(indices), 1000):
            part = indices[k : k + 1000]
            out.append((ci, part[0], part[-1] + 1, len(part)))
    return out


def _blocks(db: sa.Engine) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        found = conn.execute(
            sa.text(
                "SELECT check_index, row_start, row_stop, rows, data FROM run_result_blocks "
                "WHERE run_id = 'run_1' ORDER BY check_index, row_start"
            )
        ).all()
    return [tuple(b) for b in found]


def _item(ci: int, i: int, r: RowResult) -> dict[str, Any]:
    """A result as ``GET /v1/runs/{id}/results`` answers it."""
    check = RunCheck.from_json(CHECKS[ci])
    return {
        "row_index": i,
        "row_id": f"r{i}",
        "check": check.name,
        "version": check.version,
        "check_id": check.id,
        **r.model_dump(
            mode="json",
            include={
                "status",
                "score",
                "explanation",
                "error",
                "output",
                "duration_ms",
                "passed",
                "metadata",
                "model",
            },
        ),
    }


def test_results_move_into_blocks_and_back(database_url: str) -> None:
    db = create_db_engine(database_url)
    try:
        upgrade(db, BEFORE)
        _store_a_run_before(db)
        before = _stored_results(db)
        assert len(before) == len(_every_result())
        schema = _schema(db, "row_results")
        assert len(schema["indexes"]) == 2  # the browse indexes of 0005

        upgrade(db, AFTER)
        assert current_revision(db) == AFTER
        tables = set(inspect(db).get_table_names())
        assert "row_results" not in tables and "run_result_blocks" in tables
        blocks = _blocks(db)
        assert [b[:4] for b in blocks] == _expected_blocks()
        assert any(rows < stop - start for _, start, stop, rows, _ in blocks)  # gaps kept
        moved = {}
        for ci, _, _, _, data in blocks:
            arrays = decode_block(bytes(data))
            for k in range(len(arrays)):
                stored = arrays.stored(ci, k)
                moved[ci, stored.row_index] = stored
        assert moved == {
            (ci, i): StoredResult(
                ci,
                i,
                r.status.value,
                r.score,
                r.explanation,
                r.error,
                r.output,
                r.duration_ms,
                r.passed,
                r.metadata,
                r.model,
            )
            for ci, i, r in _every_result()
        }
        # each score of the type the old table read back (SQLite's JSON column, of numeric
        # affinity, held 3.0 as the integer 3: it reads 3 before and after)
        assert {k: type(s.score) for k, s in moved.items()} == {
            k: type(r["score"]) for k, r in before.items()
        }
        assert type(moved[1, 5].score) is (int if db.dialect.name == "sqlite" else float)
        assert type(moved[1, 2].score) is int and moved[1, 2].score == BIG
        assert type(moved[0, 1].score) is bool and type(moved[1, 1].score) is float
        with db.connect() as conn:
            done = conn.execute(sa.select(RunRow.results_done)).scalar_one()
        assert done == len(before)  # the run's count is left as it was

        command.downgrade(alembic_config(db), BEFORE)
        assert current_revision(db) == BEFORE
        assert "run_result_blocks" not in set(inspect(db).get_table_names())
        assert _schema(db, "row_results") == schema
        assert _stored_results(db) == before

        upgrade(db, AFTER)
        assert [b[:4] for b in _blocks(db)] == _expected_blocks()
    finally:
        db.dispose()


def test_results_written_in_blocks_go_down_as_rows(database_url: str) -> None:
    """Blocks the writer stored after 0020, a retry's interleaving with the first write's,
    go down one result a database row, each once."""
    db = create_db_engine(database_url)
    try:
        upgrade(db, BEFORE)
        _store_a_run_before(db)
        upgrade(db, AFTER)
        with db.begin() as conn:
            _store_run(conn, "run_2", 0)
        store = SqlStore(db)
        every = [(ci, i, _as_read(r, db.dialect.name)) for ci, i, r in _every_result()]
        first = [(ci, i, r) for ci, i, r in every if ci == 0 and i % 2 == 0]
        assert store.save_results("run_2", first) == len(first)
        assert store.save_results("run_2", every) == len(every) - len(first)
        with db.connect() as conn:
            spans = conn.execute(
                sa.text(
                    "SELECT row_start, row_stop, rows FROM run_result_blocks "
                    "WHERE run_id = 'run_2' AND check_index = 0"
                )
            ).all()
        assert sorted(r for _, _, r in spans) == sorted([len(first), ROWS - len(first)])
        assert all(rows < stop - start for start, stop, rows in spans)  # they interleave

        command.downgrade(alembic_config(db), BEFORE)
        assert _stored_results(db, "run_2") == {
            (ci, i): _old_row("run_2", ci, i, r) for ci, i, r in every
        }
        assert _stored_results(db, "run_1") == {
            (ci, i): _old_row("run_1", ci, i, r) for ci, i, r in every
        }
    finally:
        db.dispose()


def test_a_moved_run_is_browsed_exported_compared_and_summarised(
    database_url: str, make_api: AppFactory
) -> None:
    """The moved run (``run_1``) read through the API, beside a run written after 0020 with
    the same results (``run_2``, by the block writer)."""
    db = create_db_engine(database_url)
    try:
        upgrade(db, BEFORE)
        _store_a_run_before(db)
        upgrade(db)
        every = [(ci, i, _as_read(r, db.dialect.name)) for ci, i, r in _every_result()]
        with db.begin() as conn:
            _store_run(conn, "run_2", 0)
    finally:
        db.dispose()
    api = make_api()
    headers = {"Authorization": f"Bearer {issue_key(api.store, 'ten_1').secret}"}
    assert api.store.save_results("run_2", every) == len(every)

    in_order = sorted(((i, ci, r) for ci, i, r in every), key=lambda t: (t[0], t[1]))
    page = api.client.get("/v1/runs/run_1/results?limit=10000", headers=headers)
    assert page.status_code == 200, page.text
    assert page.json()["results"] == [_item(ci, i, r) for i, ci, r in in_order]
    graded = api.client.get("/v1/runs/run_1/results?check=graded&offset=2&limit=1", headers=headers)
    assert graded.json()["results"][0]["score"] == BIG  # exact, not the float next to it

    for accept in ("application/x-ndjson", "text/csv"):
        exported = {
            run: api.client.get(f"/v1/runs/{run}/results", headers={**headers, "Accept": accept})
            for run in ("run_1", "run_2")
        }
        assert exported["run_1"].status_code == 200, exported["run_1"].text
        assert exported["run_1"].text == exported["run_2"].text, accept
        if accept == "text/csv":
            records = list(csv.DictReader(io.StringIO(exported["run_1"].text)))
        else:
            records = [json.loads(line) for line in exported["run_1"].text.splitlines()]
        assert [(int(r["row_index"]), r["check"], r["status"]) for r in records] == [
            (i, CHECKS[ci]["name"], r.status.value) for i, ci, r in in_order
        ], accept

    runs = {
        run: api.client.get(f"/v1/runs/{run}", headers=headers).json() for run in ("run_1", "run_2")
    }
    for ci, summary in enumerate(runs["run_1"]["summary"]):
        wanted = summarize(_results(ci).values(), CHECKS[ci]["name"])
        assert summary["counts"] == wanted.counts
        assert summary["scored"] == wanted.scored
        assert summary["pass_rate"] == pytest.approx(wanted.pass_rate)
        assert summary["mean"] == pytest.approx(wanted.mean)
        assert (summary["min"], summary["max"]) == (wanted.min, wanted.max)
        assert summary["p50"] == pytest.approx(wanted.p50)
    counted = set(runs["run_1"]["summary"][0]["counts"]) | set(
        runs["run_1"]["summary"][1]["counts"]
    )
    assert counted == {s.value for s in Status}
    assert runs["run_1"]["summary"] == runs["run_2"]["summary"]
    assert runs["run_1"]["progress"] == runs["run_2"]["progress"]

    # the dashboard's run table: filters, sorts and a text search; a row's results
    engine = api.store.engine
    for ci in (0, 1):
        for f in (
            table.TableFilter(ci),
            table.TableFilter(ci, status="error"),
            table.TableFilter(ci, min_score=0.5, max_score=100.0, sort="score_desc"),
            table.TableFilter(ci, text="QUOTED", sort="score_asc"),
        ):
            pages = {run: table.read_page(engine, run, f, limit=5000) for run in ("run_1", "run_2")}
            assert pages["run_1"] == pages["run_2"], f
            assert pages["run_1"].rows, f
        errors = table.read_page(engine, "run_1", table.TableFilter(ci, status="error"))
        assert [r.row_index for r in errors.rows] == [
            i for i, r in _results(ci).items() if r.status is Status.ERROR
        ]
    assert table.results_of_row(engine, "run_1", 2) == table.results_of_row(engine, "run_2", 2)
    assert table.results_of_row(engine, "run_1", 2)[1].score == BIG

    compared = api.client.get("/v1/runs/run_1/compare/run_2", headers=headers)
    assert compared.status_code == 200, compared.text
    body = compared.json()
    assert (body["matched_by"], body["matched"]) == ("id", ROWS)
    assert [c["check"] for c in body["checks"]] == ["exact", "graded"]
    for check in body["checks"]:
        assert check["changed_total"] == 0, check["changed"]
        assert (check["mean_a"], check["pass_rate_a"]) == (check["mean_b"], check["pass_rate_b"])
    assert body["checks"][1]["mean_a"] == pytest.approx(runs["run_1"]["summary"][1]["mean"])


def _migration() -> Any:
    """The migration's module, loaded apart from alembic so that its sizes can be set."""
    spec = importlib.util.spec_from_file_location("migration_0020", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_results_move_in_reads_of_a_few_and_blocks_of_at_most_so_many(
    database_url: str,
) -> None:
    """The move reads a check's results a statement at a time on the primary key and cuts
    them into blocks of so many results spanning so many rows at most, whatever the sizes:
    none is lost or read twice at a read's edge, and a block is cut only when it must be."""
    migration = _migration()
    migration.READ, migration.ROWS_PER_BLOCK, migration.MAX_SPAN = 7, 10, 10
    db = create_db_engine(database_url)
    try:
        upgrade(db, BEFORE)
        _store_a_run_before(db)
        with db.connect() as conn:
            found = {ci: list(migration._blocks(conn, "run_1", ci)) for ci in (0, 1)}
    finally:
        db.dispose()
    cuts = []
    for ci, blocks in found.items():
        held = [[int(i) for i in decode_block(b["data"]).row_index] for b in blocks]
        assert [i for rows in held for i in rows] == sorted(_results(ci)), ci
        for block, rows in zip(blocks, held, strict=True):
            assert (block["row_start"], block["row_stop"], block["rows"]) == (
                rows[0],
                rows[-1] + 1,
                len(rows),
            )
            assert len(rows) <= 10 and block["row_stop"] - block["row_start"] <= 10
        cuts += [
            "full" if len(rows) == 10 else "span"
            for rows, after in pairwise(held)
            if len(rows) == 10 or after[0] - rows[0] >= 10
        ]
    # every block but a check's last was full or had to end: check 0's rows follow one
    # another (cut full), check 1 skips one row in ten (cut by the span)
    assert len(cuts) == sum(len(b) - 1 for b in found.values())
    assert {"full", "span"} <= set(cuts)
