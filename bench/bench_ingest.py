"""OTLP ingestion: spans per second accepted and stored by one ``scorebox serve`` process.

    .venv/bin/python -m bench.bench_ingest                  # 200 batches of 512, SQLite
    .venv/bin/python -m bench.bench_ingest --batches 40     # a quick look
    .venv/bin/python -m bench.bench_ingest --database-url postgresql+psycopg://...

A fresh ``scorebox serve`` (one API process, no sandbox pool) on a temporary SQLite file
(or the ``--database-url`` given) takes ``POST /v1/traces`` from ``--clients`` concurrent
exporters, each batch ``--batch`` spans of protobuf, gzip as the Python exporter sends
it. Each span is an openai-v2 chat span with its messages (about 1 KB of attributes),
every span distinct. The figure is the spans stored (counted in the database after the
last 200) over the time from the first request to the last answer. Batches are encoded
before the clock starts: the figure is the server's, not the client's. Writes
``bench/results/ingest.md`` and ``ingest.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import secrets
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from sqlalchemy import func, select

from bench.http_side import CLI, free_port
from bench.measure import write_result
from engine.storage import open_store
from engine.storage.tables import SpanRow
from engine.tenancy import auth

RESULTS = Path(__file__).resolve().parent / "results"


def _kv(key: str, value: Any) -> KeyValue:
    v = AnyValue()
    if isinstance(value, int):
        v.int_value = value
    else:
        v.string_value = str(value)
    return KeyValue(key=key, value=v)


def batch(size: int, number: int) -> bytes:
    """``size`` distinct chat spans (one trace each), protobuf, gzip."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "bench-bot"))
    ss = rs.scope_spans.add()
    ss.scope.name = "opentelemetry.util.genai.handler"
    start = time.time_ns()
    for i in range(size):
        question = f"Question {number}-{i}: what is the capital of country {i}? " * 3
        answer = f"The capital of country {i} is city {i}. " * 4
        span = ss.spans.add()
        span.trace_id = secrets.token_bytes(16)
        span.span_id = secrets.token_bytes(8)
        span.name = "chat gpt-4o-mini"
        span.kind = 3
        span.start_time_unix_nano = start + i
        span.end_time_unix_nano = start + i + 250_000_000
        span.status.code = 1
        for key, value in (
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-4o-mini"),
            ("gen_ai.response.model", "gpt-4o-mini-2026-01-01"),
            ("gen_ai.response.id", f"chatcmpl-{number}-{i}"),
            ("gen_ai.usage.input_tokens", 60),
            ("gen_ai.usage.output_tokens", 40),
            (
                "gen_ai.input.messages",
                json.dumps(
                    [
                        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                        {"role": "user", "parts": [{"type": "text", "content": question}]},
                    ]
                ),
            ),
            (
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": answer}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            ),
        ):
            span.attributes.append(_kv(key, value))
    return gzip.compress(request.SerializeToString())


def send_all(
    base: str, headers: dict[str, str], bodies: list[bytes], clients: int
) -> tuple[float, list[float]]:
    """POST every body to ``base``/v1/traces from ``clients`` threads, retrying a 503 as an
    exporter does: the seconds from the first request to the last answer, and each
    batch's latency."""
    latencies: list[float] = []
    lock = threading.Lock()
    queue = list(range(len(bodies)))

    def client() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    n = queue.pop()
                t0 = time.perf_counter()
                status = 0
                while status != 200:  # 503 with Retry-After: an exporter retries
                    status = http.post("/v1/traces", content=bodies[n]).status_code
                    if status == 503:
                        time.sleep(0.05)
                    elif status != 200:
                        raise RuntimeError(f"POST /v1/traces answered {status}")
                with lock:
                    latencies.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started, latencies


def cpu_seconds(pid: int) -> float:
    """The user and system CPU seconds process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    database_url: str | None, batches: int, size: int, clients: int, workdir: Path
) -> dict[str, Any]:
    url_db = database_url or f"sqlite:///{workdir / 'scorebox.db'}"
    store = open_store(url_db)
    tenant = auth.create_tenant(store, f"bench-{secrets.token_hex(3)}")
    key = tenant.secret
    bodies = [batch(size, n) for n in range(batches)]
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SCOREBOX_")},
        "SCOREBOX_DATA_DIR": str(workdir),
        "SCOREBOX_DATABASE_URL": url_db,
        "SCOREBOX_POOL_SIZE": "0",
    }
    log = (workdir / "serve.log").open("ab")
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("scorebox serve did not start: see serve.log")
            time.sleep(0.2)
        headers = {
            "authorization": f"Bearer {key}",
            "content-type": "application/x-protobuf",
            "content-encoding": "gzip",
        }
        with httpx.Client(base_url=base, headers=headers, timeout=60) as warm:
            warm.post("/v1/traces", content=batch(8, -1)).raise_for_status()
        cpu_before = cpu_seconds(proc.pid)
        elapsed, latencies = send_all(base, headers, bodies, clients)
        server_cpu = cpu_seconds(proc.pid) - cpu_before
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
    with store.engine.connect() as conn:
        # this run's tenant only (a PostgreSQL database may hold earlier runs), less the warm-up
        mine = (
            select(func.count()).select_from(SpanRow).where(SpanRow.tenant_id == tenant.tenant.id)
        )
        stored = int(conn.scalar(mine) or 0) - 8
    store.engine.dispose()
    latencies.sort()
    return {
        "database": "postgresql" if database_url else "sqlite",
        "batches": batches,
        "batch_spans": size,
        "clients": clients,
        "sent_spans": batches * size,
        "stored_spans": stored,
        "seconds": elapsed,
        "spans_per_s": stored / elapsed,
        "batch_ms_p50": statistics.median(latencies) * 1000,
        "batch_ms_p95": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
        "gzip_bytes_per_batch": statistics.mean(len(b) for b in bodies),
        # CPU the server spent per span: steadier than spans/s on a shared machine
        "server_cpu_us_per_span": server_cpu / max(stored, 1) * 1e6,
        "cores": os.cpu_count(),
        "load_average_1m_at_end": os.getloadavg()[0],
    }


def report(result: dict[str, Any]) -> str:
    # Results written before the server's CPU was measured have no such figure.
    cpu = result.get("server_cpu_us_per_span")
    cpu_cell = "—" if cpu is None else f"{cpu:.0f} µs"
    return (
        "# OTLP ingestion\n\n"
        "`python -m bench.bench_ingest`: one `scorebox serve` process, "
        f"{result['database']}, {result['clients']} concurrent exporters, "
        f"{result['batches']} batches of {result['batch_spans']} openai-v2 chat spans "
        f"(protobuf, gzip, {result['gzip_bytes_per_batch'] / 1024:.0f} KB a batch).\n\n"
        "| spans sent | spans stored | seconds | spans/s stored | batch p50 | batch p95 "
        "| server CPU a span |\n"
        "|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {result['sent_spans']:,} | {result['stored_spans']:,} | {result['seconds']:.1f} "
        f"| {result['spans_per_s']:,.0f} | {result['batch_ms_p50']:.0f} ms "
        f"| {result['batch_ms_p95']:.0f} ms | {cpu_cell} |\n\n"
        f"Machine: {result['cores']} cores, 1-minute load average "
        f"{result['load_average_1m_at_end']:.1f} at the end (a shared machine).\n\n"
        "Goal: 10,000 spans/s. Each span is decoded, mapped to a row and inserted once "
        "(`ON CONFLICT DO NOTHING` on tenant, trace id, span id) before the 200.\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_ingest")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--database-url", help="PostgreSQL (default: a temporary SQLite file)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        result = measure(args.database_url, args.batches, args.batch, args.clients, Path(tmp))
    suffix = "" if result["database"] == "sqlite" else "-postgresql"
    write_result(args.out, f"ingest{suffix}", result, report(result))


if __name__ == "__main__":
    main()
