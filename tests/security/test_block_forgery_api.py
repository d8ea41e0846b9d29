"""Forged result-block columns through ``POST /v1/score`` (SQLite and PostgreSQL, both
runtimes): an int score past 64 bits or a duration longer than the job never reaches a
response or a stored row as ``ok``."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api
from tests.security.test_harness_sabotage import FORGE_COLUMNS

pytestmark = pytest.mark.docker


@pytest.mark.parametrize(
    ("kind", "score", "ms", "message"),
    [
        (2, "1e300", "0.5", "past 64 bits"),
        (1, "1.0", "1.7e308", "longer than the job's wall time"),
    ],
    ids=["int-1e300", "duration-1.7e308"],
)
def test_v1_score_refuses_forged_block_columns(
    docker_api: Api, kind: int, score: str, ms: str, message: str
) -> None:
    headers = docker_api.tenant()
    source = FORGE_COLUMNS.replace("KIND", str(kind)).replace("SCORE", score).replace("MS", ms)
    docker_api.push(headers, "forger", source)
    rows = [{"model_output": str(i)} for i in (1, 2, 3)]
    reply = docker_api.client.post(
        "/v1/score", headers=headers, json={"checks": ["forger"], "rows": rows}
    )
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert {r["status"] for r in results} <= {"ok", "crashed"}, results
    assert any(r["status"] == "crashed" and message in (r["error"] or "") for r in results)
    for r in results:
        assert r["status"] != "ok" or (r["score"] is True and r["duration_ms"] < 60_000), r
    summary = reply.json()["summary"][0]
    assert summary["max"] is None or summary["max"] <= 1.0
