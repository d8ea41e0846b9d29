"""OTLP ingestion side by side with a peer: scorebox and Arize Phoenix (``phoenix
serve``) take the same span stream, one after the other, in one run.

    bench/setup_phoenix.sh                                # the peer's own venv, once
    .venv/bin/python -m bench.bench_ingest_peer           # 200 batches of 512, SQLite both
    .venv/bin/python -m bench.bench_ingest_peer --batches 40

Both get the same batches (openai-v2 chat spans, protobuf, gzip, from
``bench.bench_ingest.batch``) from 4 concurrent exporters. scorebox answers once a batch
is stored, so its spans accepted per second are its spans stored per second. Phoenix
answers at once and stores in the background: the table gives both its accepted rate
(the last answer) and its stored rate (until its database holds every span). Writes
``bench/results/ingest_peer.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import bench_ingest
from bench.http_side import free_port
from bench.measure import write_result

RESULTS = Path(__file__).resolve().parent / "results"
PHOENIX_VENV = Path(__file__).resolve().parent / ".venv-phoenix"


def _phoenix_stored(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])
    except sqlite3.Error:
        return 0


def measure_phoenix(batches: int, size: int, clients: int, workdir: Path) -> dict[str, Any]:
    python = PHOENIX_VENV / "bin" / "python"
    if not python.exists():
        raise RuntimeError("no bench/.venv-phoenix: run bench/setup_phoenix.sh first")
    bodies = [bench_ingest.batch(size, n) for n in range(batches)]
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("ab")
    proc = subprocess.Popen(
        [str(python), "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    db = workdir / "phoenix.db"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("phoenix serve did not start: see phoenix.log")
            time.sleep(0.5)
        headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as warm:
            warm.post("/v1/traces", content=bench_ingest.batch(8, -1)).raise_for_status()
        deadline = time.monotonic() + 60
        while _phoenix_stored(db) < 8 and time.monotonic() < deadline:
            time.sleep(0.2)
        started = time.perf_counter()
        accepted, _ = bench_ingest.send_all(base, headers, bodies, clients)
        want = 8 + batches * size
        deadline = time.monotonic() + 600
        while _phoenix_stored(db) < want and time.monotonic() < deadline:
            time.sleep(0.2)
        stored_s = time.perf_counter() - started
        stored = _phoenix_stored(db) - 8
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
    return {
        "sent_spans": batches * size,
        "accepted_per_s": batches * size / accepted,
        "stored_spans": stored,
        "stored_per_s": stored / stored_s,
        "accepted_seconds": accepted,
        "stored_seconds": stored_s,
    }


def report(result: dict[str, Any]) -> str:
    sb, px = result["scorebox"], result["phoenix"]
    return (
        "# OTLP ingestion beside Arize Phoenix\n\n"
        "`python -m bench.bench_ingest_peer`: the same "
        f"{sb['batches']} batches of {sb['batch_spans']} openai-v2 chat spans (protobuf, "
        f"gzip) from {sb['clients']} exporters to each, one after the other, SQLite both; "
        f"Phoenix {result['phoenix_version']}.\n\n"
        "| receiver | spans/s accepted | spans/s stored | spans stored |\n"
        "| --- | ---: | ---: | ---: |\n"
        f"| scorebox (answers once stored) | {sb['spans_per_s']:,.0f} | "
        f"{sb['spans_per_s']:,.0f} | {sb['stored_spans']:,} |\n"
        f"| Phoenix (stores after answering) | {px['accepted_per_s']:,.0f} | "
        f"{px['stored_per_s']:,.0f} | {px['stored_spans']:,} |\n\n"
        f"Machine: {sb['cores']} cores, 1-minute load average {result['load_end']:.1f} at "
        "the end (a shared machine).\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_ingest_peer")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as a:
        ours = bench_ingest.measure(None, args.batches, args.batch, args.clients, Path(a))
    with tempfile.TemporaryDirectory(prefix="bench-phoenix-") as b:
        theirs = measure_phoenix(args.batches, args.batch, args.clients, Path(b))
    version = subprocess.run(
        [str(PHOENIX_VENV / "bin" / "python"), "-c", "import phoenix; print(phoenix.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    result = {
        "scorebox": ours,
        "phoenix": theirs,
        "phoenix_version": version,
        "load_end": os.getloadavg()[0],
    }
    write_result(args.out, "ingest_peer", result, report(result))


if __name__ == "__main__":
    main()
