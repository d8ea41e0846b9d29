"""The chunk ledger on a real PostgreSQL: claims, leases, fair dispatch, the shared chunk path."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence

import pytest
from sqlalchemy import text

from engine.catalog import ResolvedCheck
from engine.contract import Status
from engine.distributed.chunks import DROPPED, MAX_ATTEMPTS, Along, ChunkKey
from engine.distributed.ledger import DISPATCH_LOCK, ChunkLedger
from engine.models import IndexedRow, Limits, ResultCallback, RowResult
from engine.runs.executors import Executors
from engine.runs.metrics import Metrics
from engine.runs.work import ChunkSpec, execute_chunk
from engine.storage import Run, RunStatus, SqlStore, open_store
from engine.tenancy import auth
from tests.conftest import queued_run

pytestmark = pytest.mark.postgres


class CountingExecutor:
    """A real executor that scores ``len(model_output)`` in process and records what it saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def score(
        self,
        check: ResolvedCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        on_result: ResultCallback,
    ) -> None:
        for index, row in rows:
            with self.lock:
                self.seen.append(row.model_output)
            on_result(index, RowResult(status=Status.OK, score=len(row.model_output)))


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlStore]:
    opened = open_store(pg_url)
    yield opened
    opened.engine.dispose()


def _run(store: SqlStore, tenant_id: str, rows: int, checks: int = 1) -> Run:
    run = queued_run(tenant_id, rows, checks)
    return store.create_run(run, ({"model_output": "x" * (i % 7)} for i in range(rows)), None)


def _tenant(store: SqlStore, name: str, **quotas: int) -> str:
    return auth.create_tenant(store, name, quotas).tenant.id


def test_a_redelivered_chunk_scores_only_rows_without_a_result(store: SqlStore) -> None:
    run = _run(store, _tenant(store, "t"), 300)
    # a first delivery stored rows 0..119 before its worker died
    store.save_results(
        run.id, [(0, i, RowResult(status=Status.OK, score=len("x" * (i % 7)))) for i in range(120)]
    )
    counting = CountingExecutor()
    spec = ChunkSpec(run.tenant_id, run.id, 0, run.checks[0], tuple(range(300)), Limits())
    check = ResolvedCheck("code", "c0", 1, "chk_0")
    outcome = execute_chunk(store, Executors(counting), Metrics(), spec, check)
    assert outcome.scored == 180 and outcome.written == 180
    assert len(counting.seen) == 180
    assert store.missing_rows(run.id, 0) == []
    # a third delivery of the same chunk scores nothing
    again = execute_chunk(store, Executors(counting), Metrics(), spec, check)
    assert (again.scored, again.written, len(counting.seen)) == (0, 0, 180)


def test_claims_need_the_current_epoch_and_leases_requeue(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "t"), 1000)
    assert ledger.plan(run, [Limits()], 500) == 2
    assert ledger.plan(run, [Limits()], 500) == 0  # planning again is a no-op
    messages = ledger.dispatch(lambda _t: 4, queue_lease_seconds=60)
    assert messages is not None and len(messages) == 2
    first = messages[0]
    key, epoch = ChunkKey(*first["key"]), first["epoch"]
    assert first["spec"]["rows"] == [[0, 500]]
    assert not ledger.claim(key, epoch + 1, "w1", 30)  # a stale message
    assert ledger.claim(key, epoch, "w1", lease_seconds=0.5)
    assert not ledger.claim(key, epoch, "w2", 30)  # a duplicate delivery
    time.sleep(0.7)  # worker w1 died: its lease runs out
    again = ledger.dispatch(lambda _t: 4, queue_lease_seconds=60)
    assert again is not None
    assert [m["key"] for m in again] == [first["key"]]
    assert again[0]["epoch"] == epoch + 1
    assert not ledger.settle(key, epoch)  # the dead worker's epoch can no longer settle
    assert ledger.claim(key, epoch + 1, "w2", 30)
    assert ledger.settle(key, epoch + 1)
    assert ledger.unfinished(run.id) == 1


def test_dispatch_caps_each_tenant_and_round_robins(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    big = _tenant(store, "big")
    small = _tenant(store, "small")
    ledger.plan(_run(store, big, 10_000), [Limits()], 500)  # 20 chunks
    quotas = {big: 3, small: 2}
    first = ledger.dispatch(quotas.__getitem__, 60)
    assert first is not None
    assert [m["spec"]["tenant_id"] for m in first] == [big] * 3
    ledger.plan(_run(store, small, 10), [Limits()], 500)
    ledger.plan(_run(store, small, 10), [Limits()], 500)
    second = ledger.dispatch(quotas.__getitem__, 60)
    assert second is not None
    # big already has 3 in flight: only small's two 10-row runs go out, ahead of big's backlog
    assert [m["spec"]["tenant_id"] for m in second] == [small, small]
    assert ledger.dispatch(quotas.__getitem__, 60) == []


def test_one_dispatch_pass_at_a_time(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    ledger.plan(_run(store, _tenant(store, "t"), 100), [Limits()], 50)
    with store.engine.connect() as other:  # another node's pass in progress
        other.execute(text("SELECT pg_advisory_lock(:k)"), {"k": DISPATCH_LOCK})
        assert ledger.dispatch(lambda _t: 4, 60) is None
        other.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": DISPATCH_LOCK})
    sent = ledger.dispatch(lambda _t: 4, 60)
    assert sent is not None and len(sent) == 2


def test_stopped_runs_lose_their_queued_chunks(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "t"), 2000)
    ledger.plan(run, [Limits()], 500)
    assert len(ledger.dispatch(lambda _t: 2, 60) or []) == 2
    store.set_run_status(run.id, RunStatus.CANCELLED)
    assert ledger.drop_run(run.id) == 4
    assert ledger.dispatch(lambda _t: 2, 60) == []
    assert ledger.counts() == {"dropped": 4}
    assert not ledger.run_active(run.id)


def test_runs_without_a_plan_are_found(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "t"), 10)  # accepted, then its API node died
    assert ledger.unplanned_runs(older_than_seconds=0) == [(run.tenant_id, run.id)]
    ledger.plan(run, [Limits()], 500)
    assert ledger.unplanned_runs(older_than_seconds=0) == []


def test_a_chunk_that_keeps_killing_workers_fails_its_run(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "t"), 10)
    ledger.plan(run, [Limits()], 500)
    poisoned: list[str] = []
    for _ in range(MAX_ATTEMPTS):
        sent = ledger.dispatch(lambda _t: 1, 60)
        assert sent
        message = sent[0]
        assert ledger.claim(ChunkKey(*message["key"]), message["epoch"], "w", 0.01)
        time.sleep(0.05)
    assert ledger.dispatch(lambda _t: 1, 60, lambda r, e: poisoned.append(r)) == []
    assert poisoned == [run.id]


def test_a_pass_drops_chunks_of_runs_stopped_elsewhere(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "t"), 1500)
    ledger.plan(run, [Limits()], 500)
    store.set_run_status(run.id, RunStatus.FAILED, "failed on another node")
    assert ledger.dispatch(lambda _t: 4, 60) == []
    assert ledger.counts() == {"dropped": 3}


def test_a_broker_that_lost_its_queue_gets_the_chunks_again_and_figures_per_tenant(
    store: SqlStore,
) -> None:
    """What the API node does when the broker's marker is gone (requeue_queued), what a
    refused send does (unqueue), and what /metrics reads (by_tenant)."""
    ledger = ChunkLedger(store.engine)
    tenant = _tenant(store, "requeue")
    run = _run(store, tenant, 2000)
    ledger.plan(run, [Limits()], 500)
    sent = ledger.dispatch(lambda t: 2, 120.0)
    assert sent is not None and len(sent) == 2
    counts, oldest = ledger.by_tenant()
    assert counts == {(tenant, "queued"): 2, (tenant, "pending"): 2}
    assert 0 <= oldest < 5
    # the broker restarted without persistence: both messages are gone; without this the
    # chunks would wait for their 120 s queue lease
    assert ledger.requeue_queued() == 2
    assert ledger.by_tenant() == ({(tenant, "pending"): 4}, 0.0)
    again = ledger.dispatch(lambda t: 2, 120.0)
    assert again is not None and [m["epoch"] for m in again] == [2, 2]
    first = ChunkKey(*sent[0]["key"])
    assert not ledger.claim(first, sent[0]["epoch"], "w", 30.0)  # the lost message is stale
    # a message the broker refused: pending at once, sent by the next pass
    ledger.unqueue(ChunkKey(*again[0]["key"]), again[0]["epoch"])
    counts, _ = ledger.by_tenant()
    assert counts == {(tenant, "queued"): 1, (tenant, "pending"): 3}


def test_queued_of_counts_each_tenants_chunks_in_the_broker(store: SqlStore) -> None:
    ledger = ChunkLedger(store.engine)
    busy, idle = _tenant(store, "busy"), _tenant(store, "idle")
    run = _run(store, busy, 2000)
    ledger.plan(run, [Limits()], 500)
    sent = ledger.dispatch(lambda _t: 3, 60)
    assert sent is not None and len(sent) == 3
    assert ledger.queued_of([busy, idle]) == {busy: 3}
    assert ledger.claim(ChunkKey(*sent[0]["key"]), sent[0]["epoch"], "w", 30.0)
    assert ledger.queued_of([busy]) == {busy: 2}  # running and pending ones are not queued
    assert ledger.queued_of([]) == {}


def test_a_refill_pass_sends_only_what_housekeeping_would_keep(store: SqlStore) -> None:
    """A worker's pass after its chunks (no housekeeping) never sends a stopped run's chunk
    or a poison chunk, and leaves expired leases and failing runs to the loop's pass."""
    ledger = ChunkLedger(store.engine)
    tenant = _tenant(store, "refill")
    live = _run(store, tenant, 1000)
    stopped = _run(store, tenant, 1000)
    poison = _run(store, tenant, 10)
    for run in (live, stopped, poison):
        ledger.plan(run, [Limits()], 500)
    first = ledger.dispatch(lambda _t: 1, 60)
    assert first is not None and [m["key"] for m in first] == [[live.id, 0, 0]]
    with store.engine.begin() as conn:  # its workers kept dying
        conn.execute(
            text("UPDATE run_chunks SET attempts = :n WHERE run_id = :r"),
            {"n": MAX_ATTEMPTS, "r": poison.id},
        )
    assert ledger.claim(ChunkKey(live.id, 0, 0), first[0]["epoch"], "w", lease_seconds=0.01)
    store.set_run_status(stopped.id, RunStatus.CANCELLED)  # on another node, no drop_run
    time.sleep(0.05)  # the worker holding live's chunk 0 died

    poisoned: list[str] = []
    refill = ledger.dispatch(lambda _t: 8, 60, lambda r, e: poisoned.append(r), housekeeping=False)
    assert refill is not None and [m["key"] for m in refill] == [[live.id, 0, 1]]
    assert poisoned == []
    assert ledger.counts() == {"running": 1, "queued": 1, "pending": 3}

    full = ledger.dispatch(lambda _t: 8, 60, lambda r, e: poisoned.append(r))
    assert full is not None and [(m["key"], m["epoch"]) for m in full] == [
        ([live.id, 0, 0], first[0]["epoch"] + 1)
    ]
    assert poisoned == [poison.id]
    assert ledger.counts() == {"queued": 2, "dropped": 3}


def test_a_worker_takes_its_checks_next_chunks_along(store: SqlStore) -> None:
    """``claim_along``: the run's lowest pending or queued chunks of the claimed chunk's
    check, running under this worker with a new epoch (a queued one's message then finds it
    taken, and a dispatch pass sends none of them); never a chunk running elsewhere, another
    check's, or one out of attempts; each settles with its own epoch."""
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, "along"), 1000, checks=2)
    assert ledger.plan(run, [Limits(), Limits()], 100) == 20
    sent = ledger.dispatch(lambda _t: 3, 60)
    assert sent is not None
    assert [m["key"] for m in sent] == [[run.id, 0, 0], [run.id, 1, 0], [run.id, 0, 1]]
    key = ChunkKey(run.id, 0, 0)
    assert ledger.claim(key, sent[0]["epoch"], "w1", 30)
    with store.engine.begin() as conn:
        conn.execute(  # chunk 3 kept killing workers
            text("UPDATE run_chunks SET attempts = :n WHERE run_id = :r AND chunk_no = 3"),
            {"n": MAX_ATTEMPTS, "r": run.id},
        )
        conn.execute(  # and chunk 4 runs on another worker
            text(
                "UPDATE run_chunks SET state = 'running', worker = 'w2' "
                "WHERE run_id = :r AND check_index = 0 AND chunk_no = 4"
            ),
            {"r": run.id},
        )

    along = ledger.claim_along(key, 3, "w1", 30)
    assert [(a.key.chunk_no, a.rows) for a in along] == [
        (1, (100, 200)),
        (2, (200, 300)),
        (5, (500, 600)),
    ]
    assert [a.epoch for a in along] == [sent[2]["epoch"] + 1, 1, 1]
    assert all(a.key.check_index == 0 for a in along)
    assert not ledger.claim(ChunkKey(run.id, 0, 1), sent[2]["epoch"], "w3", 30)  # stale now
    with store.engine.connect() as conn:
        states: dict[int, str] = dict(
            conn.execute(
                text(
                    "SELECT chunk_no, state || ':' || coalesce(worker, '') || ':' || attempts "
                    "FROM run_chunks WHERE run_id = :r AND check_index = 0"
                ),
                {"r": run.id},
            ).all()
        )
    assert [states[n] for n in (1, 2, 5)] == ["running:w1:1"] * 3
    assert states[3].startswith("pending:") and states[4] == "running:w2:0"

    # a dispatch pass never sends a chunk taken along; check 1's chunks are still its own
    # (a worker's pass: the loop's would fail the run for its poison chunk)
    later = ledger.dispatch(lambda _t: 20, 60, housekeeping=False)
    assert later is not None
    sent_keys = {tuple(m["key"]) for m in later}
    assert not sent_keys & {a.key.as_tuple() for a in along}
    assert {(run.id, 1, 1), (run.id, 0, 6)} <= sent_keys
    # check 0's other chunks, queued by that pass, are the next to take along
    rest = ledger.claim_along(key, 10, "w2", 30)
    assert [a.key.chunk_no for a in rest] == [6, 7, 8, 9]
    assert ledger.claim_along(key, 10, "w2", 30) == []

    for chunk in along:
        assert not ledger.settle(chunk.key, chunk.epoch - 1)  # another epoch cannot settle it
        assert ledger.settle(chunk.key, chunk.epoch)
    assert ledger.settle(key, sent[0]["epoch"])
    assert ledger.unfinished(run.id) == 20 - 4


def test_a_windowed_pass_sends_the_chunks_that_start_a_job_first(store: SqlStore) -> None:
    """With a ``window`` of rows, a pass sends each window's first chunk first, and a slot
    that claims one takes the chunks after it along: none of those has a message (taking
    it along would make its message stale). Then the lowest ones before it."""
    ledger = ChunkLedger(store.engine)
    tenant = _tenant(store, "windows")
    run = _run(store, tenant, 3000)
    other = _run(store, tenant, 1500)
    ledger.plan(run, [Limits()], 100)  # 30 chunks: windows of 1000 rows start at 0, 10, 20
    ledger.plan(other, [Limits()], 100)  # 15: windows start at 0 and 10
    sent = ledger.dispatch(lambda _t: 7, 60, window=1000)
    assert sent is not None
    # each step of the windows round-robins across the tenant's runs, by chunk number
    assert [(m["spec"]["run_id"], m["key"][2]) for m in sent] == [
        (run.id, 0),
        (other.id, 0),
        (run.id, 10),
        (other.id, 10),
        (run.id, 20),
        (run.id, 1),
        (other.id, 1),
    ]
    epochs = {(m["spec"]["run_id"], m["key"][2]): m["epoch"] for m in sent}
    key = ChunkKey(run.id, 0, 10)
    assert ledger.claim(key, epochs[(run.id, 10)], "w1", 30)
    along = ledger.claim_along(key, 9, "w1", 30)
    assert [a.key.chunk_no for a in along] == list(range(11, 20))
    assert all(a.epoch == 1 for a in along)  # pending until now: no message was sent
    # past the chunks after it, the lowest before it (chunk 0's message is stale from now
    # on); returned in row order
    last = ChunkKey(run.id, 0, 20)
    assert ledger.claim(last, epochs[(run.id, 20)], "w1", 30)
    rest = ledger.claim_along(last, 12, "w1", 30)
    assert [a.key.chunk_no for a in rest] == [0, 1, 2, *range(21, 30)]
    assert not ledger.claim(ChunkKey(run.id, 0, 0), epochs[(run.id, 0)], "w2", 30)
    # without a window, chunks go in row order
    plain = _run(store, _tenant(store, "rows"), 500)
    ledger.plan(plain, [Limits()], 100)
    in_rows = ledger.dispatch(lambda t: 3 if t == plain.tenant_id else 0, 60)
    assert in_rows is not None
    assert [m["key"][2] for m in in_rows if m["spec"]["run_id"] == plain.id] == [0, 1, 2]


def _held_by_w1(
    store: SqlStore, name: str, most: int, lease_seconds: float = 30
) -> tuple[ChunkLedger, Run, tuple[ChunkKey, int], list[Along]]:
    """A run of four 100-row chunks: the one dispatched, claimed by ``w1`` (its key and
    epoch), and the chunks ``w1`` took along with it (up to ``most``)."""
    ledger = ChunkLedger(store.engine)
    run = _run(store, _tenant(store, name), 400)
    ledger.plan(run, [Limits()], 100)
    sent = ledger.dispatch(lambda _t: 1, 60)
    assert sent is not None and len(sent) == 1
    claimed = (ChunkKey(*sent[0]["key"]), int(sent[0]["epoch"]))
    assert ledger.claim(*claimed, "w1", lease_seconds)
    return ledger, run, claimed, ledger.claim_along(claimed[0], most, "w1", lease_seconds)


def test_a_jobs_chunks_settle_in_one_statement_each_under_its_epoch(store: SqlStore) -> None:
    ledger, run, claimed, along = _held_by_w1(store, "settle-all", 3)
    key = claimed[0]
    assert len(along) == 3
    held = [claimed, *((a.key, a.epoch) for a in along)]
    stale = (along[1].key, along[1].epoch - 1)  # an epoch it no longer runs under
    assert ledger.settle_all([held[0], held[1], stale, held[3]]) == {
        key,
        along[0].key,
        along[2].key,
    }
    assert ledger.unfinished(run.id) == 1  # the one given with a stale epoch
    assert ledger.settle_all([held[2]], DROPPED) == {along[1].key}
    assert ledger.settle_all(held) == set()  # settled already: none is running
    assert ledger.settle_all([]) == set()


def test_a_workers_chunks_go_back_to_pending_in_one_statement(store: SqlStore) -> None:
    ledger, run, claimed, along = _held_by_w1(store, "release", 3)
    stale = (along[0].key, along[0].epoch - 1)  # an epoch it no longer runs under
    ledger.release([claimed, stale, *((a.key, a.epoch) for a in along[1:])])
    with store.engine.connect() as conn:
        states: dict[int, str] = dict(
            conn.execute(
                text(
                    "SELECT chunk_no, state || ':' || coalesce(worker, '') FROM run_chunks "
                    "WHERE run_id = :r"
                ),
                {"r": run.id},
            ).all()
        )
    assert states == {0: "pending:", 1: "running:w1", 2: "pending:", 3: "pending:"}
    ledger.release([])


def test_chunks_taken_along_by_a_dead_worker_go_back_to_pending(store: SqlStore) -> None:
    ledger, _, _, along = _held_by_w1(store, "along-dead", 8, lease_seconds=0.2)
    assert [a.key.chunk_no for a in along] == [1, 2, 3]
    time.sleep(0.4)  # w1 died with all four in hand
    again = ledger.dispatch(lambda _t: 8, 60)
    assert again is not None
    assert sorted(m["key"][2] for m in again) == [0, 1, 2, 3]
    for chunk in along:
        assert not ledger.settle(chunk.key, chunk.epoch)  # w1's epoch is over
