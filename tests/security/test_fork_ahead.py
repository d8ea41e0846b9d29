"""A child forked ahead of its job (engine/harness/ahead.py): real Docker, both runtimes.

A warm check container forks the next job's child and loads the check as soon as a job
has ended and the container is clean. That child must hold nothing of the job before it,
and one never used must end with its container.
"""

from __future__ import annotations

import subprocess
import textwrap
import time

import pytest

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.integration.conftest import RecordingBackend

pytestmark = pytest.mark.docker

LIMITS = Limits(row_timeout_seconds=3, wall_seconds_max=60)

#: Counts the rows its process scored (a module global), and says how long ago, and in
#: which process, the check was loaded.
COUNTING = textwrap.dedent(
    """
    import os, time
    LOADED = time.time()
    SCORED = []
    def evaluate(model_output):
        SCORED.append(model_output)
        return (len(SCORED), f"{time.time() - LOADED:.3f} {os.getpid()}")
    """
)

#: Seconds between the two jobs: a child forked ahead was loaded at least this long before
#: its row ran.
PAUSE_SECONDS = 1.5


def run(runner: SandboxRunner, n: int) -> list[RowResult]:
    rows = [{"model_output": str(i)} for i in range(n)]
    return runner.run_check(CodeCheck(COUNTING), rows, LIMITS)


def loaded_ago(result: RowResult) -> tuple[float, int]:
    assert result.explanation is not None
    age, pid = result.explanation.split()
    return float(age), int(pid)


@pytest.mark.parametrize("reuse", ["check", "never"])
def test_a_child_forked_ahead_holds_nothing_of_the_job_before(
    docker_settings: Settings, reuse: str
) -> None:
    settings = docker_settings.model_copy(update={"reuse": reuse})
    backend = RecordingBackend(settings)
    with SandboxRunner(settings, backend=backend) as runner:
        first = run(runner, 3)
        time.sleep(PAUSE_SECONDS)
        second = run(runner, 1)
    assert [(r.status, r.score) for r in first] == [(Status.OK, k) for k in (1, 2, 3)]
    # The module global job 1 filled is empty in job 2: a fresh process, a fresh module.
    assert [(r.status, r.score) for r in second] == [(Status.OK, 1)], second[0].error
    age, pid = loaded_ago(second[0])
    same_container = backend.container_ids[0] == backend.container_ids[1]
    if reuse == "check":
        # The same warm container, whose next child loaded the check before job 2 was sent.
        assert same_container
        assert pid != loaded_ago(first[0])[1]
        assert age >= PAUSE_SECONDS * 0.8, age
    else:
        assert not same_container
        assert age < PAUSE_SECONDS * 0.8, age


def container_state(container: str) -> tuple[str, str]:
    out = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return (out[0], out[1]) if len(out) == 2 else ("", "")


def test_a_child_forked_ahead_and_never_used_ends_with_its_container(
    docker_settings: Settings,
) -> None:
    # The host forgets a warm check container (as a killed host would): the harness's idle
    # limit ends it, with the child it forked ahead waiting for a job that never comes.
    settings = docker_settings.model_copy(
        update={"reuse": "check", "pool_idle_seconds": 1.0, "reuse_idle_seconds": 1.0}
    )
    backend = RecordingBackend(settings)
    runner = SandboxRunner(settings, backend=backend)
    try:
        assert run(runner, 1)[0].status is Status.OK
        container = backend.container_ids[-1]
        backend.kept.idle_seconds = 3600
        deadline = time.monotonic() + 60
        state = container_state(container)
        while state[0] not in ("exited", "dead") and time.monotonic() < deadline:
            time.sleep(0.5)
            state = container_state(container)
    finally:
        runner.close()
    # Exit code 0: the harness killed the unused child and returned (a failure there
    # would end it with a traceback and code 1); every process ends with the container.
    assert state == ("exited", "0"), state
