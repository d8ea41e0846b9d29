"""What bounds environment builds, without Docker: one key per requirement set however it is
spelled, the audit of each build, and which environments pruning removes. The global cap
on builds served in turn across tenants, whose tests wait on threads and a slow fake
install, is in tests/integration/test_environment_admission_waits.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.environments import EnvironmentRecord, Environments, read_block
from engine.environments.admission import InFlight
from engine.environments.prune import RECENT_SECONDS, plan_prune
from engine.environments.records import BuildOutcome
from engine.environments.spec import canonical_requirements
from engine.settings import Settings


def _block(*requirements: str) -> tuple[str, ...]:
    listed = ", ".join(f'"{r}"' for r in requirements)
    return read_block(f"# /// script\n# dependencies = [{listed}]\n# ///\n").requirements


@pytest.mark.parametrize(
    ("one", "two"),
    [
        (("x>=0",), ("x>=0.0",)),
        (("x>=1.0.0",), ("X>=1",)),
        (("rt4_under_score==2.0",), ("rt4-under-score==2",)),
        (("x>=1", "x<2"), ("x<2.0,>=1.0",)),
        (("x[b,a]>=1",), ("x[a]>=1", "x[B]")),
        (("x!=1.0",), ("x != 1",)),
    ],
)
def test_one_requirement_set_is_one_key_however_spelled(
    one: tuple[str, ...], two: tuple[str, ...]
) -> None:
    assert _block(*one) == _block(*two)


@pytest.mark.parametrize(
    ("one", "two"),
    [
        (("x~=1.0",), ("x~=1.0.0",)),  # different ranges: <2 and <1.1
        (("x==1.*",), ("x==1.0.*",)),
        (("x>=1",), ("x>=1.1",)),
    ],
)
def test_different_requirement_sets_stay_different(
    one: tuple[str, ...], two: tuple[str, ...]
) -> None:
    assert _block(*one) != _block(*two)


def test_canonical_requirements_keep_markers_apart() -> None:
    merged = canonical_requirements(["x>=1", 'x<3; python_version < "3.12"', "x<2"])
    assert merged == ("x<2,>=1", 'x<3; python_version < "3.12"')


def test_in_flight_counts_per_tenant() -> None:
    flight = InFlight()
    flight.add("t1", ("x>=1",))
    flight.add("t1", ("x>=1",))
    flight.add("t1", ("y",))
    assert flight.of("t1") == {("x>=1",), ("y",)} and flight.of("t2") == set()
    flight.done("t1", ("x>=1",))
    assert flight.of("t1") == {("x>=1",), ("y",)}
    flight.done("t1", ("x>=1",))
    flight.done("t1", ("y",))
    assert flight.of("t1") == set()


class SlowInstaller:
    """Builds take ``seconds``; records how many ran at once and in which order."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.images: dict[str, EnvironmentRecord] = {}
        self.running = 0
        self.most = 0
        self.order: list[tuple[str, ...]] = []
        self.lock = threading.Lock()

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        return self.images.get(key)

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.order.append(tuple(requirements))
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        record = EnvironmentRecord(
            key, tuple(requirements), {}, 1000, "img:1", time.time(), 0.1, f"scorebox-env:{key}"
        )
        self.images[key] = record
        return record

    def list_environments(self) -> list[EnvironmentRecord]:
        return list(self.images.values())

    def remove_environment(self, key: str) -> bool:
        return self.images.pop(key, None) is not None


def _offline_downloads(environments: Environments, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environments, "_download", lambda *args: None)
    monkeypatch.setattr(environments, "_download_pip", lambda *args: None)


def _rec(key: str, built_at: float, size_mb: int, base: str = "img:1") -> EnvironmentRecord:
    return EnvironmentRecord(
        key, (key,), {}, size_mb * 1024 * 1024, base, built_at, 1.0, f"scorebox-env:{key}"
    )


def test_prune_plan_other_base_then_unused_then_least_recently_used() -> None:
    now = 1_000_000_000.0
    day = 86400.0
    records = [
        _rec("old-base", now, 10, base="img:0"),
        _rec("unused", now - 40 * day, 10),
        _rec("lru", now - 5 * day, 300),
        _rec("recent", now - 2 * day, 300),
        _rec("now", now - RECENT_SECONDS / 2, 300),
    ]
    used = {"recent": now - day, "now": now - 10}
    plan = plan_prune(
        records,
        lambda r: used.get(r.key, r.built_at),
        image="img:1",
        now=now,
        unused_days=30,
        max_total_bytes=400 * 1024 * 1024,
    )
    assert [(p.key, p.reason.split(" ")[0]) for p in plan] == [
        ("old-base", "built"),
        ("unused", "unused"),
        ("lru", "least"),
        ("recent", "least"),
    ]
    # one used a moment ago stays even past the total; kept keys are never planned
    tight = plan_prune(
        records,
        lambda r: used.get(r.key, r.built_at),
        image="img:1",
        now=now,
        unused_days=0,
        max_total_bytes=1,
        keep=("lru",),
    )
    assert [p.key for p in tight] == ["old-base", "unused", "recent"]


def test_prune_unused_dry_run_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", env_prune_unused_days=1)
    installer = SlowInstaller(0.0)
    environments = Environments(settings, installer)
    installer.images = {"a": _rec("a", time.time() - 3 * 86400, 1), "b": _rec("b", time.time(), 1)}
    assert [p.key for p in environments.prune_unused(dry_run=True)] == ["a"]
    assert sorted(installer.images) == ["a", "b"]
    environments.mark_used("a")  # a job used it: not unused any more
    assert environments.prune_unused() == []
    assert sorted(installer.images) == ["a", "b"]


def test_the_runners_environment_builds_are_audited_from_its_first_job(tmp_path: Path) -> None:
    """The API's runner hook attaches the audit log to the backend's environments, so a
    build a job starts (not only a push) is recorded."""
    from types import SimpleNamespace

    from engine.audit.environments import audit_environment_builds
    from engine.runs.executors import RunnerHolder

    recorded: list[object] = []
    log = SimpleNamespace(record=recorded.append)
    environments = Environments(Settings(data_dir=tmp_path, image="img:1"), SlowInstaller(0.0))
    runner = SimpleNamespace(backend=SimpleNamespace(environments=environments))
    holder = RunnerHolder(Settings(data_dir=tmp_path), factory=lambda _: runner)  # type: ignore[arg-type,return-value]
    holder.on_start.append(audit_environment_builds(log))  # type: ignore[arg-type]
    assert "audit" not in environments.listeners
    holder.get()
    assert "audit" in environments.listeners
    environments._tell(BuildOutcome("k1", ("x",), "t1", "built", 0.1, 10))
    [event] = recorded
    assert (event.action, event.tenant_id, event.target) == ("environment.built", "t1", "k1")  # type: ignore[attr-defined]
    assert event.detail["outcome"] == "built"  # type: ignore[attr-defined]
