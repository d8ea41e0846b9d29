"""A worker's after-chunk thread: settles in order, finishes runs, refills, retries."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from engine.distributed.after import AfterChunks, Settled
from engine.distributed.chunks import DONE, DROPPED, ChunkKey
from engine.errors import StorageError


class Calls:
    """Records what the thread did, in order; ``settle_answers`` says which chunks were ours."""

    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []
        self.not_ours: set[int] = set()
        self.settle_fails: set[int] = set()
        self.complete_fails = 0
        self.tenants: list[set[str]] = []  # each dispatch's tenants
        self.batches: list[list[int]] = []  # each settle's chunks
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # a settle began

    def settle(self, chunks: Sequence[Settled]) -> set[ChunkKey]:
        """One batch: all settled but those not ours, or none when one of them fails."""
        self.entered.set()
        self.gate.wait(5)
        self.batches.append([c.key.chunk_no for c in chunks])
        for c in chunks:
            self.log.append(("settle", str(c.key.chunk_no), c.state))
        if any(c.key.chunk_no in self.settle_fails for c in chunks):
            raise StorageError("database down")
        return {c.key for c in chunks if c.key.chunk_no not in self.not_ours}

    def complete(self, tenant_id: str, run_id: str) -> None:
        self.log.append(("complete", tenant_id, run_id))
        if self.complete_fails:
            self.complete_fails -= 1
            raise StorageError("database down")

    def dispatch(self, tenants: set[str]) -> int:
        self.log.append(("dispatch",))
        self.tenants.append(tenants)
        return 0


def chunk(no: int, state: str = DONE, run: str = "run_a") -> Settled:
    return Settled(ChunkKey(run, 0, no), 1, state, "t1", run)


def test_chunks_settle_in_order_then_their_runs_finish_then_one_dispatch_pass() -> None:
    calls = Calls()
    calls.gate.clear()  # hold the thread on a first chunk: the others arrive meanwhile
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(9, state=DROPPED, run="run_z"))
    after.add(chunk(0))
    after.add(chunk(1))
    after.add(chunk(2, run="run_b"))
    calls.gate.set()
    assert after.idle(5)
    after.close()
    settles = [entry for entry in calls.log if entry[0] == "settle"]
    assert settles[1:] == [("settle", "0", DONE), ("settle", "1", DONE), ("settle", "2", DONE)]
    # a run is looked at after its chunks settled, the dropped one's never; the refill is last
    assert calls.log[-1] == ("dispatch",)
    completes = [entry for entry in calls.log if entry[0] == "complete"]
    assert set(completes) == {("complete", "t1", "run_a"), ("complete", "t1", "run_b")}
    assert calls.log.index(("complete", "t1", "run_b")) > calls.log.index(("settle", "2", DONE))
    assert len(completes) <= 3 and calls.log.count(("dispatch",)) <= 2  # batched, not per chunk


def test_chunks_handed_over_during_a_settle_settle_together_after_it() -> None:
    calls = Calls()
    calls.gate.clear()
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(0))
    assert calls.entered.wait(5)  # the thread is settling chunk 0
    for no in (1, 2, 3):  # a job's chunk and two it took along
        after.add(chunk(no))
    calls.gate.set()
    assert after.idle(5)
    after.close()
    assert calls.batches == [[0], [1, 2, 3]]
    assert calls.log.count(("complete", "t1", "run_a")) == 2  # once a batch


def test_a_dropped_or_stale_chunk_does_not_finish_its_run_but_still_refills() -> None:
    calls = Calls()
    calls.not_ours = {1}  # re-queued meanwhile: settle answers False
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(0, state=DROPPED))
    assert after.idle(5)
    after.add(chunk(1))
    assert after.idle(5)
    after.close()
    assert not [entry for entry in calls.log if entry[0] == "complete"]
    assert calls.log.count(("dispatch",)) == 2


def test_a_failed_settle_does_not_stop_later_ones() -> None:
    calls = Calls()
    calls.settle_fails = {0}
    calls.gate.clear()
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(9, state=DROPPED, run="run_z"))
    assert calls.entered.wait(5)  # the thread holds chunk 9: the next two are one batch
    after.add(chunk(0))
    after.add(chunk(3))
    calls.gate.set()
    assert after.idle(5)
    after.add(chunk(1, run="run_b"))
    assert after.idle(5)
    after.close()
    assert calls.batches == [[9], [0, 3], [1]]
    # chunks that did not settle keep their leases to expire; their run is not looked at
    assert [entry for entry in calls.log if entry[0] == "complete"] == [("complete", "t1", "run_b")]


def test_a_run_that_could_not_be_finished_is_looked_at_again() -> None:
    calls = Calls()
    calls.complete_fails = 1
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(0))
    assert after.idle(10)
    after.close()
    assert calls.log.count(("complete", "t1", "run_a")) == 2


def test_close_settles_what_was_handed_over() -> None:
    calls = Calls()
    calls.gate.clear()
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(0))
    after.add(chunk(1))
    calls.gate.set()
    after.close()
    assert [entry[1] for entry in calls.log if entry[0] == "settle"] == ["0", "1"]
