"""API behaviour above the sandbox on the shipped fake backend (no Docker): fairness, quotas.

The Docker-backed versions of these tests stay (tests/api/test_fairness.py and the
quota tests); these run the same service logic in milliseconds per row.
"""

from __future__ import annotations

import time

import pytest

from engine.contract import Status
from engine.sandbox.fake import FakeBackend, fake_runner_factory
from engine.sandbox.protocol import Job, JobRow, RowRecord
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.api.conftest import TRIVIAL_CHECK, AppFactory
from tests.conftest import assert_not_behind


def test_fake_backend_answers_rows_and_records_jobs() -> None:
    def handler(job: Job, row: JobRow) -> bool | RowRecord:
        if row.model_output == "boom":
            return RowRecord(t="row", i=row.i, status=Status.ERROR, error="boom", ms=0.0)
        return row.model_output == "yes"

    backend = FakeBackend(handler)
    with SandboxRunner(Settings(pool_size=0), backend=backend) as runner:
        results = runner.run_check(
            CodeCheck(source=TRIVIAL_CHECK, name="t"),
            [{"model_output": "yes"}, {"model_output": "no"}, {"model_output": "boom"}],
            labels={"scorebox.tenant": "x"},
        )
    assert [(r.status, r.score) for r in results] == [
        (Status.OK, True),
        (Status.OK, False),
        (Status.ERROR, None),
    ]
    assert len(backend.calls) == 1
    assert backend.calls[0].job.source == TRIVIAL_CHECK
    assert backend.calls[0].labels["scorebox.tenant"] == "x"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_small_tenant_not_stuck_behind_big_run_on_the_fake_sandbox(
    make_api: AppFactory,
) -> None:
    rows_total = 4000
    factory = fake_runner_factory(lambda job, row: row.model_output == "yes", row_seconds=0.002)
    api = make_api(runner_factory=factory, pool_size=0, run_chunk_rows=200, job_max_rows=200)
    a, b = api.tenant("big"), api.tenant("small")
    api.push(a, "t", TRIVIAL_CHECK)
    api.push(b, "t", TRIVIAL_CHECK)
    rows = [{"model_output": "yes" if i % 2 else "no"} for i in range(rows_total)]
    reply = api.client.post("/v1/runs", headers=a, json={"checks": ["t"], "rows": rows})
    run_id = reply.json()["id"]
    while api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"] == 0:
        time.sleep(0.02)
    before = api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"]
    reply = api.client.post(
        "/v1/score", headers=b, json={"checks": ["t"], "rows": [{"model_output": "yes"}]}
    )
    after = api.client.get(f"/v1/runs/{run_id}", headers=a).json()["progress"]["done"]
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["score"] is True
    run = api.wait_run(a, run_id, timeout=300)
    assert run["status"] == "succeeded"
    assert run["summary"][0]["counts"] == {"ok": rows_total}
    assert run["summary"][0]["pass_rate"] == 0.5
    assert_not_behind([(before, after)], rows_total)
    assert all(c.labels["scorebox.tenant"] for c in factory.backend.calls)  # type: ignore[attr-defined]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_queued_runs_quota_on_the_fake_sandbox(make_api: AppFactory) -> None:
    factory = fake_runner_factory(row_seconds=0.01)
    api = make_api(runner_factory=factory, pool_size=0, quota_queued_runs=1)
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    body = {"checks": ["t"], "rows": [{"model_output": "x"}] * 200}
    first = api.client.post("/v1/runs", headers=h, json=body)
    assert first.status_code in (200, 201, 202), first.text
    second = api.client.post("/v1/runs", headers=h, json=body)
    assert second.status_code == 429, second.text
    assert api.wait_run(h, first.json()["id"], timeout=120)["status"] == "succeeded"
