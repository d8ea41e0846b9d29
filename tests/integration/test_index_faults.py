"""The package index fails during an environment build.

The build fails with a clear, retryable state (``PackageIndexError``: every row of that
check is ``sandbox_error`` naming the index and the retry), other checks keep scoring
meanwhile, and once the index answers again the next use after
``SCOREBOX_ENV_RETRY_SECONDS`` builds the environment. Both faults are real: a port
nobody listens on, and a server that accepts and never answers.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from engine.contract import Status
from engine.environments import environment_key, read_block
from engine.models import RowResult
from engine.sandbox.docker.backend import DockerBackend
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings

pytestmark = pytest.mark.docker

# A small pure-Python wheel no other test declares, so its environment is built here.
SOURCE = '# /// script\n# dependencies = ["text-unidecode==1.3"]\n# ///\n' + (
    "from text_unidecode import unidecode\n"
    "def evaluate(model_output) -> bool:\n"
    "    return unidecode(model_output) == 'cafe'\n"
)
PLAIN = "def evaluate(model_output) -> float:\n    return float(len(model_output))\n"
ROWS = [{"model_output": "café"}, {"model_output": "tea"}]
RETRY = 8.0  # SCOREBOX_ENV_RETRY_SECONDS in the first test
TOKEN = "idx-token-5ec2e7"  # in the index URL of the first test


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there once the probe is closed


def _only_the_given_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip on this host may also read a local mirror from its own configuration (extra
    indexes, find-links): hide it, so the index the test names is the only one."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)


def _fresh(settings: Settings) -> None:
    """Remove the environment this file builds, so each test starts without it."""
    runner = SandboxRunner(settings)
    try:
        backend = runner.backend
        assert isinstance(backend, DockerBackend)
        key = environment_key(read_block(SOURCE).requirements, settings.image)
        backend.environments.installer.remove_environment(key)
    finally:
        runner.close()


def _statuses(results: list[RowResult]) -> list[Status]:
    return [r.status for r in results]


def test_an_unreachable_index_fails_the_build_retryably_and_the_next_use_builds(
    docker_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = docker_settings.model_copy(
        update={
            "data_dir": tmp_path,
            # a token in the URL, as private indexes have: it never reaches the tenant
            "package_index_url": f"http://scorebox:{TOKEN}@127.0.0.1:{_closed_port()}/simple",
            "env_retry_seconds": RETRY,
        }
    )
    _fresh(down)
    with monkeypatch.context() as patch:
        _only_the_given_index(patch)
        patch.setenv("PIP_RETRIES", "1")  # pip's own retries: seconds, not minutes
        runner = SandboxRunner(down)
        try:
            failed = runner.run_check(SOURCE, ROWS)
            failed_at = time.monotonic()
            assert _statuses(failed) == [Status.SANDBOX_ERROR] * 2
            error = failed[0].error or ""
            assert "could not reach the package index (" in error, error
            # neither the index's address nor its token nor a host path reaches the rows
            for secret in (TOKEN, "127.0.0.1", str(tmp_path)):
                assert all(secret not in (r.error or "") for r in failed), (secret, error)
            assert "retryable" in error and f"SCOREBOX_ENV_RETRY_SECONDS={RETRY:.0f}" in error
            assert "no wheel" not in error  # pip's "no matching distribution" is not the cause
            # other checks keep scoring on the same runner
            plain = runner.run_check(PLAIN, ROWS)
            assert [(r.status, r.score) for r in plain] == [(Status.OK, 4.0), (Status.OK, 3.0)]
            backend = runner.backend
            assert isinstance(backend, DockerBackend)
            state = backend.environments.state(read_block(SOURCE).requirements)
            assert (state.state, state.retryable) == ("failed", True)
            assert state.retry_after_seconds is not None and 0 < state.retry_after_seconds <= RETRY
            assert TOKEN not in (state.error or "") and str(tmp_path) not in (state.error or "")
            build_log = backend.environments.log_path(state.key).read_text()
            assert "--index-url http://***@127.0.0.1:" in build_log  # the operator's log
            assert TOKEN not in build_log
            # within the retry window the remembered failure answers at once, no second download
            again = runner.run_check(SOURCE, ROWS[:1])
            assert _statuses(again) == [Status.SANDBOX_ERROR]
            assert "could not reach the package index" in (again[0].error or "")
        finally:
            runner.close()

    # the retry window passes; the index "comes back" (pip's own configuration)
    time.sleep(max(0.0, failed_at + RETRY + 0.2 - time.monotonic()))
    back = down.model_copy(update={"package_index_url": None})
    runner = SandboxRunner(back)
    try:
        scored = runner.run_check(SOURCE, ROWS)
        assert [(r.status, r.score) for r in scored] == [
            (Status.OK, True),
            (Status.OK, False),
        ], scored[0].error
    finally:
        runner.close()


def test_a_silent_index_is_cut_off_and_other_checks_score_while_it_hangs(
    docker_settings: Settings, tmp_path: Path, silent_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_the_given_index(monkeypatch)
    stalled = docker_settings.model_copy(
        update={
            "data_dir": tmp_path,
            "package_index_url": silent_index,
            "env_build_timeout_seconds": 8.0,
        }
    )
    _fresh(stalled)
    runner = SandboxRunner(stalled)
    order: list[str] = []
    outcome: list[RowResult] = []

    def score_stalled() -> None:
        outcome.extend(runner.run_check(SOURCE, ROWS))
        order.append("stalled")

    thread = threading.Thread(target=score_stalled)
    try:
        thread.start()
        time.sleep(0.5)  # the build is now waiting on the silent index
        plain = runner.run_check(PLAIN, ROWS)
        order.append("plain")
        thread.join(60)
        assert not thread.is_alive()
    finally:
        runner.close()
    assert [(r.status, r.score) for r in plain] == [(Status.OK, 4.0), (Status.OK, 3.0)]
    assert order == ["plain", "stalled"]  # the stalled build held no one else up
    assert _statuses(outcome) == [Status.SANDBOX_ERROR] * 2
    error = outcome[0].error or ""
    assert "SCOREBOX_ENV_BUILD_TIMEOUT_SECONDS=8" in error, error
    assert "answered too slowly" in error and "retryable" in error
