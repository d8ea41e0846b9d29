"""The dashboard in a real browser: Playwright for Python driving Debian's ``chromium``.

A live ``scorebox serve`` runs on a loopback port with a temporary SQLite
database and the real sandbox; two tenants each hold an API key. Its LLM
endpoint is the scripted server of ``tests/fake_llm.py`` (real HTTP). The runs the
tests look at are made through ``/v1`` and scored in containers. In CI (or with
SCOREBOX_TEST_DOCKER=1) nothing here skips: a missing chromium or Playwright fails.
``scripts/dev.sh setup`` installs both (never ``playwright install``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.settings import Settings
from tests.conftest import _in_ci
from tests.fake_llm import FakeLLM
from tests.live_server import serve_env, serving, two_tenants

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SCOREBOX_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

CHECK_V1 = (
    "def evaluate(model_output: str) -> bool:\n"
    "    if 'boom' in model_output:\n"
    "        raise ValueError('boom row')\n"
    "    return len(model_output) > 5\n"
)
CHECK_V2 = (
    "def evaluate(model_output: str) -> bool:\n"
    "    if 'boom' in model_output:\n"
    "        raise ValueError('boom row')\n"
    "    return len(model_output) > 12\n"
)
#: A numeric check in both runs, so the run page draws a histogram with a scale.
LENGTH = "def evaluate(model_output: str) -> float:\n    return len(model_output) / 4\n"


def _must_run() -> bool:
    return _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1"


def _unavailable(message: str) -> None:
    if _must_run():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@dataclass
class Dashboard:
    """A live server with two tenants and the runs the tests look at."""

    url: str
    key: str
    other_key: str
    run_a: str
    run_b: str
    llm: FakeLLM  # the server's LLM endpoint: scripted replies over real HTTP

    def v1(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key or self.key}"}, timeout=60
        )


def _rows() -> list[dict[str, Any]]:
    outputs = ["short", "a medium answer", "boom", "tiny", "exactly long enough text"]
    return [{"id": f"r{i}", "model_output": f"{outputs[i % 5]}{'!' * (i % 3)}"} for i in range(30)]


def _finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while True:
        run: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if run["status"] not in ("queued", "running"):
            return run
        assert time.monotonic() < deadline, f"run {run_id} did not finish: {run}"
        time.sleep(0.3)


def _seed(client: httpx.Client) -> tuple[str, str]:
    runs = []
    length = client.post("/v1/checks", json={"name": "length", "source": LENGTH})
    assert length.status_code == 201, length.text
    for source in (CHECK_V1, CHECK_V2):
        reply = client.post("/v1/checks", json={"name": "long_enough", "source": source})
        assert reply.status_code in (200, 201), reply.text
        ref = f"long_enough@{reply.json()['version']}"
        started = client.post(
            "/v1/runs",
            json={"checks": [ref, "length@1"], "rows": _rows(), "labels": {"suite": "browser"}},
        )
        assert started.status_code == 202, started.text
        run = _finished(client, started.json()["id"])
        assert run["status"] == "succeeded", run
        runs.append(run["id"])
    editable = client.post("/v1/checks", json={"name": "editable", "source": CHECK_V1})
    assert editable.status_code == 201, editable.text
    return runs[0], runs[1]


@pytest.fixture(scope="module")
def dashboard(
    docker_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Dashboard]:
    """``scorebox serve`` on a free loopback port, with two runs of tenant A; SIGTERM after."""
    workdir = tmp_path_factory.mktemp("dashboard")
    key, other = two_tenants(f"sqlite:///{workdir / 'scorebox.db'}", "browser")
    llm = FakeLLM().start()
    env = serve_env(workdir, docker_settings, llm.base_url, SCOREBOX_POOL_SIZE="0")
    try:
        with serving(env, workdir / "server.log") as url:
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
            ) as client:
                run_a, run_b = _seed(client)
            yield Dashboard(url, key, other, run_a, run_b, llm)
    finally:
        llm.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's chromium under Playwright (no browser download)."""
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} missing: run `scripts/dev.sh setup` (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright missing: run `scripts/dev.sh setup` (pip install -e '.[dev]')")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where tests save page screenshots; copied to docs/images with SCOREBOX_SCREENSHOTS=1."""
    where = tmp_path_factory.mktemp("screenshots")
    yield where
    if os.environ.get("SCOREBOX_SCREENSHOTS") == "1":
        target = ROOT / "docs" / "images"
        target.mkdir(parents=True, exist_ok=True)
        for shot in where.glob("*.png"):
            shutil.copy(shot, target / shot.name)
