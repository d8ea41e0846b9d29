"""Health, readiness, metrics and the OpenAPI description."""

from __future__ import annotations

import pytest

from tests.api.conftest import TRIVIAL_CHECK, Api


def test_healthz_and_metrics(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    text = api.client.get("/metrics").text
    for name in ("scorebox_queue_depth", "scorebox_jobs_in_flight", "scorebox_pool_size"):
        assert name in text


@pytest.mark.docker
def test_readyz_and_metrics_after_scoring(docker_api: Api) -> None:
    api = docker_api
    ready = api.client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert set(ready.json()["checks"]) == {"database", "docker", "image"}
    h = api.tenant()
    api.push(h, "t", TRIVIAL_CHECK)
    api.client.post(
        "/v1/score", headers=h, json={"checks": ["t"], "rows": [{"model_output": "yes"}]}
    )
    text = api.client.get("/metrics").text
    assert 'scorebox_rows_scored_total{status="ok"} 1.0' in text
    assert "scorebox_job_seconds_bucket" in text
    assert "scorebox_score_request_seconds_count 1.0" in text


def test_openapi_describes_every_endpoint_with_examples(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    paths = spec["paths"]
    for path, method in [
        ("/v1/checks", "post"),
        ("/v1/checks/upload", "post"),
        ("/v1/checks/validate", "post"),
        ("/v1/checks", "get"),
        ("/v1/checks/{ref}", "get"),
        ("/v1/checks/{ref}", "delete"),
        ("/v1/score", "post"),
        ("/v1/runs", "post"),
        ("/v1/runs/upload", "post"),
        ("/v1/runs/{run_id}", "get"),
        ("/v1/runs/{run_id}/results", "get"),
        ("/v1/runs/{run_id}/cancel", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ]:
        operation = paths[path][method]
        assert operation.get("summary"), (path, method)
    schemas = spec["components"]["schemas"]
    for name in ("CheckSpec", "ScoreRequest", "RunRequest"):
        assert schemas[name].get("examples"), name
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert api.client.get("/docs").status_code == 200
