"""What the fault tests share: a durable run of a length check that is scoring when the
fault comes, and the check that it then finished with exactly one right result per row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine

from tests.live_server import duplicate_results, run_results, wait_done, wait_run


def length_check(sleep_seconds: float, explanation_bytes: int = 0) -> str:
    """A check scoring ``len(model_output)`` after a sleep (so a run lasts long enough for
    the fault to land mid-run), with an explanation of about ``explanation_bytes``."""
    body = "    return len(model_output)\n"
    if explanation_bytes:
        body = f"    return len(model_output), 'length ' + 'x' * {explanation_bytes}\n"
    return (
        f"import time\n\ndef evaluate(model_output: str):\n    time.sleep({sleep_seconds})\n" + body
    )


def start_run(client: httpx.Client, source: str, rows: int) -> str:
    """Push ``source`` as ``len``, submit a run of ``rows`` rows, and return its id once a
    tenth of it is scored."""
    assert client.post("/v1/checks", json={"name": "len", "source": source}).status_code == 201
    data = [{"id": i, "model_output": "x" * (i % 17)} for i in range(rows)]
    run_id = str(client.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"])
    wait_done(client, run_id, rows // 10)
    return run_id


def assert_every_row_once(
    client: httpx.Client, engine: Engine, run_id: str, rows: int, log: Path
) -> list[dict[str, Any]]:
    """The run succeeded with one ``ok`` result per row, each right, none stored twice."""
    final = wait_run(client, run_id, timeout=300)
    assert final["status"] == "succeeded", (final, log.read_text(errors="replace")[-3000:])
    assert final["progress"] == {"done": rows, "total": rows, "fraction": 1.0}
    results = run_results(client, run_id)
    assert sorted(r["row_index"] for r in results) == list(range(rows))
    blamed = [(r["row_index"], r["status"], r["error"]) for r in results if r["status"] != "ok"]
    assert not blamed, blamed[:5]
    assert all(r["score"] == r["row_index"] % 17 for r in results)
    assert duplicate_results(engine, run_id) == []
    return results
