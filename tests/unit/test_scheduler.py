"""engine.runs.scheduler.FairScheduler: the order workers take items in, per-tenant limits,
withdrawing and dropping pending work, and close (pure threading, no I/O)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from engine.runs.scheduler import FairScheduler, WorkItem


def _item(tenant: str, group: str = "g", *, interactive: bool = False) -> WorkItem:
    return WorkItem(tenant_id=tenant, group=group, fn=lambda: None, interactive=interactive)


def _drain(scheduler: FairScheduler) -> list[WorkItem]:
    """Take (and finish) every pending item, one worker at a time."""
    taken = []
    while (item := scheduler.take(timeout=0)) is not None:
        taken.append(item)
        scheduler.finish(item)
    return taken


def _names(items: list[WorkItem]) -> list[str]:
    return [f"{i.tenant_id}/{i.group}" for i in items]


def test_round_robin_across_tenants_then_across_a_tenants_runs() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    for _ in range(3):
        scheduler.submit(_item("big", "run1"))
    scheduler.submit(_item("big", "run2"))
    scheduler.submit(_item("small", "run3"))
    assert scheduler.depth() == 5
    assert _names(_drain(scheduler)) == [
        "big/run1",
        "small/run3",  # the other tenant's chunk comes before big's next one
        "big/run2",  # then big's other run, before run1 again
        "big/run1",
        "big/run1",
    ]
    assert scheduler.depth() == 0


def test_interactive_items_come_before_run_chunks() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    scheduler.submit(_item("a", "run"))
    scheduler.submit(_item("a", "run"))
    scheduler.submit(_item("b", "score-1", interactive=True))
    scheduler.submit(_item("a", "score-2", interactive=True))
    order = _drain(scheduler)
    assert [i.interactive for i in order] == [True, True, False, False]
    assert _names(order) == ["a/score-2", "b/score-1", "a/run", "a/run"]


def test_a_tenant_at_its_concurrency_is_skipped_not_blocking_others() -> None:
    limits = {"a": 1, "b": 2, "zero": 0}
    scheduler = FairScheduler(lambda tenant: limits[tenant])
    for tenant in ("a", "a", "b", "b", "b", "zero", "zero"):
        scheduler.submit(_item(tenant))
    held = [scheduler.take(timeout=0) for _ in range(4)]
    assert sorted(i.tenant_id for i in held if i is not None) == ["a", "b", "b", "zero"]
    assert held[-1] is not None  # a limit of 0 still lets one through (max(1, ...))
    assert scheduler.take(timeout=0) is None  # every tenant is at its limit
    assert (scheduler.inflight("a"), scheduler.inflight("b"), scheduler.inflight()) == (1, 2, 4)
    first_a = next(i for i in held if i is not None and i.tenant_id == "a")
    scheduler.finish(first_a)
    assert first_a.finished.is_set()
    nxt = scheduler.take(timeout=0)
    assert nxt is not None and nxt.tenant_id == "a"  # a's slot freed, a's next item runs
    assert scheduler.inflight("a") == 1


def test_take_waits_for_a_submit_and_marks_the_item_started() -> None:
    scheduler = FairScheduler(lambda tenant: 1)
    got: list[WorkItem | None] = []
    worker = threading.Thread(target=lambda: got.append(scheduler.take(timeout=10)))
    worker.start()
    time.sleep(0.05)
    item = _item("a")
    scheduler.submit(item)
    worker.join(5)
    assert got == [item]
    assert item.started.is_set() and not item.finished.is_set()


def test_take_returns_none_after_its_timeout() -> None:
    scheduler = FairScheduler(lambda tenant: 1)
    started = time.monotonic()
    assert scheduler.take(timeout=0.1) is None
    assert 0.09 <= time.monotonic() - started < 2


def test_withdraw_removes_a_pending_item_only() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    run_item, score_item, other = _item("a", "run"), _item("a", "s", interactive=True), _item("b")
    for item in (run_item, score_item, other):
        scheduler.submit(item)
    assert scheduler.withdraw(run_item) is True
    assert scheduler.withdraw(run_item) is False  # already gone
    taken = scheduler.take(timeout=0)
    assert taken is score_item
    assert scheduler.withdraw(score_item) is False  # a worker has it
    assert _drain(scheduler) == [other]
    assert scheduler.withdraw(_item("nobody")) is False


def test_drop_group_removes_a_cancelled_runs_pending_items() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    for _ in range(3):
        scheduler.submit(_item("a", "cancelled"))
    kept = _item("a", "kept")
    scheduler.submit(kept)
    scheduler.submit(_item("b", "cancelled"))  # another tenant's group of the same name
    assert scheduler.drop_group("a", "cancelled") == 3
    assert scheduler.drop_group("a", "cancelled") == 0
    assert scheduler.drop_group("nobody", "x") == 0
    assert _names(_drain(scheduler)) == ["a/kept", "b/cancelled"]


def test_close_wakes_every_waiting_worker_and_take_returns_none() -> None:
    scheduler = FairScheduler(lambda tenant: 1)
    results: list[WorkItem | None] = []
    workers = [threading.Thread(target=lambda: results.append(scheduler.take())) for _ in range(3)]
    for worker in workers:
        worker.start()
    time.sleep(0.05)
    scheduler.close()
    for worker in workers:
        worker.join(5)
        assert not worker.is_alive()
    assert results == [None, None, None]
    scheduler.submit(_item("a"))
    assert scheduler.take(timeout=0) is None  # closed: pending items are not handed out


class _CountingCondition(threading.Condition):
    """A condition that counts the wake-ups it sends to waiting threads."""

    def __init__(self) -> None:
        super().__init__()
        self.woken = 0

    def notify(self, n: int = 1) -> None:
        self.woken += min(n, len(self._waiters))  # type: ignore[attr-defined]
        super().notify(n)


def test_finish_with_nothing_queued_wakes_no_idle_worker() -> None:
    scheduler = FairScheduler(lambda tenant: 1)
    cond = scheduler._cond = _CountingCondition()
    item = _item("a")
    scheduler.submit(item)
    assert scheduler.take(timeout=0) is item
    got: list[WorkItem | None] = []
    idle = threading.Thread(target=lambda: got.append(scheduler.take(timeout=0.3)))
    idle.start()
    time.sleep(0.05)  # the idle worker waits on the condition
    scheduler.finish(item)
    assert item.finished.is_set()
    assert cond.woken == 0  # nothing queued: no worker is woken for nothing
    idle.join(5)
    assert got == [None]


def _until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait (polling) until ``condition()`` holds: threads on a loaded machine start late."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_submit_at_capacity_wakes_no_thread_until_a_slot_frees() -> None:
    scheduler = FairScheduler(lambda tenant: 8, capacity=1)
    cond = scheduler._cond = _CountingCondition()
    running, queued = _item("a", interactive=True), _item("b", interactive=True)
    assert scheduler.claim(running)  # a request's own thread holds the only slot
    got: list[WorkItem | None] = []
    idle = threading.Thread(target=lambda: got.append(scheduler.take(timeout=10)))
    idle.start()
    _until(lambda: len(cond._waiters) == 1)  # type: ignore[attr-defined]
    scheduler.submit(queued)
    time.sleep(0.05)
    assert cond.woken == 0  # it could take nothing: it is not woken for nothing
    assert not got
    began = time.monotonic()
    scheduler.finish(running)  # the slot frees: now it is woken, and takes the item
    idle.join(5)
    assert got == [queued]
    assert cond.woken == 1
    assert time.monotonic() - began < 2  # woken by the finish, not by its timeout


def test_a_finish_wakes_one_idle_thread_for_the_one_slot_it_frees() -> None:
    scheduler = FairScheduler(lambda tenant: 8, capacity=1)
    cond = scheduler._cond = _CountingCondition()
    running = _item("a", interactive=True)
    queued = [_item("b", interactive=True), _item("c", interactive=True)]
    assert scheduler.claim(running)
    for item in queued:
        scheduler.submit(item)
    got: list[WorkItem | None] = []
    idle = [
        threading.Thread(target=lambda: got.append(scheduler.take(timeout=0.5))) for _ in range(2)
    ]
    for thread in idle:
        thread.start()
    _until(lambda: len(cond._waiters) == 2)  # type: ignore[attr-defined]
    scheduler.finish(running)
    _until(lambda: bool(got))
    assert cond.woken == 1  # one slot: one thread woken, not both
    assert got == [queued[0]]  # and it took the next item at once
    for thread in idle:
        thread.join(5)
    assert got == [queued[0], None]  # the other waited out its timeout: nothing was free


def test_finish_wakes_a_worker_for_an_item_held_back_by_concurrency() -> None:
    scheduler = FairScheduler(lambda tenant: 1)
    first, second = _item("a"), _item("a")
    scheduler.submit(first)
    scheduler.submit(second)
    assert scheduler.take(timeout=0) is first
    got: list[WorkItem | None] = []
    worker = threading.Thread(target=lambda: got.append(scheduler.take(timeout=10)))
    worker.start()
    time.sleep(0.05)
    assert not got  # tenant "a" is at its concurrency of one
    began = time.monotonic()
    scheduler.finish(first)
    worker.join(5)
    assert got == [second]
    assert time.monotonic() - began < 2  # woken by the finish, not by its timeout


def test_claim_when_an_idle_thread_would_take_the_item_at_once() -> None:
    scheduler = FairScheduler(lambda tenant: 1, capacity=2)
    mine = _item("a", "s", interactive=True)
    assert scheduler.claim(mine) is True
    assert mine.started.is_set() and scheduler.inflight("a") == 1
    assert scheduler.claim(_item("a", "s2", interactive=True)) is False  # "a" is at its one
    other = _item("b", "s3", interactive=True)
    assert scheduler.claim(other) is True  # the capacity's second place
    assert scheduler.claim(_item("c", "s4", interactive=True)) is False  # capacity full
    waiting = _item("c", "s5")
    scheduler.submit(waiting)
    assert scheduler.take(timeout=0) is None  # the claims hold the whole capacity
    scheduler.finish(mine)
    assert mine.finished.is_set()
    assert scheduler.take(timeout=0) is waiting  # a claim's end frees its place
    assert scheduler.claim(_item("d", "s6", interactive=True)) is False  # capacity full again


def test_no_claim_past_queued_items_nor_without_a_capacity() -> None:
    scheduler = FairScheduler(lambda tenant: 10, capacity=4)
    queued = _item("a", "run")
    scheduler.submit(queued)
    assert scheduler.claim(_item("b", "s", interactive=True)) is False  # its turn comes first
    assert scheduler.take(timeout=0) is queued
    assert scheduler.claim(_item("b", "s", interactive=True)) is True
    assert FairScheduler(lambda tenant: 10).claim(_item("b", "s")) is False
    scheduler.close()
    assert scheduler.claim(_item("c", "s", interactive=True)) is False


def test_take_along_takes_matching_queued_items_of_the_group_in_order() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    items = [_item("a", "run") for _ in range(5)]
    for n, item in enumerate(items):
        item.payload = n
        scheduler.submit(item)
    scheduler.submit(_item("a", "other"))
    first = scheduler.take(timeout=0)
    assert first is items[0]
    asked: list[int] = []

    def odd(item: WorkItem) -> bool:
        asked.append(item.payload)
        return bool(item.payload % 2)

    along = scheduler.take_along("a", "run", 5, odd)
    assert along == [items[1], items[3]]  # in queue order, the rest stay queued
    assert asked == [1, 2, 3, 4]
    assert all(i.started.is_set() for i in along)
    assert scheduler.inflight("a") == 1  # they ride along: no slot of their own
    assert scheduler.take_along("a", "run", 1, lambda item: True) == [items[2]]  # the limit
    scheduler.finish(first)
    assert _names(_drain(scheduler)) == ["a/other", "a/run"]
    assert scheduler.take_along("a", "run", 5, lambda item: True) == []  # the group is gone
    assert scheduler.take_along("b", "run", 5, lambda item: True) == []


def test_take_along_takes_nothing_while_a_request_waits() -> None:
    scheduler = FairScheduler(lambda tenant: 10)
    for _ in range(3):
        scheduler.submit(_item("a", "run"))
    taken = scheduler.take(timeout=0)
    assert taken is not None
    scheduler.submit(_item("b", "score", interactive=True))
    assert scheduler.take_along("a", "run", 5, lambda item: True) == []
    assert scheduler.depth() == 3
    request = scheduler.take(timeout=0)
    assert request is not None and request.interactive
    assert len(scheduler.take_along("a", "run", 5, lambda item: True)) == 2
    assert scheduler.depth() == 0
