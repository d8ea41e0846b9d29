"""A real ``scorebox serve`` on a loopback port with a temporary data directory."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from bench import workload
from bench.measure import call_latencies
from bench.scorebox_side import LABEL, ONE_ROW, BenchError, remove_own_containers

CLI = [sys.executable, "-c", "from engine.cli import main; main()"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``scorebox serve`` in a child process (embedded mode, SQLite in a temp dir).

    ``env`` adds or overrides ``SCOREBOX_*`` variables. A tenant is created with
    ``scorebox tenant create`` and both checks of the workload are pushed.
    """

    def __init__(self, env: dict[str, str] | None = None, concurrent_jobs: int = 8) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="scorebox-bench-")
        data = Path(self._tmp.name)
        self.port = free_port()
        base = {k: v for k, v in os.environ.items() if k not in ("SCOREBOX_DATABASE_URL",)}
        self.env = {
            **base,
            "SCOREBOX_DATA_DIR": str(data),
            "SCOREBOX_BROKER_URL": "",
            "SCOREBOX_CONTAINER_LABELS": json.dumps({LABEL: "1"}),
            **(env or {}),
        }
        self.concurrent_jobs = concurrent_jobs
        self.log_path = data / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.headers: dict[str, str] = {}

    def __enter__(self) -> Server:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        created = subprocess.run(
            [
                *CLI,
                "tenant",
                "create",
                "bench",
                "--quota",
                f"concurrent_jobs={self.concurrent_jobs}",
            ],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0:
            raise BenchError(f"scorebox tenant create failed: {created.stderr.strip()}")
        self.headers = {"Authorization": f"Bearer {created.stdout.strip().splitlines()[-1]}"}
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [*CLI, "serve", "--port", str(self.port), "--log-level", "warning"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"scorebox serve exited: {self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"scorebox serve did not answer in 120 s: {self.log_tail()}")
            time.sleep(0.2)
        with self.client() as client:
            for name, source in workload.CHECKS.items():
                reply = client.post("/v1/checks", json={"name": name, "source": source})
                if reply.status_code not in (200, 201):
                    raise BenchError(f"pushing {name}: {reply.status_code} {reply.text}")

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=self.headers, timeout=120)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            remove_own_containers(self.proc.pid)
            self.proc = None
        self._tmp.cleanup()


SCORE_BODY: dict[str, Any] = {
    "checks": ["trivial"],
    "rows": [{"model_output": ONE_ROW["model_output"]}],
}


def score_once(client: httpx.Client) -> None:
    reply = client.post("/v1/score", json=SCORE_BODY)
    if reply.status_code != 200:
        raise BenchError(f"/v1/score answered {reply.status_code}: {reply.text[:300]}")
    body = reply.json()
    statuses = [item.get("status") for item in body.get("results", [])]
    if statuses != ["ok"]:
        raise BenchError(f"/v1/score did not score the row ok: {json.dumps(body)[:300]}")


def score_latency(server: Server, calls: int) -> list[float]:
    """Milliseconds of ``calls`` sequential one-row ``POST /v1/score`` after a warm-up."""
    with server.client() as client:
        return call_latencies(lambda: score_once(client), calls, warmup=10)


def concurrent_score(server: Server, clients: int, per_client: int) -> tuple[float, list[float]]:
    """(requests/s, per-request ms) with ``clients`` threads, each ``per_client`` requests."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    start = threading.Barrier(clients + 1)

    def client_loop(k: int) -> None:
        with server.client() as client:
            score_once(client)  # its own connection, warm
            start.wait()
            try:
                for _ in range(per_client):
                    began = time.perf_counter()
                    score_once(client)
                    latencies[k].append((time.perf_counter() - began) * 1000)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise BenchError(f"{len(errors)} of {clients} clients failed: {errors[0]}")
    flat = [ms for per in latencies for ms in per]
    return len(flat) / elapsed, flat
