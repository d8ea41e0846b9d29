"""A chunk's model usage is added to its run with each write of its results (SQLite and
PostgreSQL), so a worker killed mid-chunk loses the usage of no result it stored: the
rows whose results it had not written are scored, and metered, again."""

from __future__ import annotations

from engine.contract import Status
from engine.llm.client import Completion, Usage
from engine.llm.usage import UsageMeter
from engine.models import RowResult
from engine.runs.metrics import Metrics
from engine.runs.work import FLUSH_ROWS, ResultWriter
from engine.storage import new_id, open_store
from tests.conftest import queued_run


def _call(meter: UsageMeter) -> None:
    meter.record(Completion("yes", "m", Usage(prompt_tokens=7, completion_tokens=3)))


def test_usage_is_stored_with_each_write_of_results(database_url: str) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"usage-{new_id('t')}")
        run = queued_run(tenant.id, 200)
        store.create_run(run, ({"model_output": "x"} for _ in range(200)), None)
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
