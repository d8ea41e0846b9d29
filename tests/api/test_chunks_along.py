"""A run's chunks of a fast check run together as one sandbox job (engine/runs/local.py,
``ALONG_SECONDS``), on the shipped fake backend: fewer jobs, each of consecutive rows and
at most ``table_job_max_rows``, every row scored once; a slow check's chunks stay a job each.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest

from engine.runs import work
from engine.sandbox.fake import fake_runner_factory
from engine.sandbox.protocol import Job, JobRow
from tests.api.conftest import TRIVIAL_CHECK, AppFactory

OTHER_CHECK = "def evaluate(model_output: str) -> bool:\n    return model_output.endswith('0')\n"


class Jobs:
    """The run's row numbers each job scored, by job (the rows say their number)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[str, list[int]] = defaultdict(list)
        self.source: dict[str, str] = {}

    def __call__(self, job: Job, row: JobRow) -> bool:
        with self.lock:
            self.rows[job.nonce].append(int(row.model_output))
            self.source[job.nonce] = job.source
        if job.source == OTHER_CHECK:
            return row.model_output.endswith("0")
        return int(row.model_output) % 2 == 0

    def of(self, source: str) -> list[list[int]]:
        with self.lock:
            return sorted(
                (rows for nonce, rows in self.rows.items() if self.source[nonce] == source),
                key=lambda rows: rows[0],
            )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_fast_checks_chunks_run_along_as_fewer_larger_jobs(
    make_api: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work, "ALONG_SECONDS", 60.0)  # any pace: the row cap decides
    jobs = Jobs()
    api = make_api(
        runner_factory=fake_runner_factory(jobs),
        pool_size=0,
        job_max_rows=100,
        table_job_max_rows=700,
    )
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    api.push(h, "u", OTHER_CHECK)
    total = 5000
    rows = [{"model_output": str(i)} for i in range(total)]
    reply = api.client.post("/v1/runs", headers=h, json={"checks": ["t", "u"], "rows": rows})
    assert reply.status_code in (200, 201, 202), reply.text
    run = api.wait_run(h, reply.json()["id"])
    assert run["status"] == "succeeded", run
    assert [s["counts"] for s in run["summary"]] == [{"ok": total}, {"ok": total}]
    for source in (TRIVIAL_CHECK, OTHER_CHECK):
        scored = jobs.of(source)
        # every row once, each job's rows consecutive, no job past the cap
        assert [i for rows in scored for i in rows] == list(range(total))
        assert all(rows == list(range(rows[0], rows[0] + len(rows))) for rows in scored)
        assert max(len(rows) for rows in scored) == 700
        # the first chunk (its pace unknown) ran alone; 50 chunks ran as far fewer jobs
        assert len(scored[0]) == 100
        assert len(scored) <= 50 // 7 + 3, [len(rows) for rows in scored]
    # each row's score is its own: even rows pass "t", rows ending in 0 pass "u"
    assert [s["pass_rate"] for s in run["summary"]] == [0.5, 0.1]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_slow_checks_chunks_stay_one_job_each(make_api: AppFactory) -> None:
    jobs = Jobs()
    # 50 rows at 10 ms are 0.5 s a chunk: past ALONG_SECONDS, so nothing runs along
    api = make_api(
        runner_factory=fake_runner_factory(jobs, row_seconds=0.01), pool_size=0, job_max_rows=50
    )
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    rows = [{"model_output": str(i)} for i in range(600)]
    reply = api.client.post("/v1/runs", headers=h, json={"checks": ["t"], "rows": rows})
    run = api.wait_run(h, reply.json()["id"])
    assert run["status"] == "succeeded", run
    assert [len(rows) for rows in jobs.of(TRIVIAL_CHECK)] == [50] * 12
