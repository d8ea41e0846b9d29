"""Each quota's 429 with Retry-After."""

from __future__ import annotations

import time

import pytest

from tests.api.conftest import SLOW_CHECK, TRIVIAL_CHECK, Api, AppFactory


def _is_429(reply: object) -> None:
    assert reply.status_code == 429, reply.text  # type: ignore[attr-defined]
    assert int(reply.headers["Retry-After"]) >= 1  # type: ignore[attr-defined]
    assert reply.headers["content-type"].startswith("application/problem+json")  # type: ignore[attr-defined]


def test_rows_per_run_quota(api: Api) -> None:
    h = api.tenant(rows_per_run=5)
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "yes"}] * 6
    _is_429(api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows}))
    assert api.client.get("/v1/runs", headers=h).json()["runs"] == []


def test_source_size_quota(api: Api) -> None:
    h = api.tenant(source_bytes=100)
    big = TRIVIAL_CHECK + "# padding\n" * 20
    _is_429(api.client.post("/v1/checks", headers=h, json={"name": "big", "source": big}))
    files = {"file": ("big.py", big.encode())}
    _is_429(api.client.post("/v1/checks/upload", headers=h, files=files))
    other = api.tenant()
    assert (
        api.client.post(
            "/v1/checks", headers=other, json={"name": "big", "source": big}
        ).status_code
        == 201
    )


def test_score_row_cap_is_a_clear_422(api: Api) -> None:
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "x"}] * 1001
    reply = api.client.post("/v1/score", headers=h, json={"checks": ["t"], "rows": rows})
    assert reply.status_code == 422
    assert "/v1/runs" in reply.json()["detail"]


@pytest.mark.docker
def test_queued_runs_and_concurrent_jobs_quotas(
    docker_settings: object, make_api: AppFactory
) -> None:
    api = make_api(score_wait_seconds=1.0, run_chunk_rows=4, job_max_rows=4)
    h = api.tenant(queued_runs=1, concurrent_jobs=1)
    api.push(h, "slow", SLOW_CHECK)
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "x"}] * 40  # 10 chunks of 1s each, one at a time
    first = api.client.post("/v1/runs", headers=h, json={"checks": ["slow"], "rows": rows})
    assert first.status_code == 202
    run_id = first.json()["id"]
    # queued runs: one is active, a second is refused
    _is_429(api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows[:1]}))
    # concurrent jobs: the slow run holds the tenant's only slot past score_wait_seconds
    deadline = time.monotonic() + 60
    while api.client.get(f"/v1/runs/{run_id}", headers=h).json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    _is_429(api.client.post("/v1/score", headers=h, json={"checks": ["t"], "rows": rows[:1]}))
    # another tenant is not affected
    other = api.tenant()
    api.push(other, "t", TRIVIAL_CHECK)
    ok = api.client.post("/v1/score", headers=other, json={"checks": ["t"], "rows": rows[:1]})
    assert ok.status_code == 200, ok.text
    cancelled = api.client.post(f"/v1/runs/{run_id}/cancel", headers=h).json()
    assert cancelled["status"] == "cancelled"
    # the slot frees once the chunk in flight ends; the quota no longer blocks
    assert (
        api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows[:1]}).status_code
        == 202
    )
