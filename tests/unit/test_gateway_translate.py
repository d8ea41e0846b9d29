"""The model gateway's pure half: each client's HTTP shape <-> one chat request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.gateway.providers import (
    Expectation,
    GatewayRequestError,
    Provider,
    ReplyMismatch,
    conform,
    parse_request,
    render,
    render_error,
)
from engine.gateway.service import resolve_model
from engine.llm import Completion, Usage

GEMINI = "/v1beta/models/gemini-2.0-flash:generateContent"
ENUM_SCHEMA = {"type": "STRING", "format": "enum", "enum": ["5", "4", "3", "2", "1"]}

PARSED: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "openai plain",
        "/v1/chat/completions",
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 0},
        {
            "provider": Provider.OPENAI,
            "model": "gpt-4o",
            "messages": ({"role": "user", "content": "hi"},),
            "temperature": 0.0,
        },
    ),
    (
        "openai parts, developer role, max_completion_tokens, response_format passthrough",
        "/v1/chat/completions",
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
            ],
            "max_completion_tokens": 20,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        },
        {
            "messages": (
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "ab"},
            ),
            "max_tokens": 20,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        },
    ),
    (
        "cohere v1 message, preamble and chat_history",
        "/v1/chat",
        {
            "message": "score it",
            "model": "command-r",
            "temperature": 0.2,
            "preamble": "You grade.",
            "chat_history": [
                {"role": "USER", "message": "earlier"},
                {"role": "CHATBOT", "message": "ok"},
            ],
        },
        {
            "provider": Provider.COHERE_V1,
            "model": "command-r",
            "temperature": 0.2,
            "messages": (
                {"role": "system", "content": "You grade."},
                {"role": "user", "content": "earlier"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "score it"},
            ),
        },
    ),
    (
        "cohere v2 messages with text parts and a json schema",
        "/v2/chat",
        {
            "model": "command-a",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
            "response_format": {"type": "json_object", "json_schema": {"type": "object"}},
        },
        {
            "provider": Provider.COHERE_V2,
            "messages": ({"role": "user", "content": "x"},),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": {"type": "object"}},
            },
        },
    ),
    (
        "gemini chat history resent, system instruction, generation config",
        GEMINI,
        {
            "contents": [
                {"role": "user", "parts": [{"text": "rate this"}]},
                {"role": "model", "parts": [{"text": "4, because"}]},
                {"role": "user", "parts": [{"text": "Convert the final score."}]},
            ],
            "systemInstruction": {"parts": [{"text": "sys"}]},
            "generationConfig": {"temperature": 0.5, "maxOutputTokens": 30},
        },
        {
            "provider": Provider.GEMINI,
            "model": "gemini-2.0-flash",
            "temperature": 0.5,
            "max_tokens": 30,
            "messages": (
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "rate this"},
                {"role": "assistant", "content": "4, because"},
                {"role": "user", "content": "Convert the final score."},
            ),
            "expect": None,
        },
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "expected"), [p[1:] for p in PARSED], ids=[p[0] for p in PARSED]
)
def test_requests_become_one_chat_request(
    path: str, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    request = parse_request("POST", path, json.dumps(body))
    for name, value in expected.items():
        assert getattr(request, name) == value, name


def test_gemini_enum_asks_for_a_json_schema_and_names_the_values() -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Convert the final score."}]}],
        "generationConfig": {"responseMimeType": "text/x.enum", "responseSchema": ENUM_SCHEMA},
    }
    request = parse_request("POST", GEMINI, json.dumps(body))
    assert request.expect == Expectation(values=("5", "4", "3", "2", "1"))
    assert request.response_format is not None
    schema = request.response_format["json_schema"]["schema"]
    assert schema["properties"]["value"]["enum"] == ["5", "4", "3", "2", "1"]
    assert '"5", "4", "3", "2", "1"' in request.messages[-1]["content"]


def test_gemini_json_schema_is_converted_and_checked() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"score": {"type": "INTEGER"}, "why": {"type": "STRING"}},
        "required": ["score"],
    }
    body = {
        "contents": [{"parts": [{"text": "x"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseSchema": schema},
    }
    request = parse_request("POST", GEMINI, json.dumps(body))
    assert request.expect is not None and request.expect.schema is not None
    assert request.expect.schema["properties"]["score"] == {"type": "integer"}
    assert json.loads(conform(request.expect, '{"score": 3, "why": "ok"}')) == {
        "score": 3,
        "why": "ok",
    }
    with pytest.raises(ReplyMismatch, match="score"):
        conform(request.expect, '{"score": "three"}')
    with pytest.raises(ReplyMismatch, match="lacks 'score'"):
        conform(request.expect, '{"why": "no score"}')


@pytest.mark.parametrize(
    ("reply", "value"),
    [('{"value": "4"}', "4"), ("4", "4"), ('"2"', "2"), (" 5 \n", "5")],
)
def test_enum_replies_are_reduced_to_the_value(reply: str, value: str) -> None:
    assert conform(Expectation(values=("5", "4", "3", "2", "1")), reply) == value


@pytest.mark.parametrize("reply", ['{"value": "7"}', "excellent", '{"other": "4"}'])
def test_an_enum_reply_that_fits_no_value_is_an_error(reply: str) -> None:
    with pytest.raises(ReplyMismatch, match="none of the allowed values"):
        conform(Expectation(values=("5", "4", "3", "2", "1")), reply)


BAD: list[tuple[str, str, str, str, int]] = [
    ("unknown route", "POST", "/v1/embeddings", "{}", 404),
    ("GET", "GET", "/v1/chat/completions", "{}", 405),
    ("not JSON", "POST", "/v1/chat/completions", "{", 400),
    ("streaming", "POST", "/v1/chat/completions", '{"stream": true, "messages": []}', 400),
    (
        "tools",
        "POST",
        "/v1/chat/completions",
        '{"tools": [{}], "messages": [{"role": "user", "content": "x"}]}',
        400,
    ),
    (
        "bad role",
        "POST",
        "/v1/chat/completions",
        '{"messages": [{"role": "tool", "content": "x"}]}',
        400,
    ),
    (
        "image part",
        "POST",
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
        400,
    ),
    ("cohere v1 without message", "POST", "/v1/chat", '{"model": "command-r"}', 400),
    ("gemini without contents", "POST", GEMINI, '{"contents": []}', 400),
    (
        "gemini enum without values",
        "POST",
        GEMINI,
        '{"contents": [{"parts": [{"text": "x"}]}], '
        '"generationConfig": {"responseMimeType": "text/x.enum"}}',
        400,
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_requests_the_gateway_cannot_serve_are_refused_with_a_reason(
    method: str, path: str, body: str, status: int
) -> None:
    with pytest.raises(GatewayRequestError) as caught:
        parse_request(method, path, body)
    assert caught.value.status == status
    assert str(caught.value)


COMPLETION = Completion("4", "op-model", Usage(10, 2), "stop")


@pytest.mark.parametrize(
    ("path", "body", "read"),
    [
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x"}]},
            lambda d: d["choices"][0]["message"]["content"],
        ),
        ("/v1/chat", {"message": "x"}, lambda d: d["text"]),
        (
            "/v2/chat",
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            lambda d: d["message"]["content"][0]["text"],
        ),
        (
            GEMINI,
            {"contents": [{"parts": [{"text": "x"}]}]},
            lambda d: d["candidates"][0]["content"]["parts"][0]["text"],
        ),
    ],
    ids=["openai", "cohere-v1", "cohere-v2", "gemini"],
)
def test_replies_are_rendered_in_each_clients_shape(
    path: str, body: dict[str, Any], read: Any
) -> None:
    request = parse_request("POST", path, json.dumps(body))
    document = render(request, COMPLETION, "4", "op-model", 1700000000, 7)
    assert read(document) == "4"


def test_cohere_v1_reply_echoes_the_history_and_counts_tokens() -> None:
    request = parse_request("POST", "/v1/chat", json.dumps({"message": "x"}))
    document = render(request, COMPLETION, "4", "op-model", 0, 1)
    assert document["chat_history"][-2:] == [
        {"role": "USER", "message": "x"},
        {"role": "CHATBOT", "message": "4"},
    ]
    assert document["meta"]["billed_units"] == {"input_tokens": 10, "output_tokens": 2}


@pytest.mark.parametrize(
    ("provider", "read"),
    [
        (None, lambda d: d["error"]["message"]),
        (Provider.OPENAI, lambda d: d["error"]["message"]),
        (Provider.COHERE_V1, lambda d: d["message"]),
        (Provider.GEMINI, lambda d: d["error"]["message"]),
    ],
)
def test_errors_carry_the_message_each_client_shows(provider: Provider | None, read: Any) -> None:
    assert read(render_error(provider, 403, "llm_tokens_per_run is 0")) == "llm_tokens_per_run is 0"


@pytest.mark.parametrize(
    ("requested", "mapping", "served"),
    [
        ("gpt-4o", {}, "default"),
        ("gpt-4o", {"gpt-4o": "big"}, "big"),
        ("command-r", {"gpt-4o": "big"}, "default"),
        ("command-r", {"gpt-4o": "big", "*": "any"}, "any"),
        (None, {"gpt-4o": "big"}, "default"),
    ],
)
def test_model_map(requested: str | None, mapping: dict[str, str], served: str) -> None:
    assert resolve_model(requested, mapping, "default") == served
