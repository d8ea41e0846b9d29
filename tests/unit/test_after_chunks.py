"""A worker's after-chunk thread: settles in order, finishes runs, refills, retries."""

from __future__ import annotations

import threading

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
        self.gate = threading.Event()
        self.gate.set()

    def settle(self, key: ChunkKey, epoch: int, state: str) -> bool:
        self.gate.wait(5)
        self.log.append(("settle", str(key.chunk_no), state))
        if key.chunk_no in self.settle_fails:
            raise StorageError("database down")
        return key.chunk_no not in self.not_ours

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


def test_a_failed_settle_does_not_stop_the_others() -> None:
    calls = Calls()
    calls.settle_fails = {0}
    calls.gate.clear()
    after = AfterChunks(calls.settle, calls.complete, calls.dispatch)
    after.add(chunk(0))
    after.add(chunk(1, run="run_b"))
    calls.gate.set()
    assert after.idle(5)
    after.close()
    assert ("settle", "1", DONE) in calls.log
    # the chunk that did not settle keeps its lease to expire; its run is not looked at
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
