"""A real ``scorebox serve`` on a loopback port with a temporary data directory, and a bare
FastAPI echo served the same way (uvicorn, loopback) as the floor of any request.

    python -m bench.http_side                 # the request path alone (about a minute)
    python -m bench.http_side --calls 500 --json

The standalone run measures, in one run, one client at a time: ``POST /echo`` of a bare
FastAPI app (the same body as the score calls), ``GET /healthz``, ``POST /v1/score`` of
one row with a built-in (``is_json``) and with a warm code check (``trivial``); then
``--clients`` concurrent clients of the code check (requests/s). Each line's p50 is
printed beside its difference from the echo's p50.
"""

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
from collections.abc import Callable
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
    ``scorebox tenant create`` and both checks of the workload are pushed. ``prelude`` is
    Python the server's process runs before ``scorebox serve`` (``bench.stage_cpu``'s).
    """

    def __init__(
        self,
        env: dict[str, str] | None = None,
        concurrent_jobs: int = 8,
        prelude: str | None = None,
    ) -> None:
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
        self.prelude = prelude
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
        cli = CLI if self.prelude is None else [*CLI[:2], f"{self.prelude}\n{CLI[2]}"]
        self.proc = subprocess.Popen(
            [*cli, "serve", "--port", str(self.port), "--log-level", "warning"],
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


def echo_app() -> Any:
    """A bare FastAPI app: the floor any FastAPI route on this machine pays."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/echo")
    def echo(body: dict[str, Any]) -> dict[str, Any]:
        return body

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


class EchoServer:
    """:func:`echo_app` under uvicorn in a child process, as ``scorebox serve`` runs its app."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> EchoServer:
        code = (
            "import uvicorn; from bench.http_side import echo_app; "
            f"uvicorn.run(echo_app(), host='127.0.0.1', port={self.port}, log_level='warning')"
        )
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        }
        self.proc = subprocess.Popen([sys.executable, "-c", code], env=env)
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise BenchError("the bare FastAPI echo did not start")
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=60)


SCORE_BODY: dict[str, Any] = {
    "checks": ["trivial"],
    "rows": [{"model_output": ONE_ROW["model_output"]}],
}


BUILTIN_BODY: dict[str, Any] = {
    "checks": ["is_json"],
    "rows": [{"model_output": ONE_ROW["model_output"]}],
}


def score_once(client: httpx.Client, body: dict[str, Any] = SCORE_BODY) -> None:
    reply = client.post("/v1/score", json=body)
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


def echo_once(client: httpx.Client) -> None:
    reply = client.post("/echo", json=SCORE_BODY)
    if reply.status_code != 200 or reply.json() != SCORE_BODY:
        raise BenchError(f"/echo answered {reply.status_code}: {reply.text[:300]}")


def healthz_once(client: httpx.Client) -> None:
    reply = client.get("/healthz")
    if reply.status_code != 200:
        raise BenchError(f"/healthz answered {reply.status_code}: {reply.text[:300]}")


def builtin_once(client: httpx.Client) -> None:
    reply = client.post("/v1/score", json=BUILTIN_BODY)
    if reply.status_code != 200 or [r["status"] for r in reply.json()["results"]] != ["ok"]:
        raise BenchError(f"/v1/score (built-in) answered {reply.status_code}: {reply.text[:300]}")


ECHO = "bare FastAPI POST /echo"
HEALTHZ = "GET /healthz"
BUILTIN = "POST /v1/score built-in"
CODE = "POST /v1/score warm code check"


def sequential_latencies(echo: EchoServer, server: Server, calls: int) -> dict[str, list[float]]:
    """Milliseconds of ``calls`` sequential calls of each line (:data:`ECHO`, :data:`HEALTHZ`,
    :data:`BUILTIN`, :data:`CODE`), after a warm-up of each.

    The lines are measured in rounds of 50 calls, round-robin, so a burst of load on the
    machine falls on every line alike rather than on one of them.
    """
    samples: dict[str, list[float]] = {ECHO: [], HEALTHZ: [], BUILTIN: [], CODE: []}
    with echo.client() as e, server.client() as c:
        calls_of = {
            ECHO: lambda: echo_once(e),
            HEALTHZ: lambda: healthz_once(c),
            BUILTIN: lambda: builtin_once(c),
            CODE: lambda: score_once(c),
        }
        for fn in calls_of.values():
            call_latencies(fn, 0, warmup=20)
        done = 0
        while done < calls:
            n = min(50, calls - done)
            for name, fn in calls_of.items():
                samples[name] += call_latencies(fn, n, warmup=0)
            done += n
    return samples


def run_rows(client: httpx.Client, check: str, rows: list[dict[str, Any]]) -> str:
    """Submit ``rows`` of ``check`` as one ``POST /v1/runs``; the run's id."""
    reply = client.post("/v1/runs", json={"checks": [check], "rows": rows})
    if reply.status_code not in (200, 201, 202):
        raise BenchError(f"POST /v1/runs answered {reply.status_code}: {reply.text[:300]}")
    return str(reply.json()["id"])


def wait_run(client: httpx.Client, run_id: str, rows: int, poll: float = 0.25) -> None:
    """Poll ``GET /v1/runs/{id}`` until the run ends; BenchError unless every row is ok."""
    while True:
        body = client.get(f"/v1/runs/{run_id}").json()
        if body["status"] not in ("queued", "running"):
            break
        time.sleep(poll)
    if body["status"] != "succeeded":
        raise BenchError(f"run {run_id} ended {body['status']}: {body.get('error')}")
    for summary in body.get("summary") or []:
        if summary.get("counts") != {"ok": rows}:
            raise BenchError(f"run {run_id}: {summary.get('counts')} for {rows:,} rows")


def service_run(
    server: Server,
    rows: int,
    check: str = "trivial",
    probe: Callable[[], object] | None = None,
) -> tuple[float, float]:
    """(seconds, CPU seconds of the server process) of one run of ``rows`` rows of ``check``
    through ``POST /v1/runs``, from the submit until ``GET /v1/runs/{id}`` says succeeded.

    The rows exist before the clock; a one-row run first warms the check's containers. The
    CPU is ``utime + stime`` of the server process (and any child it has) from
    ``/proc/<pid>/stat``, read before the submit and after the run succeeded; ``probe`` is
    called beside each of those two reads.
    """
    from bench.measure import process_cpu_seconds

    if server.proc is None:
        raise BenchError("the server is not running")
    pid = server.proc.pid
    params = workload.PARAMS[check]
    data = [{p: row[p] for p in params} for row in workload.rows(rows)]
    with server.client() as client:
        wait_run(client, run_rows(client, check, data[:1]), 1)
        if probe is not None:
            probe()
        cpu = process_cpu_seconds(pid)
        started = time.perf_counter()
        wait_run(client, run_rows(client, check, data), rows)
        elapsed = time.perf_counter() - started
        cpu = process_cpu_seconds(pid) - cpu
        if probe is not None:
            probe()
    return elapsed, cpu


def request_path(calls: int, clients: int, per_client: int) -> dict[str, dict[str, float]]:
    """Every line of the standalone run (see the module's docstring), p50/p95 in ms."""
    from bench.measure import percentile

    with EchoServer() as echo, Server(concurrent_jobs=clients) as server:
        samples = sequential_latencies(echo, server, calls)
        rate, each = concurrent_score(server, clients, per_client)
    out = {
        name: {"p50": percentile(s, 50), "p95": percentile(s, 95), "n": len(s)}
        for name, s in samples.items()
    }
    out[f"{CODE}, {clients} clients"] = {
        "p50": percentile(each, 50),
        "p95": percentile(each, 95),
        "n": len(each),
        "rate_per_s": rate,
    }
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bench.http_side", description="the request path beside a bare FastAPI"
    )
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per line")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--per-client", type=int, default=100, help="requests per client")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    out = request_path(args.calls, args.clients, args.per_client)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    floor = out[ECHO]["p50"]
    print(f"{'line':<46} {'p50 ms':>8} {'p95 ms':>8} {'p50 - echo':>11}  req/s")
    for name, figure in out.items():
        rate = f"{figure['rate_per_s']:.0f}" if "rate_per_s" in figure else ""
        print(
            f"{name:<46} {figure['p50']:8.2f} {figure['p95']:8.2f} "
            f"{figure['p50'] - floor:+11.2f}  {rate}"
        )


if __name__ == "__main__":
    main()
