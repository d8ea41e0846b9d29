"""The operator's model endpoint never reaches a tenant through the API.

``SCOREBOX_LLM_BASE_URL`` carries credentials here; the upstream refuses every call (a check
sending ``temperature=5``). The rows' errors (a code check's through the gateway, a model
judge's ``judge_error``) and the whole answer name "the operator's model endpoint", with no
URL, host or credentials; the server log keeps the address, credentials masked.
"""

from __future__ import annotations

import logging

import pytest

from engine.settings import Settings
from tests.api.conftest import AppFactory
from tests.fake_llm import MODEL, FakeLLM, Reply

pytestmark = pytest.mark.docker

SECRET = "op-s3cret-77"

HOT = """
from openai import OpenAI

def evaluate(model_output):
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", temperature=5, messages=[{"role": "user", "content": model_output}]
    )
    return True
"""


def test_an_upstream_400_names_no_endpoint_in_rows_or_answers(
    docker_settings: Settings,
    make_api: AppFactory,
    fake_llm: FakeLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.responder = lambda body: Reply(status=400, text="temperature must be at most 2")
    host = fake_llm.base_url.removeprefix("http://").split("/")[0]
    api = make_api(
        pool_size=0,
        image=docker_settings.image,
        runtime=docker_settings.runtime,
        llm_base_url=f"http://operator:{SECRET}@{host}/v1",
        llm_api_key="real-key",
        llm_model=MODEL,
        llm_max_retries=0,
    )
    headers = api.tenant()
    api.push(headers, "hot", HOT)
    with caplog.at_level(logging.WARNING):
        reply = api.client.post(
            "/v1/score",
            headers=headers,
            json={"checks": ["hot", "fluency"], "rows": [{"model_output": "hello there"}]},
        )
    assert reply.status_code == 200, reply.text
    code_row, judge_row = reply.json()["results"]
    for row in (code_row, judge_row):
        assert row["status"] == "judge_error", row
        assert "the operator's model endpoint" in row["error"]
    assert "rejected the request (400)" in code_row["error"]
    for leak in (SECRET, "operator:", host, host.partition(":")[0], "http://"):
        assert leak not in reply.text, leak
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert f"http://***@{host}/v1" in logged  # the operator can still see where
    assert SECRET not in logged
