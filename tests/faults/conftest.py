"""Fixtures for the fault tests: the parts underneath scorebox stopped and started again
(``tests/parts.py``), each test with a server of its own."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.parts import POSTGRES_SH, DockerEngine, PostgresServer


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    out = subprocess.run(
        ["bash", str(POSTGRES_SH), "start"], check=True, timeout=180, capture_output=True, text=True
    )
    server = PostgresServer(out.stdout.strip().splitlines()[-1])
    try:
        yield server
    finally:
        subprocess.run(["bash", str(POSTGRES_SH), "stop", server.url], check=False, timeout=120)


@pytest.fixture
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerEngine]:
    """The Docker engine, for a test that restarts it; running again after the test."""
    engine = DockerEngine(tmp_path_factory.mktemp("dockerd") / "dockerd.log")
    try:
        yield engine
    finally:
        if not engine.answers() and engine.argv:
            engine.start()
