"""Containers do not outlive a server killed with SIGKILL for long.

Nothing on the host cleans up after a `kill -9`: the harness in each container exits on
its own when no job comes for its idle limit (the host's idle limits plus 10 s), so this
holds with distributed workers too, whether or not a scorebox process restarts there.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from engine.sandbox.docker.containers import LABEL_OWNER
from engine.settings import Settings
from tests.conftest import TEST_LABEL, remove_test_containers
from tests.live_server import free_port, serve_env, spawn_serve, stop, two_tenants, wait_healthy

pytestmark = pytest.mark.docker

CHECK = "def evaluate(model_output):\n    return len(model_output)\n"


def _containers(owner: str, *, running: bool) -> list[str]:
    command = ["docker", "ps", "-q", "--filter", f"label={TEST_LABEL}"]
    command += ["--filter", f"label={LABEL_OWNER}={owner}"]
    if not running:
        command.insert(2, "-a")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_a_killed_servers_containers_exit_on_their_own(
    docker_settings: Settings, tmp_path: Path
) -> None:
    # An owner label naming no real host: no scorebox process's start-up reaper (any test
    # session on this engine starts some) may remove these, so only the harness can end them.
    owner = f"orphan-test-{secrets.token_hex(4)}:1"
    env = serve_env(
        tmp_path,
        docker_settings,
        SCOREBOX_CONTAINER_LABELS=json.dumps({TEST_LABEL: "1", LABEL_OWNER: owner}),
        SCOREBOX_POOL_SIZE="1",
        # Long enough that the server does not retire them before it is killed; the
        # harnesses exit IDLE_EXIT_SLACK_SECONDS after these with no job.
        SCOREBOX_POOL_IDLE_SECONDS="5",
        SCOREBOX_REUSE_IDLE_SECONDS="5",
    )
    key, _ = two_tenants(env["SCOREBOX_DATABASE_URL"], "orphans")
    port = free_port()
    log = tmp_path / "serve.log"
    proc = spawn_serve(env, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, log)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            pushed = client.post("/v1/checks", json={"name": "length", "source": CHECK})
            assert pushed.status_code == 201, pushed.text
            rows = [{"model_output": "abc"}]
            scored = client.post("/v1/score", json={"checks": ["length"], "rows": rows})
            assert scored.status_code == 200, scored.text
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # A warm check worker (and the warm pool) wait for jobs that will never come.
        left = _containers(owner, running=True)
        assert left, "the server left no warm container behind: nothing to test"
        deadline = time.monotonic() + 120
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = _containers(owner, running=True)
        assert not left, f"{len(left)} containers of the killed server still run"
        # They exited on their own (a removal or a kill would not leave an exit code of 0).
        ended = _containers(owner, running=False)
        codes = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.ExitCode}}", *ended],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert codes and set(codes) == {"0"}, codes
    finally:
        stop(proc)
        remove_test_containers(owner)
