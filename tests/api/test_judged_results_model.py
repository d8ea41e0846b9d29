"""A judged check's results name the model that judged them, as a code check's gateway
calls do: ``/v1/score``, a run's results page and its NDJSON and CSV exports (SQLite and
PostgreSQL); an ensemble names its judges. A serving model past the column's width is
stored cut, never failing the run's write."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from engine.contract import Status
from engine.models import RowResult
from engine.storage import new_id, open_store
from tests.api.conftest import Api, AppFactory, api_settings
from tests.conftest import queued_run
from tests.fake_llm import MODEL, FakeLLM, Reply

TEMPLATE = "Rate how polite this answer is.\n\nAnswer: {model_output}\n\nReply SCORE: 1-5."
ROWS = [{"id": "a", "model_output": "Thank you kindly."}, {"id": "b", "model_output": "Go away."}]


def _api(make_api: AppFactory, fake: FakeLLM) -> tuple[Api, dict[str, str]]:
    fake.responder = lambda body: Reply(text="Polite enough.\nSCORE: 4")
    api = make_api(
        llm_base_url=fake.base_url, llm_api_key="test-key", llm_model=MODEL, llm_max_retries=0
    )
    headers = api.tenant()
    body = {"name": "polite", "kind": "model", "prompt_template": TEMPLATE}
    assert api.client.post("/v1/checks", headers=headers, json=body).status_code == 201
    return api, headers


def _run(api: Api, headers: dict[str, str], check: Any) -> str:
    reply = api.client.post("/v1/runs", headers=headers, json={"checks": [check], "rows": ROWS})
    assert reply.status_code == 202, reply.text
    run = api.wait_run(headers, reply.json()["id"], timeout=60)
    assert run["status"] == "succeeded", run
    return str(run["id"])


def test_a_judged_runs_results_keep_the_judges_model(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api, h = _api(make_api, fake_llm)
    score = api.client.post("/v1/score", headers=h, json={"checks": ["polite"], "rows": ROWS})
    assert score.status_code == 200, score.text
    assert [r["model"] for r in score.json()["results"]] == [MODEL, MODEL]

    run_id = _run(api, h, "polite")
    page = api.client.get(f"/v1/runs/{run_id}/results", headers=h).json()["results"]
    assert [(r["row_id"], r["model"]) for r in page] == [("a", MODEL), ("b", MODEL)]
    ndjson = api.client.get(
        f"/v1/runs/{run_id}/results", headers={**h, "Accept": "application/x-ndjson"}
    )
    assert [json.loads(line)["model"] for line in ndjson.text.splitlines()] == [MODEL, MODEL]
    exported = api.client.get(f"/v1/runs/{run_id}/results", headers={**h, "Accept": "text/csv"})
    assert [r["model"] for r in csv.DictReader(io.StringIO(exported.text))] == [MODEL, MODEL]


def test_an_ensembles_results_name_every_judge_that_answered(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api, h = _api(make_api, fake_llm)
    run_id = _run(api, h, {"name": "polite", "params": {"models": ["judge-b", "judge-a"]}})
    page = api.client.get(f"/v1/runs/{run_id}/results", headers=h).json()["results"]
    assert [r["model"] for r in page] == ["judge-a, judge-b", "judge-a, judge-b"]


def test_a_serving_model_past_the_columns_width_is_stored_cut(
    database_url: str, tmp_path: Any
) -> None:
    # a code check may call many models through the gateway: their names joined can exceed
    # row_results.model's 200 characters, which PostgreSQL refuses rather than cuts
    store = open_store(api_settings(database_url, tmp_path).effective_database_url)
    try:
        tenant = store.create_tenant(f"wide-{new_id('t')}")
        run = queued_run(tenant.id, 1)
        store.create_run(run, [{"model_output": "x"}], None)
        wide = ", ".join(f"model-{n:03d}" for n in range(40))  # 398 characters
        result = RowResult(status=Status.OK, score=True, model=wide)
        assert store.save_results(run.id, [(0, 0, result)]) == 1
        (stored,) = store.results_page(run.id, 0, 10)
        assert stored.model == wide[:200]
    finally:
        store.engine.dispose()
