"""The CPU a warm one-row ``POST /v1/score`` costs, by side: the server process (each of its
threads), the check's container, and a bare FastAPI echo's server for reference.

    python -m bench.request_cpu                  # about a minute
    python -m bench.request_cpu --calls 600 --json

On a shared machine a request's latency moves with the load (each process it wakes waits for
a core), its CPU much less: read an A/B of the request path or the harness here as well as in
``python -m bench.http_side``. The echo and the code check are called in turn, ``--block``
calls at a time, one client, each after a warm-up. The server's CPU is ``utime + stime`` from
``/proc`` (its threads' apart: the event loop, the request's worker, the rest), the
container's the Docker engine's count for every container the server made (one, warm: the
requests come one at a time). It needs Docker and the sandbox image, like the service.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from bench.http_side import EchoServer, Server, echo_once, score_once
from bench.measure import percentile, process_cpu_seconds


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (utime + stime) of each thread of process ``pid``, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = task.joinpath("stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def container_cpu_seconds(client: Any, owner_pid: int) -> float:
    """CPU seconds the containers made by process ``owner_pid`` have used, per Docker."""
    owner = f"{socket.gethostname()}:{owner_pid}"
    total = 0
    for container in client.containers.list(filters={"label": f"scorebox.owner={owner}"}):
        stats = container.stats(stream=False, one_shot=True)
        total += int(stats["cpu_stats"]["cpu_usage"]["total_usage"])
    return total / 1e9


def measure(calls: int, block: int) -> dict[str, Any]:
    """Per-request CPU (ms) and wall p50 (ms) of the echo and the warm code check."""
    import docker

    client = docker.from_env()
    echo_ms: list[float] = []
    code_ms: list[float] = []
    echo_cpu = server_cpu = sandbox_cpu = 0.0
    threads: dict[int, float] = {}
    try:
        with EchoServer() as echo, Server() as server, echo.client() as e, server.client() as c:
            assert echo.proc is not None and server.proc is not None
            for _ in range(30):
                echo_once(e)
                score_once(c)
            done = 0
            while done < calls:
                n = min(block, calls - done)
                before = process_cpu_seconds(echo.proc.pid)
                echo_ms += timed(lambda: echo_once(e), n)
                echo_cpu += process_cpu_seconds(echo.proc.pid) - before
                # the container idles outside the calls: its count is read around the server's
                before_box = container_cpu_seconds(client, server.proc.pid)
                before_threads = thread_cpu_seconds(server.proc.pid)
                before = process_cpu_seconds(server.proc.pid)
                code_ms += timed(lambda: score_once(c), n)
                server_cpu += process_cpu_seconds(server.proc.pid) - before
                for tid, seconds in thread_cpu_seconds(server.proc.pid).items():
                    threads[tid] = threads.get(tid, 0.0) + seconds - before_threads.get(tid, 0.0)
                sandbox_cpu += container_cpu_seconds(client, server.proc.pid) - before_box
                done += n
    finally:
        client.close()
    busiest = sorted(threads.values(), reverse=True)
    return {
        "calls": calls,
        "echo": {"p50_ms": percentile(echo_ms, 50), "server_cpu_ms": echo_cpu / calls * 1000},
        "code": {
            "p50_ms": percentile(code_ms, 50),
            "server_cpu_ms": server_cpu / calls * 1000,
            "server_threads_cpu_ms": [s / calls * 1000 for s in busiest[:3]],
            "sandbox_cpu_ms": sandbox_cpu / calls * 1000,
        },
        "load_1m": os.getloadavg()[0],
    }


def timed(fn: Any, n: int) -> list[float]:
    """Milliseconds of ``n`` calls of ``fn``, one after another."""
    out = []
    for _ in range(n):
        began = time.perf_counter()
        fn()
        out.append((time.perf_counter() - began) * 1000)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.request_cpu", description=__doc__)
    parser.add_argument("--calls", type=int, default=400, help="calls of each line")
    parser.add_argument("--block", type=int, default=50, help="calls of a line in a row")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    out = measure(args.calls, args.block)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    echo, code = out["echo"], out["code"]
    threads = ", ".join(f"{ms:.2f}" for ms in code["server_threads_cpu_ms"])
    print(f"{'line':<32} {'p50 ms':>7} {'server CPU ms':>14} {'sandbox CPU ms':>15}")
    print(f"{'bare FastAPI POST /echo':<32} {echo['p50_ms']:7.2f} {echo['server_cpu_ms']:14.2f}")
    print(
        f"{'POST /v1/score warm code check':<32} {code['p50_ms']:7.2f} "
        f"{code['server_cpu_ms']:14.2f} {code['sandbox_cpu_ms']:15.2f}"
    )
    print(f"(a request; the server's busiest threads: {threads}; load {out['load_1m']:.2f})")


if __name__ == "__main__":
    main()
