"""A worker's one bounded map of what it knows of runs (engine.distributed.known_runs)."""

from __future__ import annotations

from engine.distributed.known_runs import KnownRuns


def test_a_run_is_marked_running_once_and_its_stopped_answer_expires() -> None:
    runs = KnownRuns()
    assert not runs.marked_running("r1")
    assert runs.stopped("r1", now=10.0, ttl=0.5) is None  # never asked
    runs.mark_running("r1")
    assert runs.marked_running("r1") and not runs.marked_running("r2")
    assert runs.stopped("r1", now=10.0, ttl=0.5) is None  # marked, still never asked
    runs.saw("r1", now=10.0, stopped=True)
    assert runs.stopped("r1", now=10.4, ttl=0.5) is True
    assert runs.stopped("r1", now=10.5, ttl=0.5) is None  # too old: ask again
    assert runs.marked_running("r1")  # one entry: the answer did not forget the mark
    runs.saw("r2", now=11.0, stopped=False)
    assert runs.stopped("r2", now=11.1, ttl=0.5) is False
    assert not runs.marked_running("r2")


def test_the_map_is_emptied_past_its_limit() -> None:
    runs = KnownRuns(limit=3)
    for run_id in ("a", "b", "c"):
        runs.mark_running(run_id)
    runs.saw("b", now=1.0, stopped=True)  # known already: no new entry
    assert len(runs) == 3
    runs.saw("d", now=1.0, stopped=False)  # a fourth run: the others are forgotten
    assert len(runs) == 1
    assert not runs.marked_running("a")
    assert runs.stopped("b", now=1.0, ttl=0.5) is None
    assert runs.stopped("d", now=1.0, ttl=0.5) is False
