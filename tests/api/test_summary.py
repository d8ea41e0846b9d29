"""One run-summary rule: a stored run's summary equals the in-memory one (SQLite, PostgreSQL);
a finished run's summary is stored once and followed by results that land later."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import from_stats, run_summary, summarize
from engine.storage import (
    Run,
    RunCheck,
    RunStatus,
    SqlStore,
    create_db_engine,
    new_id,
    open_store,
    upgrade,
    utcnow,
)
from tests.conftest import queued_run

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


def _run(store: SqlStore, rows: int, checks: int = 1) -> Run:
    tenant = store.create_tenant(f"summary-{new_id('t')}")
    run = queued_run(tenant.id, rows, checks)
    store.create_run(run, ({"model_output": "x"} for _ in range(rows)), None)
    return run


def _ok(score: bool | float) -> RowResult:
    return RowResult(status=Status.OK, score=score)


def test_results_done_counts_each_stored_result_once(database_url: str) -> None:
    store = open_store(database_url)
    try:
        run = _run(store, 4, checks=2)
        batch = [(0, i, _ok(True)) for i in range(3)]
        assert store.save_results(run.id, batch) == 3
        assert store.save_results(run.id, batch) == 0  # a retried chunk: nothing new
        assert store.save_results(run.id, [(1, 0, _ok(0.5)), (0, 2, _ok(False))]) == 1
        got = store.get_run(run.tenant_id, run.id)
        assert got.results_done == 4 == store.count_results(run.id)
    finally:
        store.engine.dispose()


def test_a_finished_runs_summary_is_stored_and_recomputed_when_a_result_lands_later(
    database_url: str,
) -> None:
    store = open_store(database_url)
    try:
        run = _run(store, 5)
        store.save_results(run.id, [(0, i, _ok(i / 4)) for i in range(3)])
        active = run_summary(store, store.get_run(run.tenant_id, run.id))
        assert active.checks[0].counts == {"ok": 3}
        assert store.get_run(run.tenant_id, run.id).summary is None  # running: never stored
        # cancelled with a chunk still in flight
        cancelled = store.set_run_status(run.id, RunStatus.CANCELLED)
        first = run_summary(store, cancelled)
        assert first.done == 3 and first.checks[0].counts == {"ok": 3}
        assert first.histograms[0] and sum(n for _, n in first.histograms[0]) == 3
        stored = store.get_run(run.tenant_id, run.id).summary
        assert stored is not None and stored["done"] == 3
        # what is stored is what is served: nothing is recomputed from the results
        with store.engine.begin() as conn:
            conn.execute(text("DELETE FROM run_result_blocks WHERE run_id = :r"), {"r": run.id})
        assert run_summary(store, store.get_run(run.tenant_id, run.id)) == first
        # the chunk in flight writes a result after the cancel: the summary follows
        store.save_results(run.id, [(0, 3, RowResult(status=Status.ERROR, error="late"))])
        later = run_summary(store, store.get_run(run.tenant_id, run.id))
        assert later.checks[0].counts == {"error": 1}
        # 1 result stored, but the counter says 4 (results were deleted behind its back):
        # such a summary is served, never stored
        assert later.done == 4
        assert store.get_run(run.tenant_id, run.id).summary == stored
    finally:
        store.engine.dispose()


def test_migration_0006_counts_the_results_of_existing_runs(tmp_path: Any) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        upgrade(engine, "0005")
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO tenants (id, name, quotas, created_at) "
                    "VALUES ('t1', 't1', '{}', '2026-01-01')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO runs (id, tenant_id, status, checks, labels, row_count, "
                    "created_at) VALUES ('r1', 't1', 'succeeded', '[]', '{}', 3, '2026-01-01')"
                )
            )
            for i in range(3):
                conn.execute(
                    text(
                        "INSERT INTO row_results (run_id, check_index, row_index, status, "
                        "duration_ms) VALUES ('r1', 0, :i, 'ok', 1.0)"
                    ),
                    {"i": i},
                )
        upgrade(engine)
        store = SqlStore(engine)
        assert store.get_run("t1", "r1").results_done == 3
    finally:
        engine.dispose()


def test_a_running_runs_summary_is_computed_again_only_when_new_and_not_too_costly(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.runs import summary as summary_module

    store = open_store(database_url)
    scans: list[str] = []
    score_stats = store.score_stats

    def counted(run_id: str, check_index: int) -> Any:
        scans.append(run_id)
        return score_stats(run_id, check_index)

    monkeypatch.setattr(store, "score_stats", counted)
    now = [1000.0]
    monkeypatch.setattr(summary_module, "_clock", lambda: now[0])
    try:
        run = _run(store, 10)
        store.set_run_status(run.id, RunStatus.RUNNING)
        store.save_results(run.id, [(0, i, _ok(0.5)) for i in range(3)])

        def view() -> Any:
            return run_summary(store, store.get_run(run.tenant_id, run.id))

        first = view()
        assert first.checks[0].counts == {"ok": 3} and len(scans) == 1
        assert view() == first and len(scans) == 1  # nothing new: served as it was

        store.save_results(run.id, [(0, 3, _ok(1.0))])
        assert view().checks[0].counts == {"ok": 4} and len(scans) == 2  # cheap: fresh

        # a summary that took 2 s to compute is served for up to 4 x 2 s after it
        real = summary_module.from_stats

        def slow(*args: Any) -> Any:
            now[0] += 2.0
            return real(*args)

        monkeypatch.setattr(summary_module, "from_stats", slow)
        store.save_results(run.id, [(0, 4, _ok(1.0))])
        costly = view()
        assert costly.checks[0].counts == {"ok": 5} and len(scans) == 3
        store.save_results(run.id, [(0, 5, _ok(1.0))])
        now[0] += 7.0
        assert view() == costly and len(scans) == 3  # 7 s old, cost 2 s: still served
        now[0] += 2.0
        assert view().checks[0].counts == {"ok": 6} and len(scans) == 4  # 9 s: computed

        # once finished, the kept summary is never served: the stored one is exact
        finished = store.set_run_status(run.id, RunStatus.SUCCEEDED)
        assert run_summary(store, finished).checks[0].counts == {"ok": 6}
        assert run.id not in summary_module._active
    finally:
        store.engine.dispose()


def test_a_running_runs_done_count_is_current_while_its_summary_is_kept(
    database_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GET /v1/runs/{id} (what `scorebox run` follows) reports `done`: it must not wait for
    # the kept summary to be recomputed, only the per-check figures may lag.
    from engine.builtins import build_builtins
    from engine.runs import summary as summary_module
    from engine.runs.executors import CodeExecutor, Executors, RunnerHolder
    from engine.runs.metrics import Metrics
    from engine.runs.service import RunService
    from engine.tenancy.auth import Principal
    from tests.api.conftest import api_settings

    monkeypatch.setattr(summary_module, "STALE_FACTOR", 1e9)  # the kept summary is served
    settings = api_settings(database_url, tmp_path)
    store = open_store(settings.effective_database_url)
    try:
        node = RunService(
            settings,
            store,
            Executors(CodeExecutor(RunnerHolder(settings))),
            Metrics(),
            build_builtins(),
        )  # not started: only the test writes results
        tenant = store.create_tenant(f"summary-{new_id('t')}")
        run = queued_run(tenant.id, 10)
        store.create_run(run, ({"model_output": "x"} for _ in range(10)), None)
        store.set_run_status(run.id, RunStatus.RUNNING)
        store.save_results(run.id, [(0, i, _ok(0.5)) for i in range(3)])
        principal = Principal(tenant, None)
        _, done, checks = node.get_run(principal, run.id)
        assert done == 3 and checks[0].counts == {"ok": 3}
        store.save_results(run.id, [(0, i, _ok(0.5)) for i in range(3, 7)])
        _, done, checks = node.get_run(principal, run.id)
        assert checks[0].counts == {"ok": 3}  # kept: not recomputed
        assert done == 7
    finally:
        store.engine.dispose()


def test_a_kept_summary_is_never_replaced_by_an_older_one(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two pollers compute an active run's summary at once: the one that started first (fewer
    # results) finishes last. The newer summary must stay kept, not the older one.
    from engine.runs import summary as summary_module

    now = [1000.0]
    monkeypatch.setattr(summary_module, "_clock", lambda: now[0])
    store = open_store(database_url)
    try:
        run = _run(store, 10)
        store.set_run_status(run.id, RunStatus.RUNNING)
        store.save_results(run.id, [(0, i, _ok(0.5)) for i in range(3)])
        real = summary_module.from_stats
        nested: list[Any] = []

        def overtaken(*args: Any) -> Any:
            computed = real(*args)
            if not nested:  # the first poller: another one starts, with more results, and
                nested.append(None)  # finishes first
                store.save_results(run.id, [(0, i, _ok(0.5)) for i in range(3, 6)])
                nested.append(run_summary(store, store.get_run(run.tenant_id, run.id)))
                now[0] += 10.0  # the first poller's scan was slow: its summary would be kept
            return computed

        monkeypatch.setattr(summary_module, "from_stats", overtaken)
        older = run_summary(store, store.get_run(run.tenant_id, run.id))
        assert older.checks[0].counts == {"ok": 3} and nested[1].checks[0].counts == {"ok": 6}
        again = run_summary(store, store.get_run(run.tenant_id, run.id))
        assert again.checks[0].counts == {"ok": 6}
    finally:
        store.engine.dispose()
