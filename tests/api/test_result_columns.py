"""Results stored from a sandbox block as columns equal the same results stored a
RowResult a row (SQLite and PostgreSQL): the service path's block route loses nothing,
the serving model included."""

from __future__ import annotations

from typing import Any

from engine.sandbox.blocks import BlockRecord
from engine.storage import new_id, open_store
from tests.conftest import queued_run
from tests.unit.test_blocks import MIX, failed, frame, ok


def test_columns_and_row_results_store_the_same(database_url: str) -> None:
    records: list[dict[str, Any]] = [
        *MIX,
        {**ok(8, True, "bool"), "explanation": "a\x00b"},  # a NUL never fails the write
        failed(9, "error", "Traceback\x00..."),
        {**ok(10, 0.5, "float"), "passed": False, "metadata": {"sub": {"x": 1}}},
    ]
    block = BlockRecord.model_validate(frame(records)).block
    block.served_by.update({0: "judge-a", 10: "judge-b, judge-c"})  # the gateway's models
    rows = list(range(100, 100 + len(records)))  # the rows' indices in their run
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"columns-{new_id('t')}")
        run = queued_run(tenant.id, 200, 2)
        store.create_run(run, ({"model_output": "x"} for _ in range(200)), None)
        per_row = [(0, i, block.row_result(k, None, "c", 1)) for k, i in enumerate(rows)]
        assert store.save_results(run.id, per_row) == len(records)
        assert store.save_result_columns(run.id, [(1, block.columns(rows))]) == len(records)
        assert store.save_result_columns(run.id, [(1, block.columns(rows))]) == 0  # a retry
        stored = store.results_page(run.id, 0, 1000)
        by_check: dict[int, list[tuple[Any, ...]]] = {0: [], 1: []}
        for result in stored:
            fields = (
                result.row_index,
                result.status,
                result.score,
                result.explanation,
                result.error,
                result.output,
                result.duration_ms,
                result.passed,
                result.metadata,
                result.model,
            )
            by_check[result.check_index].append(fields)
        assert by_check[0] == by_check[1]
        assert len(by_check[1]) == len(records)
        scores = {row[0]: row[2] for row in by_check[1]}
        assert scores[106] == 2**60 + 1  # exact, though the block's column is a float
        assert [row[1] for row in by_check[1]][:4] == ["ok", "ok", "ok", "error"]
        models = {row[0]: row[9] for row in by_check[1] if row[9] is not None}
        assert models == {100: "judge-a", 110: "judge-b, judge-c"}  # kept on both paths
    finally:
        store.engine.dispose()
