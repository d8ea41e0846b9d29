"""A chunk's consecutive input rows load straight into the sandbox's columns: the job they
encode, and every row read back from them, equal what the rows' Rows give, for rows stored
as sent and as whole dumps, on SQLite and PostgreSQL; rows the store cannot give as columns
(a gap, a row that is neither) give None, and the chunk makes its Rows the usual way."""

from __future__ import annotations

from typing import Any

from engine.contract import Status
from engine.models import Row, RowResult
from engine.row_dumps import StoredRows
from engine.sandbox.columns import dump_row_columns, loaded_columns
from engine.storage import SqlStore, open_store
from tests.conftest import queued_run

#: Rows of several shapes, as a submission sends them (past one block of 100).
SENT: list[dict[str, Any]] = [
    {"model_output": f"o{i}"}
    | ({"id": i} if i % 3 == 0 else {})
    | ({"metadata": {"k": i}} if i % 5 == 0 else {})
    | ({"scenario_input": None} if i % 7 == 0 else {})
    | ({"scenario_result": {"n": [i, None]}} if i % 11 == 0 else {})
    for i in range(230)
]


def _stored(store: SqlStore, rows: Any, tenant_name: str = "t") -> str:
    tenant = store.create_tenant(tenant_name)
    run = queued_run(tenant.id, len(rows))
    store.create_run(run, rows, None)
    return run.id


def _columns(store: SqlStore, run_id: str, start: int, stop: int) -> dict[str, Any] | None:
    """The columns of rows ``start`` to ``stop - 1`` of a run with no result yet."""
    pending, found = store.pending_row_columns(run_id, 0, start, stop)
    assert pending == list(range(start, stop))
    return found


def _same_as_rows(store: SqlStore, run_id: str, start: int, stop: int) -> None:
    found = _columns(store, run_id, start, stop)
    assert found is not None
    columns = loaded_columns(found)
    loaded = store.load_rows(run_id, range(start, stop))
    rows = [Row.stored(loaded[i]) for i in range(start, stop)]
    assert list(columns) == rows
    assert columns.dump_columns() == dump_row_columns(rows)


def test_rows_stored_as_sent_load_as_the_columns_of_their_rows(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _stored(store, StoredRows([dict(row) for row in SENT]))
        for start, stop in ((0, 230), (0, 1), (95, 205), (100, 200), (199, 230), (3, 4)):
            _same_as_rows(store, run_id, start, stop)
        found = _columns(store, run_id, 1, 3)  # only model_output in both rows
        assert found is not None and set(found) == {"model_output"}
        assert _columns(store, run_id, 200, 231) is None  # past the last row
        assert _columns(store, run_id, 5, 5) is None
    finally:
        store.engine.dispose()


def test_whole_dumps_load_as_columns_and_other_rows_do_not(database_url: str) -> None:
    store = open_store(database_url)
    try:
        whole = [Row.model_validate(row).model_dump(mode="json") for row in SENT]
        run_id = _stored(store, whole)
        _same_as_rows(store, run_id, 90, 130)
        partial = _stored(store, [dict(row) for row in SENT[:10]], "u")  # not vouched as sent
        assert _columns(store, partial, 0, 10) is None
        assert _columns(store, partial, 1, 3) is None
    finally:
        store.engine.dispose()


def test_rows_with_a_result_are_left_out_and_a_gap_gives_no_columns(
    database_url: str,
) -> None:
    store = open_store(database_url)
    try:
        run_id = _stored(store, StoredRows([dict(row) for row in SENT]))
        ok = RowResult(status=Status.OK, score=1.0)
        store.save_results(run_id, [(0, 0, ok), (0, 1, ok), (1, 5, ok)])
        pending, found = store.pending_row_columns(run_id, 0, 0, 10)
        assert pending == list(range(2, 10)) and found is not None
        assert found["model_output"] == [f"o{i}" for i in range(2, 10)]
        pending, found = store.pending_row_columns(run_id, 1, 0, 10)  # another check's
        assert pending == [0, 1, 2, 3, 4, 6, 7, 8, 9] and found is None
    finally:
        store.engine.dispose()
