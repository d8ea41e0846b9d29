"""``scorebox serve`` as a real process on a loopback port, for the tests that need one.

``serving`` is the whole life: a free port, the process, ``/healthz`` answering, and
SIGTERM (then SIGKILL) after. Its parts are here too for tests that restart a server on the
same port (``spawn_serve``, ``wait_healthy``, ``stop``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from engine.settings import Settings
from engine.storage import open_store
from engine.storage.result_blocks import decode_block
from engine.tenancy import auth
from tests.conftest import TEST_LABEL
from tests.fake_llm import MODEL

CLI = [sys.executable, "-c", "from engine.cli import main; main()"]


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_env(
    workdir: Path, docker_settings: Settings, llm_url: str | None = None, **env: str
) -> dict[str, str]:
    """A test server's environment: SQLite and data in ``workdir``, the tests' sandbox image
    and container label, the scripted LLM at ``llm_url`` if given; ``env`` on top."""
    out = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(workdir),
        "SCOREBOX_DATABASE_URL": f"sqlite:///{workdir / 'scorebox.db'}",
        "SCOREBOX_MAX_PARALLEL_JOBS": "2",
        "SCOREBOX_IMAGE": docker_settings.image,
        "SCOREBOX_CONTAINER_LABELS": json.dumps({TEST_LABEL: "1"}),
    }
    if docker_settings.runtime:
        out["SCOREBOX_RUNTIME"] = docker_settings.runtime
    if llm_url is not None:
        out.update(
            SCOREBOX_LLM_BASE_URL=llm_url,
            SCOREBOX_LLM_API_KEY="test-key",
            SCOREBOX_LLM_MODEL=MODEL,
            SCOREBOX_LLM_MAX_RETRIES="0",
        )
    return {**out, **env}


def two_tenants(database_url: str, prefix: str) -> tuple[str, str]:
    """API keys of two new tenants, ``PREFIX-a`` and ``PREFIX-b`` (the schema made first)."""
    store = open_store(database_url)
    try:
        return (
            auth.create_tenant(store, f"{prefix}-a").secret,
            auth.create_tenant(store, f"{prefix}-b").secret,
        )
    finally:
        store.engine.dispose()


def spawn_serve(
    env: Mapping[str, str], port: int, log: Path, *args: str
) -> subprocess.Popen[bytes]:
    """Start ``scorebox serve --port PORT ARGS``; its output is appended to ``log``."""
    with log.open("ab") as out:  # the child has its own copy of the descriptor
        return subprocess.Popen(
            [*CLI, "serve", "--port", str(port), *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    """Wait until ``GET /healthz`` is 200; fail with the log's tail if the server exits first."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"scorebox serve exited:\n{_tail(log)}"
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, (
            f"scorebox serve did not start in {timeout:.0f} s:\n{_tail(log)}"
        )
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    """SIGTERM, and SIGKILL if it has not exited within ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serving(env: Mapping[str, str], log: Path, *args: str, timeout: float = 120) -> Iterator[str]:
    """A ``scorebox serve`` on a free loopback port with ``env``: its base URL while it runs."""
    port = free_port()
    proc = spawn_serve(env, port, log, *args)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, log, timeout)
        yield url
    finally:
        stop(proc)


def wait_run(client: httpx.Client, run_id: str, timeout: float = 240) -> dict[str, Any]:
    """The run's body once it is no longer queued or running (answers other than 200,
    such as a 503 while a part underneath is away, are waited out too)."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while True:
        answer = client.get(f"/v1/runs/{run_id}")
        if answer.status_code == 200:
            body = dict(answer.json())
            if body["status"] not in ("queued", "running"):
                return body
        assert time.monotonic() < deadline, f"run still {body.get('status')}: {body}"
        time.sleep(0.25)


def wait_done(client: httpx.Client, run_id: str, at_least: int, timeout: float = 180) -> int:
    """Wait until the run has at least ``at_least`` results stored; returns how many."""
    deadline = time.monotonic() + timeout
    while True:
        done = int(client.get(f"/v1/runs/{run_id}").json()["progress"]["done"])
        if done >= at_least:
            return done
        assert time.monotonic() < deadline, f"run {run_id} stuck at {done} results"
        time.sleep(0.1)


def run_results(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    """Every stored result of a run, from its NDJSON stream."""
    lines = client.get(
        f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
    ).text.splitlines()
    return [json.loads(line) for line in lines]


#: SQL joining a run's result blocks (``b``) to the distributed chunk (``c``) whose range
#: holds their first row: a chunk's writes never leave its range.
IN_CHUNK = (
    "b.run_id = c.run_id AND b.check_index = c.check_index "
    "AND b.row_start >= c.row_start AND b.row_start < c.row_stop"
)


def duplicate_results(engine: Engine, run_id: str) -> list[Any]:
    """(check, row, count) for every row of a run stored more than once: [] when none."""
    seen: Counter[tuple[int, int]] = Counter()
    with engine.connect() as conn:
        blocks = conn.execute(
            text("SELECT check_index, data FROM run_result_blocks WHERE run_id = :r"),
            {"r": run_id},
        ).all()
    for check_index, data in blocks:
        seen.update((int(check_index), row) for row in decode_block(bytes(data)).row_index.tolist())
    return sorted((check, row, n) for (check, row), n in seen.items() if n > 1)
