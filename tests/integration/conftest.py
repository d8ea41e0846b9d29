"""Fixtures for real-Docker sandbox tests: a SandboxRunner whose backend records container ids."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping

import pytest

from engine.models import Limits
from engine.sandbox.backend import JobEnd, JobEvent
from engine.sandbox.docker.backend import DockerBackend
from engine.sandbox.protocol import Job
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings
from tests.conftest import TEST_LABEL


class RecordingBackend(DockerBackend):
    """A DockerBackend that remembers which container served each job."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.container_ids: list[str] = []

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        for event in super().execute(job, limits, labels):
            if isinstance(event, JobEnd) and event.container_id:
                self.container_ids.append(event.container_id)
            yield event


def labelled_containers() -> list[str]:
    """Ids of every container carrying the test label, running or not."""
    out = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={TEST_LABEL}=1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.split()


FAST = Limits(row_timeout_seconds=1.5, wall_seconds_max=60)


@pytest.fixture(scope="module")
def backend(docker_settings: Settings) -> Iterator[RecordingBackend]:
    backend = RecordingBackend(docker_settings)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def runner(docker_settings: Settings, backend: RecordingBackend) -> Iterator[SandboxRunner]:
    runner = SandboxRunner(docker_settings, backend=backend)
    yield runner
    runner.close()
