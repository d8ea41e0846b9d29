"""A row's duration longer than its job could have run is forged: the job stream refuses it
(the fake backend's records cross the same rules as a container's; no Docker)."""

from __future__ import annotations

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.fake import FakeBackend
from engine.sandbox.protocol import Job, JobRow, RowRecord
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

LIMITS = Limits(row_timeout_seconds=2, wall_seconds_max=60)  # one row's job: 12 s


def _duration(job: Job, row: JobRow) -> RowRecord:
    """Every row ``ok``, with the duration its model_output names (in ms)."""
    return RowRecord(t="row", i=row.i, status=Status.OK, score=True, ms=float(row.model_output))


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
    with SandboxRunner(settings, backend=FakeBackend(_duration)) as runner:
        [result] = runner.run_check(CodeCheck("src"), [{"model_output": repr(ms)}], LIMITS)
    assert result.status is status, result
    if status is Status.CRASHED:
        assert "longer than the job's wall time (12 s)" in (result.error or "")
    else:
        assert result.duration_ms == ms
