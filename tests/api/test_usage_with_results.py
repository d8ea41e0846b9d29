"""A chunk's model usage is added to its run with each write of its results (SQLite and
PostgreSQL), so a worker killed mid-chunk loses the usage of no result it stored: the
rows whose results it had not written are scored, and metered, again. A chunk's meter
also writes within a quarter second of each call, results or not."""

from __future__ import annotations

import time

import pytest

from engine.contract import Status
from engine.llm.client import Completion, Usage
from engine.llm.usage import UsageMeter
from engine.models import RowResult
from engine.runs import work
from engine.runs.metrics import Metrics
from engine.runs.work import FLUSH_ROWS, USAGE_WRITE_SECONDS, ResultWriter, WrittenMeter
from engine.storage import new_id, open_store
from tests.conftest import queued_run


def _call(meter: UsageMeter) -> None:
    meter.record(Completion("yes", "m", Usage(prompt_tokens=7, completion_tokens=3)))


def test_usage_is_stored_with_each_write_of_results(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # writes come by row count only here: on a loaded machine 5,000 adds can take longer
    # than FLUSH_SECONDS, and a write by time would split the batches this test counts
    monkeypatch.setattr(work, "FLUSH_SECONDS", 3600.0)
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"usage-{new_id('t')}")
        rows = FLUSH_ROWS + 30
        run = queued_run(tenant.id, rows)
        store.create_run(run, ({"model_output": "x"} for _ in range(rows)), None)
        meter = UsageMeter()
        writer = ResultWriter(store, run.id, 0, Metrics(), meter=meter)
        for i in range(FLUSH_ROWS):  # one model call per row; the last add writes them
            _call(meter)
            writer.add(i, RowResult(status=Status.OK, score=True))
        stored = store.get_run(tenant.id, run.id).llm_usage
        assert stored is not None and stored["calls"] == FLUSH_ROWS, stored
        assert stored["total_tokens"] == 10 * FLUSH_ROWS
        # calls whose results are still buffered are not the run's yet: a kill -9 here
        # loses both, and the rows are scored (and metered) again by the next worker
        for i in range(FLUSH_ROWS, FLUSH_ROWS + 30):
            _call(meter)
            writer.add(i, RowResult(status=Status.OK, score=True))
        assert store.get_run(tenant.id, run.id).llm_usage == stored
        writer.flush()
        writer.flush()  # a second write adds nothing twice
        final = store.get_run(tenant.id, run.id).llm_usage
        assert final is not None and final["calls"] == FLUSH_ROWS + 30, final
        assert final["prompt_tokens"] == 7 * (FLUSH_ROWS + 30)
    finally:
        store.engine.dispose()


def test_a_chunks_calls_reach_the_run_within_a_quarter_second_without_results(
    database_url: str,
) -> None:
    """A worker killed while its rows' results are still buffered has already written
    the usage of the calls it made, but for the last quarter second's."""
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"usage-{new_id('t')}")
        run = queued_run(tenant.id, 10)
        store.create_run(run, ({"model_output": "x"} for _ in range(10)), None)
        meter = WrittenMeter()
        ResultWriter(store, run.id, 0, Metrics(), meter=meter)
        _call(meter)  # the first call comes less than USAGE_WRITE_SECONDS after the start
        assert store.get_run(tenant.id, run.id).llm_usage in (None, {})
        time.sleep(USAGE_WRITE_SECONDS + 0.05)
        _call(meter)  # ... this one writes both, with no result written at all
        stored = store.get_run(tenant.id, run.id).llm_usage
        assert stored is not None and stored["calls"] == 2, stored
        assert stored["total_tokens"] == 20
    finally:
        store.engine.dispose()
