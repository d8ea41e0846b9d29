"""Shared fixtures. Docker-backed fixtures never skip when CI=true."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from engine.settings import Settings

pytest_plugins = ["tests.fake_llm"]

TEST_LABEL = "scorebox.test"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _docker_ready(image: str) -> str | None:
    """None when the engine answers and the image exists, else why not."""
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker CLI unusable: {exc}"
    if info.returncode != 0:
        return "Docker engine not reachable: run `scripts/dev.sh setup`"
    inspect = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False
    )
    if inspect.returncode != 0:
        return f"sandbox image {image} missing: run `scorebox image build`"
    return None


@pytest.fixture(scope="session")
def docker_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings for tests that need the real Docker engine and the sandbox image."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("scorebox-data"),
        pool_size=0,
        max_parallel_jobs=2,
        container_labels={TEST_LABEL: "1"},
    )
    problem = _docker_ready(settings.image)
    if problem is not None:
        if _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1":
            pytest.fail(f"Docker tests must run here: {problem}", pytrace=False)
        pytest.skip(problem)
    return settings


@pytest.fixture(scope="session", autouse=True)
def _remove_test_containers() -> Iterator[None]:
    """Remove test-labelled containers this pytest process made and left behind.

    Scoped by the owner label (host:pid) so a concurrent test session on the same
    engine keeps its containers.
    """
    yield
    from engine.sandbox.docker_backend import LABEL_OWNER, owner_label

    try:
        ids = subprocess.run(
            [
                "docker",
                "ps",
                "-aq",
                "--filter",
                f"label={TEST_LABEL}",
                "--filter",
                f"label={LABEL_OWNER}={owner_label()}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.split()
        if ids:
            subprocess.run(
                ["docker", "rm", "-f", *ids], capture_output=True, timeout=60, check=False
            )
    except (OSError, subprocess.TimeoutExpired):
        pass
