"""Writers of one run's results at the same time (SQLite and PostgreSQL): rows that several
of them write are stored once, in blocks that never hold a row twice, and the run's
``results_done`` counts exactly the results stored (``engine/storage/run_writes.py``)."""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
from sqlalchemy import select

from engine.contract import Status
from engine.models import ResultColumns, RowResult
from engine.storage import new_id, open_store
from engine.storage.result_blocks import decode_block
from engine.storage.tables import ResultBlockRow
from tests.conftest import queued_run

ROWS = 600
WRITERS = 4
BATCH = 40


def _batches(writer: int) -> list[list[int]]:
    """The rows one writer saves, in batches: every writer covers every row, at its own
    offset and in its own order, so every batch overlaps other writers' batches."""
    rows = [(i + writer * 17) % ROWS for i in range(ROWS)]
    batches = [rows[i : i + BATCH] for i in range(0, ROWS, BATCH)]
    random.Random(writer).shuffle(batches)
    return [sorted(b) if writer % 2 else b for b in batches]


def test_concurrent_writers_store_each_row_once(database_url: str) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"writers-{new_id('t')}")
        run = queued_run(tenant.id, ROWS, 2)
        store.create_run(run, ({"model_output": "x"} for _ in range(ROWS)), None)
        start = threading.Barrier(WRITERS)
        inserted = [0] * WRITERS
        failures: list[BaseException] = []

        def write(writer: int) -> None:
            try:
                start.wait()
                for batch in _batches(writer):
                    if writer % 2:  # the block path: columns, one check each
                        block = ResultColumns(
                            batch,
                            ["ok"] * len(batch),
                            [float(writer)] * len(batch),
                            [1.0] * len(batch),
                            {0: {"explanation": f"writer {writer}"}},
                        )
                        inserted[writer] += store.save_result_columns(
                            run.id, [(0, block), (1, block)]
                        )
                    else:  # the row path, both checks in one batch, a row given twice
                        results: list[tuple[int, int, RowResult]] = [
                            (ci, i, RowResult(status=Status.OK, score=writer))
                            for i in batch
                            for ci in (0, 1)
                        ]
                        results.append(results[0])
                        inserted[writer] += store.save_results(run.id, results)
            except BaseException as exc:  # reported by the main thread
                failures.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures
        assert sum(inserted) == 2 * ROWS  # each (check, row) inserted by exactly one writer
        assert store.get_run(tenant.id, run.id).results_done == 2 * ROWS
        assert store.count_results(run.id) == 2 * ROWS
        for check_index in (0, 1):
            held = _stored_rows(store, run.id, check_index)
            assert len(held) == ROWS and sorted(held) == list(range(ROWS))  # none twice
            assert store.missing_rows(run.id, check_index) == []
            assert store.result_rows(run.id, check_index, 100, 200) == list(range(100, 200))
        # a retry of everything stores nothing and counts nothing
        every = [
            (ci, i, RowResult(status=Status.OK, score=1)) for i in range(ROWS) for ci in (0, 1)
        ]
        assert store.save_results(run.id, every) == 0
        assert store.get_run(tenant.id, run.id).results_done == 2 * ROWS
    finally:
        store.engine.dispose()


def _stored_rows(store: Any, run_id: str, check_index: int) -> list[int]:
    """Every row index of a check's stored blocks, as often as the blocks hold it."""
    with store.engine.connect() as conn:
        data = conn.scalars(
            select(ResultBlockRow.data).where(
                ResultBlockRow.run_id == run_id, ResultBlockRow.check_index == check_index
            )
        ).all()
    parts = [decode_block(d).row_index for d in data]
    return [int(i) for i in np.concatenate(parts)] if parts else []
