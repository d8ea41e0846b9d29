"""A row's duration longer than its job could have run is forged: the runner refuses it
(a scripted backend, no Docker)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

LIMITS = Limits(row_timeout_seconds=2, wall_seconds_max=60)  # one row's job: 12 s


class DurationBackend:
    """Every row ``ok``, with the duration its model_output names (in ms)."""

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        yield LoadedRecord(t="loaded", ok=True, parameters=["model_output"])
        for i, row in enumerate(job.rows):
            ms = float(row.model_output)
            yield RowRecord(t="row", i=i, status=Status.OK, score=True, ms=ms)
        yield JobEnd(Termination.DONE)

    def health(self) -> BackendHealth:
        return BackendHealth(True, True, "ok")

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("ms", "status"),
    [
        (0.5, Status.OK),
        (11_999.0, Status.OK),
        (12_001.0, Status.CRASHED),
        (1.7e308, Status.CRASHED),
    ],
)
def test_a_duration_past_the_jobs_wall_time_is_the_checks_fault(ms: float, status: Status) -> None:
    settings = Settings(pool_size=0, result_blocks=False)
    with SandboxRunner(settings, backend=DurationBackend()) as runner:
        [result] = runner.run_check(CodeCheck("src"), [{"model_output": repr(ms)}], LIMITS)
    assert result.status is status, result
    if status is Status.CRASHED:
        assert "longer than the job's wall time (12 s)" in (result.error or "")
    else:
        assert result.duration_ms == ms
