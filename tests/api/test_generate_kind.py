"""``kind`` (code|model) is what /v1/checks/generate writes; ``check_type`` is its deprecated
name there (elsewhere ``check_type`` is a model check's answer, score|pass_fail)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from engine.generation import GenerateRequest
from tests.api.conftest import AppFactory
from tests.api.test_generate_api import REQUEST, _app
from tests.fake_llm import FakeLLM


def _asked_for_a_model_check(fake: FakeLLM) -> bool:
    (request,) = fake.requests
    first_user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return str(first_user).startswith("Write a model check.")


@pytest.mark.parametrize(
    ("fields", "model"),
    [
        ({}, False),
        ({"kind": "code"}, False),
        ({"check_type": "code"}, False),
        ({"kind": "model"}, True),
        ({"check_type": "model"}, True),  # the deprecated name still works
        ({"kind": "model", "check_type": "model"}, True),
    ],
)
def test_kind_and_its_old_name_choose_what_is_generated(
    make_api: AppFactory, fake_llm: FakeLLM, fields: dict[str, Any], model: bool
) -> None:
    api = _app(make_api, fake_llm)
    fake_llm.error(500)  # one request is enough to see what was asked for
    reply = api.client.post("/v1/checks/generate", headers=api.tenant(), json={**REQUEST, **fields})
    assert reply.status_code == 502, reply.text
    assert _asked_for_a_model_check(fake_llm) is model


def test_kind_and_check_type_that_disagree_are_422(make_api: AppFactory, fake_llm: FakeLLM) -> None:
    api = _app(make_api, fake_llm)
    reply = api.client.post(
        "/v1/checks/generate",
        headers=api.tenant(),
        json={**REQUEST, "kind": "code", "check_type": "model"},
    )
    assert reply.status_code == 422
    assert "send `kind` alone" in reply.text
    assert fake_llm.requests == []


def test_the_openapi_schema_marks_check_type_deprecated(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm)
    schemas = api.client.get("/openapi.json").json()["components"]["schemas"]
    fields = schemas["GenerateRequest"]["properties"]
    assert fields["kind"]["default"] == "code"
    assert fields["check_type"]["deprecated"] is True
    assert "kind" in fields["check_type"]["description"]


def test_the_request_model_reads_the_old_name() -> None:
    assert GenerateRequest.model_validate({"description": "d"}).kind == "code"
    assert GenerateRequest.model_validate({"description": "d", "check_type": "model"}).kind == (
        "model"
    )
    with pytest.raises(ValidationError):
        GenerateRequest.model_validate({"description": "d", "kind": "model", "check_type": "x"})


def test_the_answer_names_the_kind_under_both_names(
    make_api: AppFactory, fake_llm: FakeLLM
) -> None:
    api = _app(make_api, fake_llm)
    template = "Does the answer {model_output} name {scenario_result}? Say PASS or FAIL."
    fake_llm.reply(f"```text\n{template}\n```")
    body = {
        "description": "names the city",
        "requires_scenario_result": True,
        "check_type": "model",
    }
    reply = api.client.post("/v1/checks/generate", headers=api.tenant(), json=body)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["accepted"] is True, answer["message"]
    assert (answer["kind"], answer["check_type"]) == ("model", "model")
    assert answer["prompt_template"] == template
