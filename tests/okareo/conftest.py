"""The real ``okareo`` SDK (PyPI, in a test-only venv) against a live ``scorebox serve``.

``scripts/okareo_venv.sh`` makes the venv (git-ignored ``.okareo-venv``); SDK
scripts run in it as subprocesses and print JSON the tests assert on. The
server runs on a loopback port with a temporary SQLite database, the sandbox
(Docker) and the scripted LLM server of ``tests/fake_llm.py``. In CI (or with
SCOREBOX_TEST_DOCKER=1) nothing here skips: a missing venv or engine fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.settings import Settings
from tests.conftest import _in_ci
from tests.fake_llm import FakeLLM
from tests.live_server import serve_env, serving, two_tenants

ROOT = Path(__file__).resolve().parents[2]


def _must_run() -> bool:
    return _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1"


@pytest.fixture(scope="session")
def okareo_python() -> str:
    """The python of the venv holding the okareo SDK (made by scripts/okareo_venv.sh)."""
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "okareo_venv.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        message = f"scripts/okareo_venv.sh failed:\n{proc.stderr[-3000:]}"
        if _must_run():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return proc.stdout.strip().splitlines()[-1]


@dataclass
class Server:
    """A live ``scorebox serve`` with two tenants, and a way to run SDK scripts against it."""

    url: str
    key: str
    other_key: str
    python: str
    workdir: Path
    llm: FakeLLM

    def sdk(self, script: str, key: str | None = None, timeout: float = 300) -> Any:
        """Run an SDK script (``okareo`` is a client on this server); return its last JSON line."""
        return json.loads(self.sdk_output(script, key, timeout).strip().splitlines()[-1])

    def sdk_output(self, script: str, key: str | None = None, timeout: float = 300) -> str:
        path = self.workdir / f"script_{time.monotonic_ns()}.py"
        path.write_text(
            "import json, os, sys\n"
            "from okareo import Okareo\n"
            "okareo = Okareo(api_key=os.environ['OKAREO_API_KEY'], "
            "base_path=os.environ['SCOREBOX_URL'])\n" + textwrap.dedent(script)
        )
        return self.run(path, key, timeout)

    def run(self, path: Path, key: str | None = None, timeout: float = 300) -> str:
        """Run a script file unchanged in the SDK's venv, from its directory; its stdout.

        The key and URL are in the environment, as the SDK scripts here and the
        README's example read them (``SCOREBOX_API_KEY``, ``SCOREBOX_SERVER``).
        """
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "OKAREO_API_KEY": key or self.key,
            "SCOREBOX_URL": self.url,
            "SCOREBOX_API_KEY": key or self.key,
            "SCOREBOX_SERVER": self.url,
            "PYTHONPATH": str(path.parent),
        }
        proc = subprocess.run(
            [self.python, str(path)],
            cwd=path.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
        return proc.stdout

    def cli(self, *args: str) -> str:
        """The ``scorebox`` CLI against this server (its key and URL in the environment)."""
        env = {"SCOREBOX_SERVER": self.url, "SCOREBOX_API_KEY": self.key}
        result = CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, f"scorebox {' '.join(args)}:\n{result.output}"
        return result.stdout

    def v1(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key or self.key}"}, timeout=60
        )


@pytest.fixture(scope="module")
def okareo_server(
    okareo_python: str, docker_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """``scorebox serve`` on a free loopback port; stopped (SIGTERM) after the module."""
    workdir = tmp_path_factory.mktemp("okareo")
    key, other = two_tenants(f"sqlite:///{workdir / 'scorebox.db'}", "okareo")
    llm = FakeLLM().start()
    env = serve_env(workdir, docker_settings, llm.base_url, SCOREBOX_POOL_SIZE="1")
    try:
        with serving(env, workdir / "server.log") as url:
            yield Server(url, key, other, okareo_python, workdir, llm)
    finally:
        llm.stop()
