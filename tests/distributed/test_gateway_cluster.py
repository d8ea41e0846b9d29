"""The model gateway in distributed mode: each worker answers its own containers' model calls
(the API node has no Docker), and the run's ``llm_usage`` includes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings import Settings
from tests.distributed.cluster import Cluster
from tests.fake_llm import FakeLLM, Reply
from tests.live_server import wait_run

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

CALL_OPENAI = """
from openai import OpenAI

def evaluate(model_output):
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": model_output}]
    )
    return reply.choices[0].message.content.strip() == "yes"
"""


@pytest.fixture
def cluster(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path, fake_llm: FakeLLM
) -> Iterator[Cluster]:
    made = Cluster(
        tmp_path,
        pg_url,
        redis_url,
        SCOREBOX_LLM_BASE_URL=fake_llm.base_url,
        SCOREBOX_LLM_API_KEY="real-key",
        SCOREBOX_LLM_MODEL="fake-model",
    )
    try:
        yield made
    finally:
        made.close()


def test_a_worker_answers_its_own_containers_model_calls(
    cluster: Cluster, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda body: Reply(text="yes")
    cluster.start_worker("w1")
    cluster.start_server("api1", SCOREBOX_DOCKER_HOST="unix:///nonexistent/docker.sock")
    rows = [{"model_output": f"row {i}"} for i in range(6)]
    with cluster.client("api1", cluster.tenant("gw")) as c:
        assert (
            c.post("/v1/checks", json={"name": "judge", "source": CALL_OPENAI}).status_code == 201
        )
        run_id = c.post("/v1/runs", json={"checks": ["judge"], "rows": rows}).json()["id"]
        body = wait_run(c, run_id)
        scored = c.post("/v1/score", json={"checks": ["judge"], "rows": rows[:1]}).json()
    assert body["status"] == "succeeded", body
    assert body["llm_usage"]["calls"] == 6, body
    assert [r["status"] for r in scored["results"]] == ["ok"]
    assert scored["results"][0]["model"] == "fake-model"
