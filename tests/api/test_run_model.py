"""A run's stored results keep the model that served each row's model calls, as
``/v1/score`` returns it: the results page, the NDJSON and the CSV exports name it
(SQLite and PostgreSQL; the sandbox's gateway in real containers)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from engine.settings import Settings
from tests.api.conftest import AppFactory
from tests.fake_llm import MODEL, FakeLLM

pytestmark = pytest.mark.docker

ASK_ON_Q = """
from openai import OpenAI

def evaluate(model_output):
    if not model_output.startswith("q"):
        return True
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": model_output}]
    )
    return reply.choices[0].message.content.strip() == "yes"
"""


def test_a_runs_results_keep_the_serving_model(
    docker_settings: Settings, make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("yes").reply("no")
    api = make_api(
        pool_size=0,
        image=docker_settings.image,
        runtime=docker_settings.runtime,
        llm_base_url=fake_llm.base_url,
        llm_api_key="real-key",
        llm_model=MODEL,
        llm_model_map={"gpt-4o": "served-model"},
    )
    h = api.tenant()
    api.push(h, "judge", ASK_ON_Q)
    rows = [{"id": "a", "model_output": "q1"}, {"id": "b", "model_output": "plain"}]
    score = api.client.post("/v1/score", headers=h, json={"checks": ["judge"], "rows": rows[:1]})
    assert score.json()["results"][0]["model"] == "served-model"
    fake_llm.reply("yes")
    started = api.client.post("/v1/runs", headers=h, json={"checks": ["judge"], "rows": rows})
    assert started.status_code == 202, started.text
    run = api.wait_run(h, started.json()["id"])
    assert run["status"] == "succeeded", run
    page = api.client.get(f"/v1/runs/{run['id']}/results", headers=h).json()["results"]
    assert [(r["row_id"], r["model"]) for r in page] == [("a", "served-model"), ("b", None)]
    ndjson = api.client.get(
        f"/v1/runs/{run['id']}/results", headers={**h, "Accept": "application/x-ndjson"}
    )
    lines = [json.loads(line) for line in ndjson.text.splitlines()]
    assert [(r["model"], r["passed"], r["model_output"]) for r in lines] == [
        ("served-model", True, "q1"),
        (None, True, "plain"),
    ]
    exported = api.client.get(f"/v1/runs/{run['id']}/results", headers={**h, "Accept": "text/csv"})
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert [r["model"] for r in table] == ["served-model", ""]
