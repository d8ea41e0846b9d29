"""PostgreSQL down under a distributed API node: its log says so once per interval
(SCOREBOX_LOG_REPEAT_SECONDS) with a count, and once that it works again; no traceback
every dispatch tick (before: a chained traceback every 0.5 s, ~3,000 lines a minute)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import free_port, spawn_serve, stop, wait_healthy
from tests.parts import POSTGRES_SH, PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

OUTAGE_SECONDS = 8.0
REPEAT_SECONDS = 3.0
TICK_SECONDS = 0.2


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    out = subprocess.run(
        ["bash", str(POSTGRES_SH), "start"], check=True, timeout=180, capture_output=True, text=True
    )
    server = PostgresServer(out.stdout.strip().splitlines()[-1])
    try:
        yield server
    finally:
        subprocess.run(["bash", str(POSTGRES_SH), "stop", server.url], check=False, timeout=120)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_an_outage_is_one_warning_per_interval(
    own_postgres: PostgresServer, redis_url: str, tmp_path: Path, log_format: str
) -> None:
    env = {
        **os.environ,
        "SCOREBOX_BROKER_URL": redis_url,
        "SCOREBOX_DATABASE_URL": own_postgres.url,
        "SCOREBOX_DATA_DIR": str(tmp_path),
        "SCOREBOX_DISPATCH_INTERVAL_SECONDS": str(TICK_SECONDS),
        "SCOREBOX_LOG_REPEAT_SECONDS": str(REPEAT_SECONDS),
        "SCOREBOX_LOG_FORMAT": log_format,
    }
    log = tmp_path / "server.log"
    port = free_port()
    proc = spawn_serve(env, port, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log, 120)
        own_postgres.pause()
        time.sleep(OUTAGE_SECONDS)
        own_postgres.resume()
        time.sleep(REPEAT_SECONDS + 2)
    finally:
        stop(proc)
    text = log.read_text(errors="replace")
    lines = text.splitlines()
    failed = [line for line in lines if "dispatch pass failed" in line]
    again = [line for line in lines if "dispatch pass works again after" in line]
    ticks = OUTAGE_SECONDS / TICK_SECONDS
    # one at the start, then at most one per interval (plus one for timing slack)
    assert 1 <= len(failed) <= OUTAGE_SECONDS / REPEAT_SECONDS + 2, "\n".join(failed)
    assert len(again) == 1, text[-3000:]
    assert "Traceback" not in text
    loud = [line for line in lines if _level(line, log_format) in ("WARNING", "ERROR")]
    assert len(loud) <= 2 * (OUTAGE_SECONDS / REPEAT_SECONDS + 2) + 1, (
        f"{len(loud)} warnings for {ticks:.0f} ticks:\n" + "\n".join(loud)
    )
    if log_format == "json":
        record = json.loads(failed[0])
        assert record["level"] == "WARNING" and record["logger"] == "scorebox.distributed"
        assert set(record) >= {"time", "request_id", "tenant", "run", "message"}
    else:
        assert (
            " WARNING scorebox.distributed req=- tenant=- run=- dispatch pass failed: "
            in (failed[0])
        )


def _level(line: str, log_format: str) -> str:
    if log_format == "json":
        try:
            return str(json.loads(line)["level"])
        except ValueError:
            return "?"
    parts = line.split(" ", 2)
    return parts[1] if len(parts) > 1 else "?"
