"""At start-up the service fills the warm pool of its configured limits, before any job:
the first code check after a start takes a started container, not a cold one."""

from __future__ import annotations

from typing import Any

from engine.models import Limits
from engine.sandbox.fake import FakeBackend
from engine.sandbox.pool import profile_key
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings
from tests.api.conftest import TRIVIAL_CHECK, Api, AppFactory
from tests.unit.test_warm_pool import wait_for


class Prewarmed(FakeBackend):
    """A fake backend that records what it was asked to keep warm."""

    def __init__(self) -> None:
        super().__init__()
        self.prewarmed: list[Limits] = []

    def prewarm(self, limits: Limits) -> None:
        self.prewarmed.append(limits)


def test_the_service_asks_its_sandbox_to_keep_its_configured_limits_warm(
    make_api: AppFactory,
) -> None:
    backend = Prewarmed()

    def factory(settings: Settings) -> SandboxRunner:
        return SandboxRunner(settings, backend=backend)

    api = make_api(runner_factory=factory, pool_size=1, limits=Limits(memory_mb=128))
    settings: Settings = api.client.app.state.services.settings  # type: ignore[attr-defined]
    assert backend.prewarmed == [settings.limits]
    assert backend.prewarmed[0].memory_mb == 128
    assert backend.calls == []  # no job ran for it


def test_the_first_job_after_start_up_finds_a_warm_container(docker_api: Api) -> None:
    services: Any = docker_api.client.app.state.services  # type: ignore[attr-defined]
    runner = services.runners.get()
    key = profile_key(services.settings.limits)
    wait_for(lambda: runner.backend.pool.sizes().get(key) == 1, seconds=60)
    assert runner.backend.pool.targets()[key] == 1

    headers = docker_api.tenant()
    docker_api.push(headers, "trivial", TRIVIAL_CHECK)
    body = {"checks": ["trivial"], "rows": [{"model_output": "yes"}]}
    reply = docker_api.client.post("/v1/score", headers=headers, json=body)
    assert reply.status_code == 200, reply.text
    assert [r["status"] for r in reply.json()["results"]] == ["ok"]
    # A job that found none ready raises the profile's target (a cold start): this one took
    # the container started at start-up, and the pool refills to the same target.
    assert runner.backend.pool.targets()[key] == 1
