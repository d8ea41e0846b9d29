"""A run's results read back from its result blocks (SQLite and PostgreSQL): blocks whose
ranges interleave (a retried chunk) read in row order, pages cross block edges, a row's
results come from the blocks around it, a run with no results reads as empty, and a
finished run's decoded results are kept until its ``results_done`` moves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import score_stats as in_memory_stats
from engine.storage import RunStatus, SqlStore, new_id, open_store
from engine.storage.result_blocks import encode_block
from engine.storage.result_reads import check_page, check_results, read_results
from engine.storage.tables import ResultBlockRow, RunRow
from engine.tenancy.auth import create_tenant
from engine.web import table
from tests.api.conftest import Api
from tests.conftest import queued_run

ROWS = 10


def _run(store: SqlStore, rows: int = ROWS, checks: int = 2) -> str:
    tenant = store.create_tenant(f"reads-{new_id('t')}")
    run = queued_run(tenant.id, rows, checks)
    store.create_run(run, ({"model_output": f"out {i}"} for i in range(rows)), None)
    return run.id


def _block(run_id: str, check: int, rows: list[int]) -> dict[str, Any]:
    """A stored block of ``rows``: score ``row / 10``, explanation ``c{check} r{row}``."""
    return {
        "run_id": run_id,
        "check_index": check,
        "row_start": rows[0],
        "row_stop": rows[-1] + 1,
        "rows": len(rows),
        "data": encode_block(
            rows,
            ["ok"] * len(rows),
            [r / 10 for r in rows],
            [1.0] * len(rows),
            {k: {"explanation": f"c{check} r{r}"} for k, r in enumerate(rows)},
        ),
    }


def _interleaved(store: SqlStore, status: RunStatus = RunStatus.SUCCEEDED) -> str:
    """Check 0 in three blocks, two interleaving in range (0, 2, 4 | 1, 3 | 5..9); check 1
    in two contiguous blocks; the run in ``status`` with its 20 results counted."""
    run_id = _run(store)
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(ResultBlockRow),
            [
                _block(run_id, 0, [0, 2, 4]),
                _block(run_id, 0, [1, 3]),
                _block(run_id, 0, list(range(5, ROWS))),
                _block(run_id, 1, list(range(5))),
                _block(run_id, 1, list(range(5, ROWS))),
            ],
        )
        conn.execute(
            sa.update(RunRow)
            .where(RunRow.id == run_id)
            .values(status=status.value, results_done=2 * ROWS)
        )
    return run_id


def test_interleaved_blocks_read_back_in_row_order_and_by_range(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _interleaved(store)
        with store.engine.connect() as conn:
            whole = read_results(conn, run_id, 0)
            assert whole.row_index.tolist() == list(range(ROWS))
            assert [whole.stored(0, k).explanation for k in range(ROWS)] == [
                f"c0 r{r}" for r in range(ROWS)
            ]
            some = read_results(conn, run_id, 0, 3, 6)
            assert some.row_index.tolist() == [3, 4, 5]
            assert some.score.tolist() == [0.3, 0.4, 0.5]
            assert some.stored(0, 1).explanation == "c0 r4"
            assert len(read_results(conn, run_id, 0, ROWS, ROWS + 5)) == 0
        page = store.results_page(run_id, 2, 4, check_index=0)
        assert [(r.row_index, r.score, r.explanation) for r in page] == [
            (i, i / 10, f"c0 r{i}") for i in range(2, 6)
        ]
        both = store.results_page(run_id, 3, 5)
        assert [(r.row_index, r.check_index) for r in both] == [
            (1, 1),
            (2, 0),
            (2, 1),
            (3, 0),
            (3, 1),
        ]
        assert len(store.results_page(run_id, 0, 100)) == 2 * ROWS
        assert store.results_page(run_id, 2 * ROWS, 5) == []
        found = table.results_of_row(store.engine, run_id, 3)
        assert {c: (r.row_index, r.explanation) for c, r in found.items()} == {
            0: (3, "c0 r3"),
            1: (3, "c1 r3"),
        }
        assert table.results_of_row(store.engine, run_id, ROWS) == {}
    finally:
        store.engine.dispose()


def test_a_page_of_a_running_check_reads_the_blocks_that_hold_it(database_url: str) -> None:
    store = open_store(database_url)
    try:
        running = _interleaved(store, RunStatus.RUNNING)
        finished = _interleaved(store)
        for run_id in (running, finished):
            with store.engine.connect() as conn:
                for offset in range(ROWS + 2):
                    for limit in (1, 2, 3, 4, 6, 20):
                        page = check_page(conn, run_id, 0, offset, limit)
                        want = list(range(offset, min(ROWS, offset + limit)))
                        assert page.row_index.tolist() == want, (run_id, offset, limit)
                        assert [page.stored(0, k).explanation for k in range(len(page))] == [
                            f"c0 r{r}" for r in want
                        ]
                assert len(check_page(conn, run_id, 0, 0, 0)) == 0
                assert len(check_page(conn, run_id, 2, 0, 5)) == 0  # no such check
        with store.engine.connect() as conn:
            assert len(check_page(conn, "run_none", 0, 0, 5)) == 0
    finally:
        store.engine.dispose()


def _misaligned(store: SqlStore) -> str:
    """A running run whose two checks' blocks end at different rows."""
    run_id = _run(store)
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(ResultBlockRow),
            [
                _block(run_id, 0, [0, 1, 2]),
                _block(run_id, 0, [4, 5, 6, 7]),
                _block(run_id, 0, [9]),
                _block(run_id, 1, [0, 1, 2, 3, 4, 5]),
                _block(run_id, 1, [6, 8]),
            ],
        )
        conn.execute(
            sa.update(RunRow)
            .where(RunRow.id == run_id)
            .values(status=RunStatus.RUNNING.value, results_done=13)
        )
    return run_id


def test_a_page_of_every_check_reads_the_blocks_of_its_rows(database_url: str) -> None:
    store = open_store(database_url)
    try:
        for run_id in (
            _interleaved(store, RunStatus.RUNNING),
            _interleaved(store),
            _misaligned(store),
        ):
            with store.engine.connect() as conn:
                every = sorted(
                    (int(r), c)
                    for c in (0, 1)
                    for r in read_results(conn, run_id, c).row_index.tolist()
                )
            for offset in range(len(every) + 2):
                for limit in (1, 2, 3, 7, 50):
                    page = store.results_page(run_id, offset, limit)
                    got = [(r.row_index, r.check_index) for r in page]
                    assert got == every[offset : offset + limit], (run_id, offset, limit)
                    assert all(r.explanation == f"c{r.check_index} r{r.row_index}" for r in page)
    finally:
        store.engine.dispose()


def test_the_run_table_pages_across_block_edges(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _interleaved(store)
        for sort, expected in [
            ("row", list(range(ROWS))),
            ("score_asc", list(range(ROWS))),
            ("score_desc", list(reversed(range(ROWS)))),
        ]:
            for size in (1, 2, 3, 5):
                seen: list[int] = []
                cursor = None
                while True:
                    f = table.TableFilter(sort=sort)
                    page = table.read_page(store.engine, run_id, f, cursor, size)
                    seen += [r.row_index for r in page.rows]
                    assert all(r.model_output == f"out {r.row_index}" for r in page.rows)
                    if page.next_cursor is None:
                        break
                    cursor = page.next_cursor
                assert seen == expected, (sort, size)
        found = table.read_page(store.engine, run_id, table.TableFilter(text="C0 R7"))
        assert [(r.row_index, r.model_output) for r in found.rows] == [(7, "out 7")]
        exported = list(table.iter_filtered(store.engine, run_id, table.TableFilter(min_score=0.7)))
        assert [r.row_index for r in exported] == [7, 8, 9]
    finally:
        store.engine.dispose()


def test_a_run_with_no_results_reads_as_empty(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _run(store, rows=3, checks=1)
        assert store.results_page(run_id, 0, 10) == []
        assert store.results_page(run_id, 0, 10, check_index=0) == []
        stats = store.score_stats(run_id, 0)
        assert (stats.counts, stats.ok_count, stats.mean, stats.p50) == ({}, 0, None, None)
        assert store.score_histogram(run_id, 0) == []
        page = table.read_page(store.engine, run_id, table.TableFilter(sort="score_desc"))
        assert (page.rows, page.next_cursor) == ([], None)
        assert table.results_of_row(store.engine, run_id, 0) == {}
    finally:
        store.engine.dispose()


def test_stats_of_a_check_written_in_several_batches_equal_the_in_memory_ones(
    database_url: str,
) -> None:
    store = open_store(database_url)
    try:
        run_id = _run(store, rows=9, checks=1)
        results = [
            RowResult(status=Status.OK, score=True, passed=True),
            RowResult(status=Status.OK, score=2**60 + 1),
            RowResult(status=Status.ERROR, error="boom"),
            RowResult(status=Status.OK, score=0.5, passed=False),
            RowResult(status=Status.OK, score=None),
            RowResult(status=Status.TIMEOUT),
            RowResult(status=Status.OK, score=0.5),
            RowResult(status=Status.OK, score=-1.7e308),
            RowResult(status=Status.OK, score=1.7e308),
        ]
        for first in (6, 0, 3):  # three batches, out of order: three blocks
            batch = [(0, i, results[i]) for i in range(first, first + 3)]
            assert store.save_results(run_id, batch) == 3
        assert store.score_stats(run_id, 0) == in_memory_stats(results)
        page = store.results_page(run_id, 0, 9, check_index=0)
        assert [r.score for r in page] == [r.score for r in results]
        assert type(page[0].score) is bool and page[1].score == 2**60 + 1
        assert [(r.status, r.passed, r.error) for r in page][:4] == [
            ("ok", True, None),
            ("ok", None, None),
            ("error", None, "boom"),
            ("ok", False, None),
        ]
        bins = store.score_histogram(run_id, 0, bins=4)
        assert [n for _, n in bins] == [1, 0, 4, 1]
    finally:
        store.engine.dispose()


def test_a_finished_runs_results_are_kept_until_results_done_moves(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _run(store, rows=4, checks=1)
        ok = RowResult(status=Status.OK, score=1.0)
        store.save_results(run_id, [(0, 0, ok), (0, 1, ok)])
        with store.engine.connect() as conn:  # active: kept, with the blocks stored since
            first = check_results(conn, run_id, 0)
            assert check_results(conn, run_id, 0) is first
        store.save_results(run_id, [(0, 2, RowResult(status=Status.ERROR, error="next"))])
        with store.engine.connect() as conn:
            assert check_results(conn, run_id, 0).row_index.tolist() == [0, 1, 2]
        store.save_results(run_id, [(0, 2, RowResult(status=Status.OK, score=1.0))])  # stored
        store.set_run_status(run_id, RunStatus.CANCELLED)
        with store.engine.connect() as conn:
            kept = check_results(conn, run_id, 0)
            assert check_results(conn, run_id, 0) is kept
            assert kept.row_index.tolist() == [0, 1, 2]
        # a chunk still in flight when the run was cancelled lands a result late
        store.save_results(run_id, [(0, 3, RowResult(status=Status.ERROR, error="late"))])
        assert [r.row_index for r in store.results_page(run_id, 0, 10, 0)] == [0, 1, 2, 3]
        assert store.score_stats(run_id, 0).counts == {"ok": 2, "error": 2}
        with store.engine.connect() as conn:
            assert len(check_results(conn, "run_none", 0)) == 0
    finally:
        store.engine.dispose()


def test_kept_results_are_those_of_their_own_database(tmp_path: Path) -> None:
    """Two databases holding a run of the same id: each reads its own results."""
    scores = []
    for name, score in (("a", 0.25), ("b", 0.75)):
        store = open_store(f"sqlite:///{tmp_path / name}.db")
        try:
            tenant = store.create_tenant("same")
            run = replace(queued_run(tenant.id, 1), id="run_same")
            store.create_run(run, [{"model_output": "x"}], None)
            store.save_results(run.id, [(0, 0, RowResult(status=Status.OK, score=score))])
            store.set_run_status(run.id, RunStatus.SUCCEEDED)
            scores.append([r.score for r in store.results_page(run.id, 0, 5, 0)])
        finally:
            store.engine.dispose()
    assert scores == [[0.25], [0.75]]


def test_the_row_page_shows_each_checks_result_with_its_sub_scores(api: Api) -> None:
    new = create_tenant(api.store, f"rows-{new_id('t')}")
    run = replace(queued_run(new.tenant.id, 2, checks=2), status=RunStatus.SUCCEEDED)
    api.store.create_run(run, [{"model_output": "first"}, {"model_output": "second"}], None)
    judged = RowResult(
        status=Status.OK,
        score=0.75,
        explanation="mostly right",
        output="printed line",
        passed=True,
        metadata={"sub_scores": {"tone": {"score": 0.5, "reason": "curt"}}},
        model="judge-model",
    )
    failed = RowResult(status=Status.ERROR, error="Traceback: boom")
    api.store.save_results(run.id, [(0, 1, judged), (1, 1, failed)])
    reply = api.client.post("/ui/signin", data={"api_key": new.secret}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    page = api.client.get(f"/ui/runs/{run.id}/rows/1")
    assert page.status_code == 200, page.text
    assert 'aria-label="sub-scores of c0"' in page.text
    for shown in ("curt", "mostly right", "printed line", "judge-model", "Result metadata"):
        assert shown in page.text, shown
    assert "Traceback: boom" in page.text
    first = api.client.get(f"/ui/runs/{run.id}/rows/0").text
    assert first.count("Not scored yet.") == 2


def test_a_pages_inputs_are_read_for_rows_far_apart(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run_id = _run(store, rows=350, checks=1)
        wanted = [349, 0, 5, 150, 120, 0, 251]
        with store.engine.connect() as conn:
            found = table._inputs(conn, run_id, wanted)
        assert {i: d["model_output"] for i, d in found.items()} == {
            i: f"out {i}" for i in set(wanted)
        }
    finally:
        store.engine.dispose()
