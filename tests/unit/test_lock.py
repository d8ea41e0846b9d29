"""The locks agree with pyproject.toml and with what is installed.

`scripts/dev.sh` installs scorebox's dependencies from requirements/dev.lock with
`--require-hashes`; a deployment installs from requirements/runtime.lock (docs/deploy.md);
`scripts/dev.sh lock` regenerates both. These tests fail when pyproject.toml asks for
something a lock does not pin (or pins at a version the specifier refuses), when an
entry has no hash, when the runtime lock pins a version the tests did not run with, or
when the environment running the tests drifted from the dev lock.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "dev.lock"
RUNTIME_LOCK = ROOT / "requirements" / "runtime.lock"
#: The extras each lock is made from (scripts/dev.sh run_lock).
LOCK_EXTRAS = {LOCK: ("dev",), RUNTIME_LOCK: ("distributed", "calibration")}
PYPROJECT = ROOT / "pyproject.toml"


@dataclass(frozen=True)
class Pin:
    """One locked distribution: its requirement line (with markers) and its hashes."""

    requirement: Requirement
    hashes: tuple[str, ...]

    @property
    def version(self) -> Version:
        (spec,) = self.requirement.specifier
        return Version(spec.version)


def parse_lock(text: str) -> dict[str, Pin]:
    """Read a pip requirements file in uv's/pip-compile's hashed layout."""
    pins: dict[str, Pin] = {}
    entries: list[list[str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if raw[:1].isspace() and entries:
            entries[-1].append(line)
        else:
            entries.append([line])
    for entry in entries:
        head = entry[0].rstrip("\\").strip()
        hashes = tuple(
            part.rstrip("\\").strip().removeprefix("--hash=")
            for part in entry[1:]
            if part.startswith("--hash=")
        )
        requirement = Requirement(head)
        pins[canonicalize_name(requirement.name)] = Pin(requirement, hashes)
    return pins


def declared_requirements(extras: tuple[str, ...] = ("dev",)) -> list[Requirement]:
    """What pyproject.toml asks for: the dependencies and the extras a lock is made from."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


@pytest.fixture(scope="module")
def pins() -> dict[str, Pin]:
    return parse_lock(LOCK.read_text())


@pytest.fixture(scope="module")
def runtime_pins() -> dict[str, Pin]:
    return parse_lock(RUNTIME_LOCK.read_text())


@pytest.mark.parametrize("lock", [LOCK, RUNTIME_LOCK], ids=["dev", "runtime"])
def test_the_lock_records_the_command_that_made_it(lock: Path) -> None:
    header = lock.read_text().splitlines()[:2]
    extras = " ".join(f"--extra {extra}" for extra in LOCK_EXTRAS[lock])
    assert f"uv pip compile pyproject.toml {extras} --generate-hashes" in header[1]
    assert f"-o requirements/{lock.name}" in header[1]


@pytest.mark.parametrize("lock", [LOCK, RUNTIME_LOCK], ids=["dev", "runtime"])
def test_every_declared_requirement_is_pinned_at_a_version_it_allows(lock: Path) -> None:
    pins = parse_lock(lock.read_text())
    problems = []
    for requirement in declared_requirements(LOCK_EXTRAS[lock]):
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement} but the lock pins {pin.version}")
    assert not problems, (
        f"requirements/{lock.name} disagrees with pyproject.toml; run `scripts/dev.sh lock`:\n  "
        + "\n  ".join(problems)
    )


def test_the_runtime_lock_pins_what_the_tests_ran_with(
    pins: dict[str, Pin], runtime_pins: dict[str, Pin]
) -> None:
    # A deployment runs the versions CI tested: every runtime pin is in the dev lock, equal.
    differ = [
        f"{name}: runtime.lock {pin.version}, dev.lock "
        + (str(pins[name].version) if name in pins else "absent")
        for name, pin in runtime_pins.items()
        if name not in pins or pins[name].version != pin.version
    ]
    assert not differ, "the two locks disagree; run `scripts/dev.sh lock`:\n  " + "\n  ".join(
        differ
    )


def test_the_runtime_lock_carries_no_test_or_lint_tool(runtime_pins: dict[str, Pin]) -> None:
    dev_only = {"pytest", "mypy", "ruff", "playwright", "schemathesis", "mkdocs", "bandit"}
    assert not dev_only & set(runtime_pins)
    assert {"celery", "redis", "psycopg", "fastapi", "uvicorn"} <= set(runtime_pins)


@pytest.mark.parametrize("lock", [LOCK, RUNTIME_LOCK], ids=["dev", "runtime"])
def test_every_pin_is_exact_and_hashed(lock: Path) -> None:
    pins = parse_lock(lock.read_text())
    assert len(pins) > 50
    for name, pin in pins.items():
        (spec,) = pin.requirement.specifier
        assert spec.operator == "==", name
        assert pin.hashes, f"{name} has no --hash"
        assert all(h.startswith("sha256:") and len(h) == 71 for h in pin.hashes), name


def test_the_installed_environment_is_the_locked_one(pins: dict[str, Pin]) -> None:
    drift = []
    for name, pin in pins.items():
        marker = pin.requirement.marker
        if marker is not None and not marker.evaluate():
            continue
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            drift.append(f"{name}=={pin.version} is locked but not installed")
            continue
        if installed != pin.version:
            drift.append(f"{name}: installed {installed}, locked {pin.version}")
    assert not drift, "this environment drifted from requirements/dev.lock:\n  " + "\n  ".join(
        drift
    )


def test_the_parser_reads_markers_and_continuations() -> None:
    text = (
        "# header\n"
        "colorama==0.4.6 ; sys_platform == 'win32' \\\n"
        "    --hash=sha256:" + "a" * 64 + " \\\n"
        "    --hash=sha256:" + "b" * 64 + "\n"
        "    # via click\n"
        "Click==8.1.7 \\\n"
        "    --hash=sha256:" + "c" * 64 + "\n"
    )
    pins = parse_lock(text)
    assert set(pins) == {"colorama", "click"}
    assert pins["colorama"].requirement.marker is not None
    assert len(pins["colorama"].hashes) == 2
    assert pins["click"].version == Version("8.1.7")
