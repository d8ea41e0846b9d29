"""Scores near the largest float: ``/v1/score`` and stored runs summarise them alike, with
no overflow (SQLite and PostgreSQL): once two rows scoring 1.7e308 made ``/v1/score`` a 500
and PostgreSQL's ``AVG`` fail."""

from __future__ import annotations

import math
import statistics
import sys
from fractions import Fraction

import pytest

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import from_stats, run_summary, summarize
from engine.sandbox.fake import fake_runner_factory
from engine.storage import moments, new_id, open_store
from tests.api.conftest import TRIVIAL_CHECK, AppFactory
from tests.conftest import queued_run

HUGE = 1.7e308
MAX = sys.float_info.max
CASES = [
    pytest.param([HUGE, HUGE], id="two-huge"),
    pytest.param([MAX, MAX, MAX, 1.0], id="max-and-one"),
    pytest.param([HUGE, -HUGE, 3.0], id="both-signs"),
    pytest.param([-MAX, -MAX], id="two-most-negative"),
    pytest.param([1e300, 2.5, 1e-300, 7e270], id="mixed-magnitudes"),
    pytest.param([0.25, 0.5, 1.0, 2.0], id="ordinary"),
]


@pytest.mark.parametrize("scores", CASES)
def test_the_in_memory_mean_and_median_never_overflow(scores: list[float]) -> None:
    mean = moments.mean(scores)
    median = moments.median(scores)
    assert mean is not None and median is not None
    assert math.isfinite(mean) and math.isfinite(median)
    exact = sum(Fraction(s) for s in scores) / len(scores)
    assert mean == pytest.approx(float(exact), rel=1e-12, abs=1e-300)
    if all(abs(s) < 1e300 for s in scores):  # ordinary scores: the very answer fmean gave
        assert mean == statistics.fmean(scores)
        assert median == statistics.median(scores)


@pytest.mark.parametrize("scores", CASES)
def test_a_stored_runs_summary_equals_the_in_memory_one(
    database_url: str, scores: list[float]
) -> None:
    store = open_store(database_url)
    try:
        tenant = store.create_tenant(f"huge-{new_id('t')}")
        run = queued_run(tenant.id, len(scores), 1)
        store.create_run(run, ({"model_output": "x"} for _ in scores), None)
        results = [RowResult(row_id=i, status=Status.OK, score=s) for i, s in enumerate(scores)]
        store.save_results(run.id, [(0, i, r) for i, r in enumerate(results)])
        stored = from_stats(store.score_stats(run.id, 0), "c", 1, "chk_c", "code")
        in_memory = summarize(results, "c", 1, "chk_c", "code")
        assert stored.mean == pytest.approx(in_memory.mean, rel=1e-12)
        assert stored.model_dump(exclude={"mean"}) == in_memory.model_dump(exclude={"mean"})
        assert stored.mean is not None and math.isfinite(stored.mean)
        summary = run_summary(store, store.get_run(run.tenant_id, run.id))
        edges = [edge for edge, _ in summary.histograms[0]]
        assert all(math.isfinite(edge) for edge in edges)
        assert sum(n for _, n in summary.histograms[0]) == len(scores)
    finally:
        store.engine.dispose()


def test_v1_score_and_a_run_summarise_two_huge_scores_alike(make_api: AppFactory) -> None:
    api = make_api(runner_factory=fake_runner_factory(lambda job, row: HUGE))
    headers = api.tenant()
    api.push(headers, "huge", TRIVIAL_CHECK)
    body = {"checks": ["huge"], "rows": [{"model_output": "a"}, {"model_output": "b"}]}
    scored = api.client.post("/v1/score", headers=headers, json=body)
    assert scored.status_code == 200, scored.text
    summary = scored.json()["summary"][0]
    assert summary["mean"] == HUGE
    assert summary["p50"] == HUGE
    assert [item["score"] for item in scored.json()["results"]] == [HUGE, HUGE]
    started = api.client.post("/v1/runs", headers=headers, json=body)
    assert started.status_code in (200, 201, 202), started.text
    run = api.wait_run(headers, started.json()["id"])
    assert run["status"] == "succeeded", run
    assert run["summary"][0]["mean"] == summary["mean"]
    assert run["summary"][0]["p50"] == summary["p50"]
