"""A finished run stays finished when a status write races with its end (SQLite, PostgreSQL).

The lost update this guards against: a run's first chunk read the run as queued and set it
running just after a cancel had committed, so the cancelled run stayed ``running`` for ever
(``test_runs.py::test_cancel_keeps_scored_rows`` saw it on a loaded machine).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from engine.storage import RunStatus, create_db_engine, new_id, open_store
from tests.conftest import queued_run


def test_a_cancel_that_commits_before_the_running_write_wins(database_url: str) -> None:
    store = open_store(database_url)
    other = create_db_engine(database_url)  # the cancelling request's connection
    try:
        tenant = store.create_tenant(f"status-{new_id('t')}")
        run = queued_run(tenant.id, 1)
        store.create_run(run, [{"model_output": "x"}], None)
        cancelled: list[str] = []

        def cancel_first(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            # Just before the store writes the run: a cancel from elsewhere commits.
            if not cancelled and statement.lstrip().upper().startswith("UPDATE RUNS"):
                cancelled.append(run.id)
                with other.begin() as conn:
                    conn.execute(
                        text("UPDATE runs SET status = 'cancelled' WHERE id = :id"), {"id": run.id}
                    )

        event.listen(store.engine, "before_cursor_execute", cancel_first)
        try:
            returned = store.set_run_status(run.id, RunStatus.RUNNING)
        finally:
            event.remove(store.engine, "before_cursor_execute", cancel_first)
        assert cancelled == [run.id]
        assert returned.status is RunStatus.CANCELLED
        assert store.get_run(tenant.id, run.id).status is RunStatus.CANCELLED
        # and an active run still moves, with its start time set once
        second = queued_run(tenant.id, 1)
        store.create_run(second, [{"model_output": "x"}], None)
        started = store.set_run_status(second.id, RunStatus.RUNNING)
        assert started.status is RunStatus.RUNNING and started.started_at is not None
        again = store.set_run_status(second.id, RunStatus.RUNNING)
        assert again.started_at == started.started_at
        done = store.set_run_status(second.id, RunStatus.FAILED, "boom")
        assert done.status is RunStatus.FAILED and done.error == "boom"
        assert done.finished_at is not None
        assert store.set_run_status(second.id, RunStatus.RUNNING).status is RunStatus.FAILED
    finally:
        store.engine.dispose()
        other.dispose()
