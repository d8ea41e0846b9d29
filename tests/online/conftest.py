"""Fixtures of the OTLP receiver tests: the app factory on SQLite and PostgreSQL (the API
tests'), and the test-only virtualenv of real instrumented clients (``otel_python``).

``scripts/otel_venv.sh`` makes that venv (``.scorebox/otel-venv``, git-ignored): the OpenAI
client, the OpenTelemetry SDK and OTLP/HTTP exporter, and three instrumentations. In CI
(or with SCOREBOX_TEST_DOCKER=1, as ``scripts/dev.sh test`` sets, or SCOREBOX_TEST_OTEL=1)
nothing here skips: a venv that cannot be made fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.api.conftest import api, database_url, docker_api, make_api
from tests.conftest import _in_ci

__all__ = ["api", "database_url", "docker_api", "make_api", "otel_python"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def otel_python() -> str:
    """The python of the venv with the instrumented clients (scripts/otel_venv.sh)."""
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "otel_venv.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        message = f"scripts/otel_venv.sh failed:\n{proc.stderr[-3000:]}"
        must_run = {os.environ.get("SCOREBOX_TEST_DOCKER"), os.environ.get("SCOREBOX_TEST_OTEL")}
        if _in_ci() or "1" in must_run:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return proc.stdout.strip().splitlines()[-1]
