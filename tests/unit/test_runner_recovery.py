"""Fault recovery of the runner, against a scripted backend (no Docker)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings


class ScriptedBackend:
    """Scores each row with len(model_output); dies on rows whose output is in ``die_on``.

    ``lost``: when a job dies, every record of it is lost (the harness was killed before
    passing on what it had), as when a check kills the harness with ``os.kill(-1, SIGKILL)``.
    """

    def __init__(
        self, die_on: Mapping[str, Termination], die_before_load: int = 0, *, lost: bool = False
    ) -> None:
        self.die_on = die_on
        self.die_before_load = die_before_load
        self.lost = lost
        self.jobs: list[list[str]] = []

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        if not self.lost:
            yield from self.stream(job)
            return
        held: list[JobEvent] = []
        for event in self.stream(job):
            if isinstance(event, JobEnd):
                if event.termination is Termination.DONE:
                    yield from held
                yield event
                return
            held.append(event)

    def stream(self, job: Job) -> Iterator[JobEvent]:
        self.jobs.append([r.model_output for r in job.rows])
        if self.die_before_load:
            self.die_before_load -= 1
            yield JobEnd(Termination.SANDBOX_ERROR, "engine hiccup")
            return
        yield LoadedRecord(t="loaded", ok=True, parameters=["model_output"])
        for i, row in enumerate(job.rows):
            if row.model_output in self.die_on:
                yield JobEnd(self.die_on[row.model_output], f"died on {row.model_output}")
                return
            yield RowRecord(t="row", i=i, status=Status.OK, score=len(row.model_output), ms=1)
        yield JobEnd(Termination.DONE)

    def health(self) -> BackendHealth:
        return BackendHealth(True, True, "ok")

    def close(self) -> None:
        pass


def run(backend: ScriptedBackend, outputs: list[str], **settings: object) -> list[RowResult]:
    with SandboxRunner(Settings(**settings), backend=backend) as runner:
        return runner.run_check(CodeCheck("src"), [{"model_output": o} for o in outputs])


def score(
    backend: ScriptedBackend, outputs: list[str], **settings: object
) -> list[tuple[Status, object]]:
    return [(r.status, r.score) for r in run(backend, outputs, **settings)]


def test_in_flight_row_gets_the_cause_and_the_rest_run_in_a_fresh_job() -> None:
    backend = ScriptedBackend({"ccc": Termination.CRASHED})
    got = score(backend, ["a", "bb", "ccc", "dddd", "eeeee"])
    assert got == [
        (Status.OK, 1),
        (Status.OK, 2),
        (Status.CRASHED, None),
        (Status.OK, 4),
        (Status.OK, 5),
    ]
    # The harness died: the row it died on runs alone once more before it is blamed.
    assert backend.jobs == [["a", "bb", "ccc", "dddd", "eeeee"], ["ccc"], ["dddd", "eeeee"]]


def test_a_killed_harness_never_costs_another_row_its_result() -> None:
    # Records the harness had not passed on die with it (the check's os.kill(-1, SIGKILL)):
    # rows scored before are scored again, and only the row that kills it is blamed.
    backend = ScriptedBackend({"x": Termination.CRASHED}, lost=True)
    got = score(backend, ["a", "bb", "x", "dddd"])
    assert got == [(Status.OK, 1), (Status.OK, 2), (Status.CRASHED, None), (Status.OK, 4)]
    assert backend.jobs == [
        ["a", "bb", "x", "dddd"],
        ["a"],
        ["bb", "x", "dddd"],
        ["bb"],
        ["x", "dddd"],
        ["x"],
        ["dddd"],
    ]


def test_a_harness_killed_before_it_reported_loading_blames_only_its_row() -> None:
    backend = ScriptedBackend({"x": Termination.OOM}, lost=True)
    got = score(backend, ["x", "bb", "ccc"])
    assert got == [(Status.OOM, None), (Status.OK, 2), (Status.OK, 3)]


def test_each_termination_maps_to_its_status() -> None:
    mapping = {
        "t": Termination.TIMEOUT,
        "o": Termination.OOM,
        "l": Termination.OUTPUT_LIMIT,
        "p": Termination.PROTOCOL_ERROR,
    }
    got = score(ScriptedBackend(mapping), ["t", "x", "o", "x", "l", "x", "p", "x"])
    assert [s for s, _ in got] == [
        Status.TIMEOUT,
        Status.OK,
        Status.OOM,
        Status.OK,
        Status.OUTPUT_LIMIT,
        Status.OK,
        Status.CRASHED,  # only the check can break the protocol: never blamed on the sandbox
        Status.OK,
    ]


@pytest.mark.parametrize(
    ("termination", "lost"),
    [
        (Termination.CRASHED, False),
        (Termination.CRASHED, True),
        (Termination.OOM, True),
        (Termination.TIMEOUT, False),
    ],
)
def test_consecutive_deaths_are_bounded_and_blamed_on_the_check(
    termination: Termination, lost: bool
) -> None:
    # A check that takes its container down on every row is at fault: its rows get the
    # check's status, never sandbox_error (which tells the operator the sandbox failed).
    backend = ScriptedBackend({"x": termination}, lost=lost)
    results = run(backend, ["x"] * 10, job_retries=2)
    status = Status(termination.value)
    assert [r.status for r in results] == [status] * 10
    assert results[0].error == "died on x"
    assert all(
        "not run: the check ended its sandbox 3 times" in (r.error or "") for r in results[3:]
    )
    assert len(backend.jobs) <= 4


def test_rows_keep_their_order_across_parallel_jobs() -> None:
    outputs = ["x" * (i % 7 + 1) for i in range(95)]
    got = score(ScriptedBackend({}), outputs, job_max_rows=10, max_parallel_jobs=3)
    assert got == [(Status.OK, len(o)) for o in outputs]


def test_on_result_sees_every_row_once() -> None:
    seen: list[int] = []
    with SandboxRunner(
        Settings(job_max_rows=3), backend=ScriptedBackend({"b": Termination.CRASHED})
    ) as e:
        e.run_check(
            CodeCheck("src"),
            [{"model_output": o} for o in "abcdefg"],
            on_result=lambda i, _: seen.append(i),
        )
    assert sorted(seen) == list(range(7))


def test_sandbox_error_before_loading_is_retried_without_losing_a_row() -> None:
    backend = ScriptedBackend({}, die_before_load=2)
    assert score(backend, ["a", "bb"]) == [(Status.OK, 1), (Status.OK, 2)]
    assert len(backend.jobs) == 3


def test_persistent_sandbox_error_marks_every_row() -> None:
    backend = ScriptedBackend({}, die_before_load=100)
    got = score(backend, ["a", "bb"], job_retries=1)
    assert [s for s, _ in got] == [Status.SANDBOX_ERROR] * 2
    assert len(backend.jobs) == 2


def test_run_checks_with_more_checks_than_workers_does_not_deadlock() -> None:
    import threading

    out: list[list[list[tuple[Status, object]]]] = []

    def go() -> None:
        settings = Settings(max_parallel_jobs=1, job_max_rows=2)
        with SandboxRunner(settings, backend=ScriptedBackend({})) as runner:
            per_check = runner.run_checks(
                [CodeCheck("src")] * 6, [{"model_output": o} for o in ["a", "bb", "ccc"]]
            )
        out.append([[(r.status, r.score) for r in results] for results in per_check])

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "run_checks deadlocked"
    assert out == [[[(Status.OK, 1), (Status.OK, 2), (Status.OK, 3)]] * 6]


class EngineRestartBackend(ScriptedBackend):
    """The engine goes away mid-job (the stream ends as a sandbox error, after some rows) and
    answers ``health`` again only after ``down_polls`` polls; then every job succeeds."""

    def __init__(self, down_polls: int, die_after: int = 2) -> None:
        super().__init__({})
        self.down_polls = down_polls
        self.die_after = die_after
        self.polls = 0
        self.restarted = False

    def stream(self, job: Job) -> Iterator[JobEvent]:
        self.jobs.append([r.model_output for r in job.rows])
        if self.restarted and self.polls <= self.down_polls:  # away: nothing can start
            yield JobEnd(Termination.SANDBOX_ERROR, "engine unreachable", engine_down=True)
            return
        yield LoadedRecord(t="loaded", ok=True, parameters=["model_output"])
        for i, row in enumerate(job.rows):
            if not self.restarted and i == self.die_after:
                self.restarted = True
                yield JobEnd(Termination.SANDBOX_ERROR, "the Docker engine went away")
                return
            yield RowRecord(t="row", i=i, status=Status.OK, score=len(row.model_output), ms=1)
        yield JobEnd(Termination.DONE)

    def health(self) -> BackendHealth:
        self.polls += 1
        up = self.polls > self.down_polls
        return BackendHealth(up, up, "ok" if up else "engine unreachable")


def test_an_engine_outage_is_waited_out_and_no_row_is_blamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("engine.sandbox.jobs.ENGINE_POLL_SECONDS", 0.001)
    backend = EngineRestartBackend(down_polls=5)
    got = score(backend, ["a", "bb", "ccc", "dddd"], job_retries=0, engine_wait_seconds=5)
    # the row in flight is not blamed, the retry budget (0) is not spent: all rows score
    assert got == [(Status.OK, 1), (Status.OK, 2), (Status.OK, 3), (Status.OK, 4)]
    assert backend.jobs == [["a", "bb", "ccc", "dddd"], ["ccc", "dddd"]]
    assert backend.polls == 6  # down five times, then up


def test_an_engine_that_stays_away_gives_sandbox_error_after_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("engine.sandbox.jobs.ENGINE_POLL_SECONDS", 0.001)
    backend = EngineRestartBackend(down_polls=10**9)
    got = score(backend, ["a", "bb", "ccc"], job_retries=0, engine_wait_seconds=0.05)
    assert got == [(Status.OK, 1), (Status.OK, 2), (Status.SANDBOX_ERROR, None)]


def test_a_sandbox_error_with_the_engine_up_reruns_the_row_in_flight() -> None:
    backend = EngineRestartBackend(down_polls=0)
    got = score(backend, ["a", "bb", "ccc"], job_retries=1)
    assert got == [(Status.OK, 1), (Status.OK, 2), (Status.OK, 3)]
    assert backend.jobs == [["a", "bb", "ccc"], ["ccc"]]


def test_an_engine_that_answers_pings_while_shutting_down_is_still_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dockerd stopping still answers a ping while it refuses to start containers: jobs
    that end with ``engine_down`` are waited out (a poll each) without spending retries."""
    monkeypatch.setattr("engine.sandbox.jobs.ENGINE_POLL_SECONDS", 0.001)

    class Stopping(ScriptedBackend):
        refusals = 3

        def stream(self, job: Job) -> Iterator[JobEvent]:
            if self.refusals:
                self.refusals -= 1
                self.jobs.append(["refused"])
                yield JobEnd(Termination.SANDBOX_ERROR, "engine stopping", engine_down=True)
                return
            yield from super().stream(job)

    backend = Stopping({})
    got = score(backend, ["a", "bb"], job_retries=0, engine_wait_seconds=5)
    assert got == [(Status.OK, 1), (Status.OK, 2)]
    assert backend.jobs == [["refused"]] * 3 + [["a", "bb"]]
