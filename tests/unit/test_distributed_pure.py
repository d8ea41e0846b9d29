"""Distributed mode's pure parts: plain-data chunks, planning, fair order, start-up refusals."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from engine.distributed.celery_dispatch import _error
from engine.distributed.chunks import fair_order, plan_chunks
from engine.distributed.ledger import ChunkLedger
from engine.distributed.preflight import check_config, masked_url
from engine.errors import ConfigurationError, LLMRateLimitError, QuotaExceededError, SandboxError
from engine.models import Limits
from engine.runs.work import ChunkSpec, along_room, consecutive_jobs, from_ranges, to_ranges
from engine.settings import Settings
from engine.storage import Run, RunCheck, RunStatus, TenantStore


@pytest.mark.parametrize(
    ("own", "along", "jobs"),
    [
        ((0, 1, 2), [], [(0, 3)]),
        ((0, 1, 2), [(3, 5), (5, 6)], [(0, 6)]),  # each starts where the last ends: one job
        ((0, 1, 2), [(7, 9), (3, 4)], [(0, 4), (7, 9)]),  # a gap: two jobs, in row order
        ((4, 5), [(0, 2), (2, 4)], [(0, 6)]),
        ((0, 1), [(5, 5)], [(0, 2)]),  # an empty range adds nothing
    ],
)
def test_chunks_taken_along_run_as_jobs_of_consecutive_rows(
    own: tuple[int, ...], along: list[tuple[int, int]], jobs: list[tuple[int, int]]
) -> None:
    spec = ChunkSpec("t", "r", 1, RunCheck("code", "c", 1, "chk_1"), own, Limits(memory_mb=64))
    made = consecutive_jobs(spec, along)
    assert [(job.rows[0], job.rows[-1] + 1) for job in made] == jobs
    assert all(job.rows == tuple(range(job.rows[0], job.rows[-1] + 1)) for job in made)
    assert {(j.run_id, j.check_index, j.limits) for j in made} == {(spec.run_id, 1, spec.limits)}


@pytest.mark.parametrize(
    ("pace", "rows", "room"),
    [
        (None, 500, 0),  # a check's first chunk: pace unknown
        (1e-3, 500, 0),  # 500 rows at a millisecond are already two quarters of a second
        (1e-4, 500, 2000),  # a quarter of a second is 2,500 rows
        (1e-6, 500, 4500),  # the row cap (table_job_max_rows) decides
        (0.0, 500, 4500),
        (1e-4, 0, 0),
    ],
)
def test_along_room_is_a_quarter_second_at_the_checks_pace_within_the_row_cap(
    pace: float | None, rows: int, room: int
) -> None:
    assert along_room(pace, rows, 5000) == room


@pytest.mark.parametrize(
    ("indices", "ranges"),
    [
        ([], []),
        ([0, 1, 2], [[0, 3]]),
        ([3, 4, 7, 9, 10], [[3, 5], [7, 8], [9, 11]]),
    ],
)
def test_ranges_round_trip(indices: list[int], ranges: list[list[int]]) -> None:
    assert to_ranges(indices) == ranges
    assert from_ranges(ranges) == indices


def test_chunk_spec_is_plain_json() -> None:
    spec = ChunkSpec(
        tenant_id="tnt_1",
        run_id="run_1",
        check_index=1,
        check=RunCheck("code", "len", 3, "chk_1", {}, "int"),
        rows=tuple(range(500, 1000)),
        limits=Limits(memory_mb=128),
    )
    data = spec.to_json()
    assert data["rows"] == [[500, 1000]]
    assert data["check"]["id"] == "chk_1"
    assert ChunkSpec.from_json(data) == spec


def _run(rows: int, checks: int) -> Run:
    return Run(
        id="run_x",
        tenant_id="tnt_x",
        status=RunStatus.QUEUED,
        checks=[RunCheck("builtin", f"c{i}") for i in range(checks)],
        limits=None,
        labels={},
        row_count=rows,
        error=None,
        created_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
    )


def test_plan_covers_every_row_once_per_check() -> None:
    chunks = plan_chunks(_run(1201, 2), [Limits(), Limits(memory_mb=64)], 500)
    assert len(chunks) == 6
    for ci in (0, 1):
        mine = [c for c in chunks if c["check_index"] == ci]
        covered = [i for c in mine for i in range(c["row_start"], c["row_stop"])]
        assert covered == list(range(1201))
    assert {c["limits"]["memory_mb"] for c in chunks if c["check_index"] == 1} == {64}
    assert all(c["state"] == "pending" for c in chunks)


def test_fair_order_round_robins_tenants_fewest_in_flight_first() -> None:
    candidates = {"big": ["b1", "b2", "b3"], "small": ["s1"], "mid": ["m1", "m2"]}
    order = fair_order(candidates, {"big": 1, "mid": 0, "small": 0})
    assert order == ["m1", "s1", "b1", "m2", "b2", "b3"]


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp_path, **values)


def test_embedded_mode_needs_nothing(tmp_path: Path) -> None:
    check_config(_settings(tmp_path))  # no broker: no checks at all


def test_distributed_mode_refuses_sqlite_naming_the_fix(tmp_path: Path) -> None:
    settings = _settings(tmp_path, broker_url="redis://127.0.0.1:6379/0")
    with pytest.raises(ConfigurationError) as caught:
        check_config(settings)
    message = str(caught.value)
    assert "needs PostgreSQL" in message
    assert "SCOREBOX_DATABASE_URL=postgresql+psycopg://" in message
    assert "unset SCOREBOX_BROKER_URL" in message


def test_distributed_mode_refuses_a_broker_that_is_not_redis(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        broker_url="amqp://guest:secret@localhost//",
        database_url="postgresql+psycopg://u@h/db",
    )
    with pytest.raises(ConfigurationError, match="is not a Redis URL") as caught:
        check_config(settings)
    assert "secret" not in str(caught.value)


def test_broker_password_is_masked(tmp_path: Path) -> None:
    assert masked_url("redis://:hunter2@h:6379/0") == "redis://:***@h:6379/0"
    settings = _settings(tmp_path, broker_url="redis://:hunter2@h:6379/0")
    assert "hunter2" not in str(settings.masked())


def test_tasks_are_acked_late_and_rejected_when_their_worker_is_lost(tmp_path: Path) -> None:
    from engine.distributed.celery_app import (
        CHUNK_QUEUE,
        CHUNK_TASK,
        SCORE_QUEUE,
        SCORE_TASK,
        create_celery,
        register_tasks,
    )

    app = create_celery(_settings(tmp_path, broker_url="redis://127.0.0.1:1/0"))
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1  # a worker holds no chunk it cannot start
    # no unacknowledged copy in Redis: the ledger's leases send a lost chunk again
    assert app.conf.broker_transport_options["ack_emulation"] is False

    def chunk(message: dict[str, object]) -> str:
        return "chunk"

    def score(message: dict[str, object]) -> str:
        return "score"

    register_tasks(app, chunk, score, dict)
    for name, queue in ((CHUNK_TASK, CHUNK_QUEUE), (SCORE_TASK, SCORE_QUEUE)):
        task = app.tasks[name]
        assert task.acks_late is True and task.reject_on_worker_lost is True
        assert app.amqp.router.route({}, name)["queue"].name == queue


def test_a_workers_error_comes_back_as_its_scorebox_type() -> None:
    limited = _error({"type": "QuotaExceededError", "error": "too many"})
    assert type(limited) is QuotaExceededError and str(limited) == "too many"
    assert type(_error({"type": "LLMRateLimitError", "error": "429"})) is LLMRateLimitError
    # Not a scorebox error (or no type at all): a SandboxError with the worker's message.
    for record in ({"type": "KeyError", "error": "x"}, {"type": "os", "error": "x"}, {}):
        assert type(_error(record)) is SandboxError


def test_a_worker_refill_does_housekeeping_every_few_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.distributed import dispatch

    passes: list[bool] = []
    windows: list[int] = []

    class Ledger:
        def dispatch(
            self, *args: object, housekeeping: bool = True, window: int = 0
        ) -> list[dict[str, object]]:
            passes.append(housekeeping)
            windows.append(window)
            return []

    clock = [1000.0]
    monkeypatch.setattr("engine.distributed.dispatch.time.monotonic", lambda: clock[0])
    dispatcher = dispatch.Dispatcher(
        Settings(),
        cast(ChunkLedger, Ledger()),
        dispatch.QuotaCache(Settings(), cast(TenantStore, None)),
        lambda m: None,
    )
    dispatcher.refill()
    dispatcher.refill()
    clock[0] += dispatch.HOUSEKEEPING_SECONDS - 0.1
    dispatcher.refill()
    clock[0] += 0.2
    dispatcher.refill()
    dispatcher.pass_once()  # the loop's pass: always
    assert passes == [True, False, False, True, True]
    # every pass sends the chunks that start a fast check's job (a worker's along) first
    assert set(windows) == {Settings().table_job_max_rows}


def test_a_worker_refill_passes_only_when_a_tenant_runs_short_of_queued_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.distributed import dispatch

    passes: list[bool] = []
    queued = {"t1": 4, "t2": 1}
    asked: list[list[str]] = []

    class Ledger:
        def dispatch(
            self, *args: object, housekeeping: bool = True, window: int = 0
        ) -> list[dict[str, object]]:
            passes.append(housekeeping)
            return []

        def queued_of(self, tenants: list[str]) -> dict[str, int]:
            asked.append(sorted(tenants))
            return {t: n for t, n in queued.items() if t in tenants and n}

    clock = [1000.0]
    monkeypatch.setattr("engine.distributed.dispatch.time.monotonic", lambda: clock[0])
    dispatcher = dispatch.Dispatcher(
        Settings(),
        cast(ChunkLedger, Ledger()),
        dispatch.QuotaCache(Settings(), cast(TenantStore, None)),
        lambda m: None,
        stocked=lambda: 2,
    )
    dispatcher.refill({"t1"})  # the first: housekeeping is due, a pass whatever is queued
    assert passes == [True] and asked == []
    dispatcher.refill({"t1"})  # t1 has 4 queued, 2 spare it a pass
    assert passes == [True] and asked == [["t1"]]
    dispatcher.refill({"t1", "t2"})  # t2 has 1: a pass (for every tenant)
    assert passes == [True, False]
    queued["t2"] = 0
    dispatcher.refill({"t2"})  # none queued: a pass
    dispatcher.refill(set())  # no tenant settled (a run looked at again): a pass
    assert passes == [True, False, False, False]
    clock[0] += dispatch.HOUSEKEEPING_SECONDS
    dispatcher.refill({"t1"})  # housekeeping due: a pass, without asking
    assert passes == [True, False, False, False, True] and len(asked) == 3
