"""A run's input rows (in blocks, ``engine.storage.run_blocks``) and results written straight
to the driver (``engine.storage.run_writes``) read back as they were given, on SQLite and
PostgreSQL: awkward text, blocks and batches past one statement, duplicates left out and
counted out."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import select

from engine.contract import Status
from engine.models import ResultColumns, Row, RowResult
from engine.storage import new_id, open_store
from engine.storage.records import StoredResult
from engine.storage.result_blocks import MODEL_CHARS, ResultArrays, concat, decode_block
from engine.storage.result_ranges import MAX_SPAN
from engine.storage.run_blocks import ROWS_PER_BLOCK
from engine.storage.run_writes import BLOCKS_PER_STATEMENT
from engine.storage.run_writes import ROWS_PER_BLOCK as RESULTS_PER_BLOCK
from engine.storage.tables import ResultBlockRow, RunRowBlock
from tests.conftest import queued_run

AWKWARD = "tab\there, newline\nthere, back\\slash, quote \" and ', é, 日本, 🙂"


def _blocks(store: Any, run_id: str, check_index: int) -> list[tuple[int, int, int]]:
    """``(row_start, row_stop, rows)`` of a check's stored result blocks."""
    with store.engine.connect() as conn:
        found = conn.execute(
            select(ResultBlockRow.row_start, ResultBlockRow.row_stop, ResultBlockRow.rows)
            .where(ResultBlockRow.run_id == run_id, ResultBlockRow.check_index == check_index)
            .order_by(ResultBlockRow.row_start)
        ).all()
    return [tuple(b) for b in found]


def _arrays(store: Any, run_id: str, check_index: int) -> ResultArrays:
    """A check's stored results, every block decoded, in row order."""
    with store.engine.connect() as conn:
        data = conn.scalars(
            select(ResultBlockRow.data)
            .where(ResultBlockRow.run_id == run_id, ResultBlockRow.check_index == check_index)
            .order_by(ResultBlockRow.row_start)
        ).all()
    arrays = concat([decode_block(d) for d in data])
    return arrays.take(np.argsort(arrays.row_index, kind="stable"))


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "model_output": f"{AWKWARD} {i}",
            "scenario_input": {"nested": [1, 2.5, None, True, {"k": AWKWARD}]},
            "metadata": {"i": i, "big": 2**60 + 1},
        }
        for i in range(n)
    ]


def test_input_rows_read_back_as_given(database_url: str) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        rows = _rows(2 * ROWS_PER_BLOCK + 3)  # two whole blocks and a short one
        run = queued_run(tenant.id, len(rows))
        store.create_run(run, iter(rows), None)
        every = store.load_rows(run.id, list(range(len(rows))))
        assert every == dict(enumerate(rows))
        wanted = [3, 201, 7, 199, 202, 100]
        assert store.load_rows(run.id, wanted) == {i: rows[i] for i in wanted}
        assert store.load_rows(run.id, [len(rows), 10**6]) == {}  # past the run's rows
        assert store.load_rows(run.id, []) == {}
        with store.engine.connect() as conn:
            blocks = conn.execute(
                select(RunRowBlock.row_start, RunRowBlock.row_stop)
                .where(RunRowBlock.run_id == run.id)
                .order_by(RunRowBlock.row_start)
            ).all()
        assert [tuple(b) for b in blocks] == [(0, 100), (100, 200), (200, 203)]
        assert store.missing_rows(run.id, 0) == list(range(len(rows)))
        store.save_results(
            run.id, [(0, i, RowResult(status=Status.OK, score=True)) for i in (0, 150)]
        )
        missing = store.missing_rows(run.id, 0)
        assert len(missing) == len(rows) - 2 and 0 not in missing and 150 not in missing
        # another check's results, all of them, leave this check's rows missing
        store.save_results(
            run.id,
            [(1, i, RowResult(status=Status.OK, score=True)) for i in range(len(rows))],
        )
        assert store.missing_rows(run.id, 1) == []
        assert store.missing_rows(run.id, 0) == missing
        store.save_results(
            run.id, [(0, i, RowResult(status=Status.OK, score=True)) for i in missing[:-1]]
        )
        assert store.missing_rows(run.id, 0) == [missing[-1]]
        # what orjson refuses to write goes through json, and reads back the same
        huge = [{"model_output": "x", "metadata": {"huge": 2**70 + 1, "low": -(2**70) - 1}}]
        other = queued_run(tenant.id, 1)
        store.create_run(other, iter(huge), None)
        assert store.load_rows(other.id, [0]) == {0: huge[0]}
    finally:
        store.engine.dispose()


def test_validated_rows_read_back_as_the_rows_they_were(database_url: str) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        given = [Row.model_validate(r) for r in _rows(5)]
        run = queued_run(tenant.id, len(given))
        store.create_run(run, (r.model_dump(mode="json") for r in given), None)  # as the service
        assert store.load_rows(run.id, range(5)) == {
            i: r.model_dump(mode="json") for i, r in enumerate(given)
        }
        assert [Row.stored(d) for d in store.load_rows(run.id, range(5)).values()] == given
    finally:
        store.engine.dispose()


def test_results_store_every_field_and_leave_out_duplicates(database_url: str) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        run = queued_run(tenant.id, 10, 2)
        store.create_run(run, ({"model_output": "x"} for _ in range(10)), None)
        full = RowResult(
            status=Status.OK,
            score=0.25,
            explanation=f"why\x00: {AWKWARD}",
            output="printed\x00",
            duration_ms=1.5,
            passed=True,
            metadata={"sub": {"x": 1}, "text": AWKWARD},
            model="m" * (MODEL_CHARS + 50),
        )
        bare = RowResult(status=Status.ERROR, error="Traceback\x00...", duration_ms=2.0)
        plain = RowResult(status=Status.OK, score=False)
        given = [(0, 0, full), (0, 1, bare), (0, 2, plain), (0, 2, plain)]  # one twice
        assert store.save_results(run.id, given) == 3
        assert store.save_results(run.id, given) == 0  # a retry inserts nothing
        assert store.get_run(tenant.id, run.id).results_done == 3
        stored = {r.row_index: r for r in store.results_page(run.id, 0, 10, check_index=0)}
        assert stored[0].score == 0.25 and stored[0].passed is True
        assert stored[0].explanation == f"why\ufffd: {AWKWARD}"
        assert stored[0].output == "printed\ufffd"
        assert stored[0].metadata == {"sub": {"x": 1}, "text": AWKWARD}
        assert stored[0].model == "m" * MODEL_CHARS
        assert stored[1].status == "error" and stored[1].score is None
        assert stored[1].error == "Traceback\ufffd..." and stored[1].metadata is None
        assert stored[2].score is False and stored[2].passed is None
        stats = store.score_stats(run.id, 0)
        assert stats.counts == {"ok": 2, "error": 1}
        assert stats.bool_scores == 1  # the stored JSON false is read as a bool score
        assert _blocks(store, run.id, 0) == [(0, 3, 3)]  # one block, the duplicate left out
        stored_scores = _arrays(store, run.id, 0).score
        assert stored_scores[[0, 2]].tolist() == [0.25, 0.0]  # what the dashboard sorts by
        assert np.isnan(stored_scores[1])
    finally:
        store.engine.dispose()


def test_result_columns_past_one_statement(database_url: str) -> None:
    n = 2 * RESULTS_PER_BLOCK + 7  # each write past one block, past one span
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        run = queued_run(tenant.id, n)
        store.create_run(run, ({"model_output": "x"} for _ in range(n)), None)
        half = list(range(0, n, 2))
        first = ResultColumns(half, ["ok"] * len(half), [True] * len(half), [0.1] * len(half), {})
        assert store.save_result_columns(run.id, [(0, first)]) == len(half)
        every = list(range(n))
        scores: list[bool | int | float | None] = [i for i in every]
        scores[1] = None
        block = ResultColumns(every, ["ok"] * n, scores, [0.2] * n, {1: {"error": "e"}})
        assert store.save_result_columns(run.id, [(0, block)]) == n - len(half)
        assert store.count_results(run.id) == n
        assert store.missing_rows(run.id, 0) == []
        page = store.results_page(run.id, 0, 4, check_index=0)
        assert [(r.row_index, r.score, r.error) for r in page] == [
            (0, True, None),  # the first write stays
            (1, None, "e"),
            (2, True, None),
            (3, 3, None),
        ]
        # each write's rows in blocks of their own, cut at a span of MAX_SPAN rows: the
        # second's missing rows interleave in range with the first's
        half_span = MAX_SPAN // 2
        assert _blocks(store, run.id, 0) == [
            (0, MAX_SPAN - 1, half_span),  # even rows 0 to MAX_SPAN - 2
            (1, MAX_SPAN, half_span),  # odd rows 1 to MAX_SPAN - 1
            (MAX_SPAN, 2 * MAX_SPAN - 1, half_span),
            (MAX_SPAN + 1, 2 * MAX_SPAN, half_span),
            (2 * MAX_SPAN, n, 4),
            (2 * MAX_SPAN + 1, n - 1, 3),
        ]
        arrays = _arrays(store, run.id, 0)
        assert arrays.row_index.tolist() == list(range(n))  # every row once
        # a block without extras stores what one with them stores for a bare result
        assert [arrays.stored(0, k) for k in (2, 3)] == [
            StoredResult(0, 2, "ok", True, None, None, None, 0.1, None, None, None),
            StoredResult(0, 3, "ok", 3, None, None, None, 0.2, None, None, None),
        ]
    finally:
        store.engine.dispose()


def test_result_blocks_span_at_most_max_span_rows(database_url: str) -> None:
    n = 3 * MAX_SPAN
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        run = queued_run(tenant.id, n)
        store.create_run(run, ({"model_output": "x"} for _ in range(n)), None)
        ok = RowResult(status=Status.OK, score=1)
        sparse = [0, 3, MAX_SPAN - 1, MAX_SPAN, 2 * MAX_SPAN + 10]
        assert store.save_results(run.id, [(0, i, ok) for i in sparse]) == 5
        assert _blocks(store, run.id, 0) == [
            (0, MAX_SPAN, 3),  # a span of MAX_SPAN rows, no more
            (MAX_SPAN, MAX_SPAN + 1, 1),
            (2 * MAX_SPAN + 10, 2 * MAX_SPAN + 11, 1),
        ]
        # the stored rows are found whichever block holds them, in or out of order
        again = [2 * MAX_SPAN + 10, 3, 4, MAX_SPAN - 1, MAX_SPAN + 1, 7]
        assert store.save_results(run.id, [(0, i, ok) for i in again]) == 3
        assert store.get_run(tenant.id, run.id).results_done == 8 == store.count_results(run.id)
        assert store.result_rows(run.id, 0, 2, MAX_SPAN + 2) == [
            3,
            4,
            7,
            MAX_SPAN - 1,
            MAX_SPAN,
            MAX_SPAN + 1,
        ]
        held = set(sparse) | set(again)
        assert store.missing_rows(run.id, 0) == [i for i in range(n) if i not in held]
        assert sorted(_arrays(store, run.id, 0).row_index.tolist()) == sorted(held)
    finally:
        store.engine.dispose()


def test_a_batch_of_more_blocks_than_one_statement_counts_them_all(database_url: str) -> None:
    checks = BLOCKS_PER_STATEMENT + 3  # a block a check: two INSERT statements
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writes-{new_id('t')}")
        run = queued_run(tenant.id, 2, checks)
        store.create_run(run, ({"model_output": "x"} for _ in range(2)), None)
        ok = RowResult(status=Status.OK, score=0.5)
        given = [(ci, i, ok) for ci in range(checks) for i in (1, 0)]
        assert store.save_results(run.id, given) == 2 * checks
        assert store.save_results(run.id, given) == 0
        assert store.get_run(tenant.id, run.id).results_done == 2 * checks
        assert store.count_results(run.id) == 2 * checks
        assert [_blocks(store, run.id, ci) for ci in (0, checks - 1)] == [[(0, 2, 2)]] * 2
    finally:
        store.engine.dispose()
