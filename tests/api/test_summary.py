"""One run-summary rule: a stored run's summary equals the in-memory one (SQLite, PostgreSQL)."""

from __future__ import annotations

import pytest

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import from_stats, summarize
from engine.storage import Run, RunCheck, RunStatus, new_id, open_store, utcnow

CASES = [
    pytest.param([True, False, True], id="all-bool"),
    pytest.param([1, 0.5, 2], id="numbers"),
    # the first row is a bool, the rest are not: no pass rate (the database once sampled one row)
    pytest.param([True, 0.5, 0], id="bool-first-then-numbers"),
    pytest.param([0.5, True], id="number-first-then-bool"),
]


@pytest.mark.parametrize("scores", CASES)
def test_stored_summary_equals_in_memory_summary(
    database_url: str, scores: list[bool | int | float]
) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"summary-{new_id('t')}")
        run = Run(
            id=new_id("run"),
            tenant_id=tenant.id,
            status=RunStatus.QUEUED,
            checks=[RunCheck("code", "c", 1, "chk_c")],
            limits=None,
            labels={},
            row_count=len(scores) + 1,
            error=None,
            created_at=utcnow(),
            started_at=None,
            finished_at=None,
        )
        store.create_run(run, ({"model_output": "x"} for _ in range(run.row_count)), None)
        results = [RowResult(row_id=i, status=Status.OK, score=s) for i, s in enumerate(scores)]
        results.append(RowResult(row_id=len(scores), status=Status.ERROR, error="boom"))
        store.save_results(run.id, [(0, i, r) for i, r in enumerate(results)])
        stored = from_stats(store.score_stats(run.id, 0), "c", 1, "chk_c", "code")
        assert stored == summarize(results, "c", 1, "chk_c", "code")
        is_bool = all(isinstance(s, bool) for s in scores)
        assert (stored.pass_rate is not None) == is_bool
    finally:
        store.engine.dispose()
