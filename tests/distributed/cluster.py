"""A distributed scorebox on this machine: PostgreSQL, Redis, `scorebox worker`s and `serve`s."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from engine.storage import SqlStore, open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL, remove_test_containers
from tests.live_server import (
    CLI,
    duplicate_results,
    free_port,
    wait_healthy,
)

ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    """Processes over loopback; every one is killed and its containers removed at ``close``."""

    def __init__(self, tmp: Path, pg_url: str, redis_url: str, **env: str) -> None:
        import redis

        redis.Redis.from_url(redis_url).flushdb()
        self.tmp = tmp
        self.pg_url = pg_url
        self.redis_url = redis_url
        self.store: SqlStore = open_store(pg_url)  # migrated once, before any node starts
        self.env = {
            **os.environ,
            "SCOREBOX_BROKER_URL": redis_url,
            "SCOREBOX_DATABASE_URL": pg_url,
            "SCOREBOX_DATA_DIR": str(tmp),
            "SCOREBOX_POOL_SIZE": "1",
            "SCOREBOX_MAX_PARALLEL_JOBS": "2",
            "SCOREBOX_RUN_CHUNK_ROWS": "500",
            "SCOREBOX_JOB_MAX_ROWS": "500",
            "SCOREBOX_CHUNK_LEASE_SECONDS": "3",
            "SCOREBOX_QUEUE_LEASE_SECONDS": "6",
            "SCOREBOX_DISPATCH_INTERVAL_SECONDS": "0.2",
            "SCOREBOX_CONTAINER_LABELS": json.dumps({TEST_LABEL: "1"}),
            **env,
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        self.pids: list[int] = []

    # ---- processes ----------------------------------------------------------------------

    def _spawn(
        self, name: str, args: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [*CLI, *args],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.tmp,
        )
        self.procs[name] = proc
        self.pids.append(proc.pid)
        return proc

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_worker(
        self,
        name: str,
        concurrency: int = 2,
        wait: bool = True,
        queues: str | None = None,
        extra: list[str] | None = None,
        **env: str,
    ) -> None:
        """``scorebox worker``; ``extra``: more arguments, ``env``: this worker's settings."""
        args = ["worker", "--concurrency", str(concurrency), "-n", f"{name}@%h", *(extra or [])]
        proc = self._spawn(name, [*args, "--queues", queues] if queues else args, env)
        if wait:
            deadline = time.monotonic() + 120
            while " ready." not in self.log(name):
                assert proc.poll() is None, f"worker {name} exited:\n{self.log(name)[-3000:]}"
                assert time.monotonic() < deadline, f"worker {name} not ready:\n{self.log(name)}"
                time.sleep(0.2)

    def start_server(self, name: str, **env: str) -> None:
        """``scorebox serve`` on a free port; ``env``: this node's extra settings."""
        port = free_port()
        self.ports[name] = port
        proc = self._spawn(name, ["serve", "--port", str(port), "--log-level", "warning"], env)
        wait_healthy(f"http://127.0.0.1:{port}", proc, self.tmp / f"{name}.log")

    def kill(self, name: str) -> None:
        """``kill -9``."""
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    def worker_id(self, name: str) -> str:
        """The id a worker writes in the ledger (host:pid)."""
        return f"{socket.gethostname()}:{self.procs[name].pid}"

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        host = socket.gethostname()
        for pid in self.pids:
            remove_test_containers(f"{host}:{pid}")
        self.store.engine.dispose()

    # ---- API ----------------------------------------------------------------------------

    def tenant(self, name: str, **quotas: int) -> dict[str, str]:
        return {"Authorization": f"Bearer {auth.create_tenant(self.store, name, quotas).secret}"}

    def client(self, server: str, headers: dict[str, str]) -> httpx.Client:
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.ports[server]}", headers=headers, timeout=120
        )

    def sql(self, query: str, **params: Any) -> list[Any]:
        with self.store.engine.connect() as conn:
            return list(conn.execute(text(query), params).all())

    def duplicates(self, run_id: str) -> list[Any]:
        return duplicate_results(self.store.engine, run_id)
