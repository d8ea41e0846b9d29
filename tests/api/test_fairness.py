"""Fairness: tenant B's one-row /v1/score is not stuck behind tenant A's 20,000-row run."""

from __future__ import annotations

import time

import pytest

from engine.settings import Settings
from tests.api.conftest import TRIVIAL_CHECK, AppFactory
from tests.conftest import assert_not_behind

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROWS = 20_000
#: A's check takes about 1 ms a row, so its run lasts long enough to measure B against
#: (with warm check workers a trivial check scores 20,000 rows in about a second).
MILLISECOND_CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> bool:\n"
    "    time.sleep(0.001)\n    return model_output == 'yes'\n"
)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_small_tenant_not_stuck_behind_big_run(
    docker_settings: Settings, make_api: AppFactory
) -> None:
    api = make_api(pool_size=2, run_chunk_rows=1000, job_max_rows=1000)
    a, b = api.tenant("big"), api.tenant("small")
    api.push(a, "t", MILLISECOND_CHECK)
    api.push(b, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "yes" if i % 2 else "no"} for i in range(ROWS)]
    started = time.monotonic()
    run_id = api.client.post("/v1/runs", headers=a, json={"checks": ["t"], "rows": rows}).json()[
        "id"
    ]
    while api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"] == 0:
        time.sleep(0.05)
    latencies: list[float] = []
    during: list[tuple[int, int]] = []  # A's rows done before and after each B request
    while len(latencies) < 3:
        before = api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"]
        t0 = time.monotonic()
        reply = api.client.post(
            "/v1/score", headers=b, json={"checks": ["t"], "rows": [{"model_output": "yes"}]}
        )
        latencies.append(time.monotonic() - t0)
        after = api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"]
        during.append((before, after))
        assert reply.status_code == 200, reply.text
        assert reply.json()["results"][0]["score"] is True
        time.sleep(0.5)
    run = api.wait_run(a, run_id, timeout=600)
    total = time.monotonic() - started
    assert run["status"] == "succeeded"
    assert run["summary"][0]["counts"] == {"ok": ROWS}
    print(
        f"\nfairness: A's {ROWS}-row run took {total:.1f}s; B's 1-row /v1/score took "
        + ", ".join(f"{x:.2f}s" for x in latencies)
        + f" (A's rows done before and after each: {during})"
    )
    assert_not_behind(during, ROWS)
