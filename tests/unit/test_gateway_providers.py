"""Each provider's own module (engine/gateway/providers/<provider>.py): its routes, its
request, its reply and its error; the registry assembled from them; and replies checked
against the shape asked for with jsonschema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.gateway.providers import (
    PROVIDERS,
    Expectation,
    GatewayRequestError,
    Provider,
    ReplyMismatch,
    cohere,
    conform,
    gemini,
    openai,
    parse_request,
    provider_of,
    schema_problem,
)
from engine.gateway.providers.replies import schema_error
from engine.llm import Completion, Usage

COMPLETION = Completion("4", "op-model", Usage(10, 2), "length")
GEMINI = "/v1beta/models/gemini-2.0-flash:generateContent"


def test_the_registry_holds_one_adapter_per_provider_from_its_module() -> None:
    assert set(PROVIDERS) == set(Provider)
    assert PROVIDERS[Provider.OPENAI] is openai.ADAPTERS[0]
    assert [a.provider for a in cohere.ADAPTERS] == [Provider.COHERE_V1, Provider.COHERE_V2]
    assert PROVIDERS[Provider.GEMINI] is gemini.ADAPTERS[0]


@pytest.mark.parametrize(
    ("path", "provider"),
    [
        ("/openai/deployments/judge/chat/completions?api-version=1", Provider.OPENAI),
        ("/v1/chat", Provider.COHERE_V1),
        ("/v2/chat", Provider.COHERE_V2),
        ("/v1alpha/models/m-1.5:generateContent", Provider.GEMINI),
        ("/v1/models/m:streamGenerateContent", None),
        ("/v1/chat/other", None),
    ],
)
def test_each_provider_serves_its_own_routes(path: str, provider: Provider | None) -> None:
    assert provider_of(path) is provider


# -- openai ----------------------------------------------------------------------------


def test_openai_refuses_several_choices_and_renders_the_finish_reason() -> None:
    with pytest.raises(GatewayRequestError, match="n must be 1"):
        openai.parse({"n": 2, "messages": [{"role": "user", "content": "x"}]}, "/chat/completions")
    request = openai.parse({"messages": [{"role": "user", "content": "x"}]}, "/chat/completions")
    body = openai.render(request, COMPLETION, "4", "served", 5, 9)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["total_tokens"] == 12 and body["model"] == "served"
    assert openai.render_error(429, "slow down")["error"]["code"] == 429


# -- cohere ----------------------------------------------------------------------------


def test_cohere_v1_refuses_a_malformed_history_turn() -> None:
    with pytest.raises(GatewayRequestError, match=r"chat_history\[0\]"):
        cohere.parse_v1({"message": "x", "chat_history": [{"role": "BOT"}]}, "/v1/chat")


def test_cohere_v2_text_response_format_asks_for_nothing_and_max_tokens_is_reported() -> None:
    request = cohere.parse_v2(
        {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text"}},
        "/v2/chat",
    )
    assert request.response_format is None
    body = cohere.render_v2(request, COMPLETION, "4", "m", 0, 3)
    assert body["finish_reason"] == "MAX_TOKENS" and body["usage"]["tokens"]["output_tokens"] == 2
    assert cohere.render_error(400, "bad") == {"message": "bad"}


# -- gemini ----------------------------------------------------------------------------


def test_gemini_schema_conversion_keeps_json_types_only() -> None:
    converted = gemini.schema_to_json(
        {
            "type": "OBJECT",
            "properties": {
                "score": {"type": "INTEGER", "nullable": True},
                "any": {"type": "TYPE_UNSPECIFIED"},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
            },
        }
    )
    assert converted["properties"]["score"] == {"type": ["integer", "null"]}
    assert converted["properties"]["any"] == {}  # no type: any value
    assert converted["properties"]["tags"]["items"] == {"type": "string"}
    assert converted["additionalProperties"] is False
    assert schema_error(converted) is None


def test_gemini_response_json_schema_must_be_a_schema() -> None:
    body = {
        "contents": [{"parts": [{"text": "x"}]}],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {"type": "objekt"},
        },
    }
    with pytest.raises(GatewayRequestError, match="responseJsonSchema is not a JSON schema"):
        parse_request("POST", GEMINI, json.dumps(body))


def test_gemini_renders_the_conformed_text_and_google_errors() -> None:
    request = gemini.parse({"contents": [{"parts": [{"text": "x"}]}]}, GEMINI)
    assert request.model == "gemini-2.0-flash"
    body = gemini.render(request, COMPLETION, "5", "served", 0, 1)
    assert body["candidates"][0]["content"]["parts"][0]["text"] == "5"  # not completion.text
    assert body["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert gemini.render_error(403, "no")["error"]["status"] == "FAILED_PRECONDITION"


# -- replies (jsonschema) --------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer"},
        "notes": {"type": "array", "items": {"type": "string", "maxLength": 5}},
        "verdict": {"enum": ["pass", "fail"]},
    },
    "required": ["score"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"score": 3, "notes": ["ok"], "verdict": "pass"}, None),
        ({"score": True}, "$.score is bool, not integer"),
        ({"score": 1, "notes": ["fine", 2]}, "$.notes[1] is int, not string"),
        ({"score": 1, "verdict": "maybe"}, "$.verdict is 'maybe', none of ['pass', 'fail']"),
        ({"notes": []}, "$ lacks 'score'"),
        ({"score": 1, "notes": ["too long"]}, "$.notes[0]: 'too long' is too long"),
        ({"score": 1, "extra": 1}, "$: Additional properties are not allowed"),
    ],
)
def test_schema_problems_say_where_the_reply_fails(value: Any, problem: str | None) -> None:
    found = schema_problem(SCHEMA, value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem), found


def test_a_schema_naming_its_draft_is_read_by_that_draft() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3,
              "exclusiveMaximum": True}  # fmt: skip
    assert schema_problem(draft4, 3) is not None  # draft 4's boolean exclusiveMaximum
    assert schema_problem(draft4, 2) is None


def test_an_unresolvable_reference_is_a_mismatch_not_a_crash() -> None:
    expect = Expectation(schema={"$ref": "https://example.invalid/schema.json"})
    with pytest.raises(ReplyMismatch, match="does not fit the schema"):
        conform(expect, '{"a": 1}')
