"""Environment builds admitted under the global cap, with threads and a fake install that
takes its time: the fair slots' turns and timeouts, builds past the cap waiting their turn,
a build counted in flight while it runs. The pure parts (keys, the prune plan, in-flight
counts) are unit tests (tests/unit/test_environment_admission.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine.environments import Environments
from engine.environments.admission import FairSlots
from engine.environments.records import BuildOutcome
from engine.errors import EnvironmentBuildError
from engine.settings import Settings
from tests.unit.test_environment_admission import SlowInstaller, _offline_downloads


def test_fair_slots_serve_tenants_in_turn() -> None:
    slots = FairSlots(1)
    assert slots.acquire("holder", 1)
    order: list[str] = []
    threads = []

    def take(tenant: str) -> None:
        assert slots.acquire(tenant, 10)
        order.append(tenant)
        slots.release()

    for tenant in ("a", "a", "a", "b"):  # a queues three before b queues one
        thread = threading.Thread(target=take, args=(tenant,))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)
    assert slots.waiting() == 4
    slots.release()
    for thread in threads:
        thread.join(10)
    assert order == ["a", "b", "a", "a"]  # b is not held behind a's whole queue
    assert slots.busy == 0


def test_a_slot_wait_gives_up_after_its_timeout() -> None:
    slots = FairSlots(1)
    assert slots.acquire("a", 1)
    started = time.monotonic()
    assert not slots.acquire("b", 0.2)
    assert 0.15 < time.monotonic() - started < 2
    assert slots.waiting() == 0


def test_builds_past_the_global_cap_wait_and_are_served_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", env_max_concurrent_builds=1)
    installer = SlowInstaller(0.3)
    environments = Environments(settings, installer)
    _offline_downloads(environments, monkeypatch)
    outcomes: list[BuildOutcome] = []
    environments.listeners["test"] = outcomes.append
    asks = [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")]
    threads = []
    for tenant, package in asks:
        thread = threading.Thread(target=environments.ensure, args=([package], tenant))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)
    for thread in threads:
        thread.join(30)
    assert installer.most == 1  # never two builds at once
    assert installer.order[:2] == [("a1",), ("b1",)], installer.order  # b is not held back
    assert sorted((o.tenant, o.outcome) for o in outcomes) == [
        ("a", "built"),
        ("a", "built"),
        ("a", "built"),
        ("b", "built"),
    ]
    assert all(o.key and o.requirements and o.size_bytes == 1000 for o in outcomes)


def test_a_build_that_finds_no_slot_fails_and_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(
        data_dir=tmp_path, image="img:1", env_max_concurrent_builds=1, env_wait_seconds=0.2
    )
    environments = Environments(settings, SlowInstaller(0.0))
    _offline_downloads(environments, monkeypatch)
    assert environments.slots.acquire("other", 1)
    with pytest.raises(EnvironmentBuildError, match="SCOREBOX_ENV_MAX_CONCURRENT_BUILDS"):
        environments.ensure(["x"], "t")
    assert environments.state(["x"]).state == "missing"  # not a remembered failure
    environments.slots.release()
    assert environments.ensure(["x"], "t").key == environments.key(["x"])


def test_a_build_counts_in_flight_for_its_tenant_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environments = Environments(Settings(data_dir=tmp_path, image="img:1"), SlowInstaller(0.5))
    _offline_downloads(environments, monkeypatch)
    thread = threading.Thread(target=environments.ensure, args=(["x>=1"], "t"))
    thread.start()
    time.sleep(0.2)
    assert environments.in_flight.of("t") == {("x>=1",)}
    thread.join(10)
    assert environments.in_flight.of("t") == set()
