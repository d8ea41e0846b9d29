"""Distributed-mode fixtures: a fresh PostgreSQL database and a Redis broker.

Redis comes from ``SCOREBOX_TEST_REDIS_URL`` (``scripts/dev.sh test`` starts one
with ``scripts/redis.sh start``); without it a throwaway server is started
here. These tests never skip when CI=true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import _postgres_database
from tests.conftest import _in_ci

ROOT = Path(__file__).resolve().parents[2]
REDIS_ENV = "SCOREBOX_TEST_REDIS_URL"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database (fails in CI without a server)."""
    yield from _postgres_database()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis server for the broker; flushed by each cluster."""
    url = os.environ.get(REDIS_ENV)
    if url:
        yield url
        return
    if shutil.which("redis-server") is None and os.geteuid() != 0:
        message = f"{REDIS_ENV} is not set and redis-server is missing: run scripts/dev.sh test"
        if _in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    started = subprocess.run(
        [str(ROOT / "scripts" / "redis.sh"), "start"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if started.returncode != 0:
        pytest.fail(f"scripts/redis.sh start failed: {started.stderr[-2000:]}", pytrace=False)
    url = started.stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([str(ROOT / "scripts" / "redis.sh"), "stop", url], timeout=60, check=False)
