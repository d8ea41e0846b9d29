"""Spans to rows, one table per convention, on span attributes as the real instrumentations
sent them (openai-v2 2.4b0, OpenInference 0.1.66, OpenLLMetry 0.62.4, decoded from their
OTLP requests), and on the older shapes still deployed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.online.mapping import DETAILS_EVENT, Event, Span, map_span

SYSTEM = "You are a geography tutor."
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
CHAT = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": ANSWER, "finish_reason": "stop"},
]

# openai-v2 2.4b0, span_only: the attributes of span `chat gpt-4o-mini`, as decoded
OPENAI_V2 = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.temperature": 0.2,
    "gen_ai.request.max_tokens": 50,
    "gen_ai.response.finish_reasons": ["stop"],
    "gen_ai.response.model": "gpt-4o-mini-2026-01-01",
    "gen_ai.response.id": "chatcmpl-fake123",
    "gen_ai.usage.input_tokens": 21,
    "gen_ai.usage.output_tokens": 7,
    "gen_ai.input.messages": '[{"role":"system","parts":[{"content":"You are a geography tutor.",'
    '"type":"text"}]},{"role":"user","parts":[{"content":"What is the capital of France?",'
    '"type":"text"}]}]',
    "gen_ai.output.messages": '[{"role":"assistant","parts":[{"content":"Paris is the capital of '
    'France.","type":"text"}],"finish_reason":"stop"}]',
}

# OpenLLMetry 0.62.4, span `openai.chat`: the same keys, JSON with spaces, and its extras
OPENLLMETRY = {
    **{k: v for k, v in OPENAI_V2.items() if not k.endswith(".messages")},
    "gen_ai.input.messages": json.dumps(json.loads(str(OPENAI_V2["gen_ai.input.messages"]))),
    "gen_ai.output.messages": json.dumps(json.loads(str(OPENAI_V2["gen_ai.output.messages"]))),
    "gen_ai.is_streaming": False,
    "gen_ai.openai.api_base": "http://127.0.0.1:18431/v1/",
    "gen_ai.usage.total_tokens": 28,
}

# OpenInference 0.1.66, span `ChatCompletion`
OPENINFERENCE = {
    "llm.system": "openai",
    "input.mime_type": "application/json",
    "input.value": json.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": QUESTION},
            ],
            "max_tokens": 50,
            "temperature": 0.2,
        }
    ),
    "output.value": json.dumps(
        {
            "id": "chatcmpl-fake123",
            "choices": [
                {
                    "finish_reason": "stop",
                    "index": 0,
                    "message": {"content": ANSWER, "role": "assistant"},
                }
            ],
            "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28},
        }
    ),
    "output.mime_type": "application/json",
    "llm.invocation_parameters": '{"model": "gpt-4o-mini", "max_tokens": 50, "temperature": 0.2}',
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": SYSTEM,
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": QUESTION,
    "llm.model_name": "gpt-4o-mini-2026-01-01",
    "llm.token_count.total": 28,
    "llm.token_count.prompt": 21,
    "llm.token_count.completion": 7,
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": ANSWER,
    "llm.finish_reason": "stop",
    "openinference.span.kind": "LLM",
}

# OpenLLMetry before its move to gen_ai.input.messages: flat indexed attributes
OPENLLMETRY_LEGACY = {
    "llm.request.type": "chat",
    "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": "gpt-4o-mini-2026-01-01",
    "gen_ai.prompt.0.role": "system",
    "gen_ai.prompt.0.content": SYSTEM,
    "gen_ai.prompt.1.role": "user",
    "gen_ai.prompt.1.content": QUESTION,
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.content": ANSWER,
    "gen_ai.completion.0.finish_reason": "stop",
    "gen_ai.usage.prompt_tokens": 21,
    "gen_ai.usage.completion_tokens": 7,
    "llm.usage.total_tokens": 28,
}

# OTel <= 1.36: per-message span events, the choice as an event
EVENTS = (
    Event("gen_ai.system.message", {"gen_ai.system": "openai", "content": SYSTEM}),
    Event("gen_ai.user.message", {"gen_ai.system": "openai", "content": QUESTION}),
    Event(
        "gen_ai.choice",
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}},
    ),
)

# openai-v2 event_only: the log record joined to its span, structured (not JSON strings)
DETAILS = Event(
    DETAILS_EVENT,
    {
        "gen_ai.input.messages": [
            {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
            {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
        ],
        "gen_ai.output.messages": [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": ANSWER}],
                "finish_reason": "stop",
            }
        ],
    },
)
OPENAI_V2_BARE = {k: v for k, v in OPENAI_V2.items() if not k.endswith(".messages")}


def _span(attributes: dict[str, Any], events: tuple[Event, ...] = (), name: str = "chat") -> Span:
    return Span(
        trace_id="19322431650c3b37e633e17f142aacf2",
        span_id="cccff8f7dc1061df",
        name=name,
        attributes=attributes,
        events=events,
        resource={"service.name": "support-bot", "deployment.environment.name": "prod"},
        scope_name="scope",
        status_code=1,
    )


# convention, attributes, events, where the messages were read
CASES = [
    ("openai-v2 span_only", OPENAI_V2, (), "gen_ai.input.messages"),
    ("openai-v2 event_only", OPENAI_V2_BARE, (DETAILS,), "gen_ai.input.messages"),
    ("openllmetry 0.62", OPENLLMETRY, (), "gen_ai.input.messages"),
    ("openinference", OPENINFERENCE, (), "llm.input_messages"),
    ("openllmetry legacy", OPENLLMETRY_LEGACY, (), "gen_ai.prompt"),
    ("deprecated events", {"gen_ai.operation.name": "chat"}, EVENTS, "events"),
]


@pytest.mark.parametrize(("convention", "attributes", "events", "source"), CASES)
def test_each_convention_maps_to_the_same_conversation(
    convention: str, attributes: dict[str, Any], events: tuple[Event, ...], source: str
) -> None:
    mapped = map_span(_span(attributes, events))
    assert mapped.messages == CHAT, convention
    assert mapped.model_output == ANSWER
    assert mapped.scenario_input == QUESTION
    assert not mapped.no_content
    assert mapped.is_llm
    meta = mapped.metadata
    assert meta["content_source"]["input"] == source
    assert meta["trace_id"] == "19322431650c3b37e633e17f142aacf2"
    assert meta["span_id"] == "cccff8f7dc1061df"
    assert meta["service_name"] == "support-bot"
    assert meta["environment"] == "prod"
    assert meta["status"] == "ok"
    assert "mapping_warnings" not in meta


@pytest.mark.parametrize(
    ("attributes", "provider", "request_model", "response_model", "usage"),
    [
        (
            OPENAI_V2,
            "openai",
            "gpt-4o-mini",
            "gpt-4o-mini-2026-01-01",
            {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
        ),
        (
            OPENLLMETRY,
            "openai",
            "gpt-4o-mini",
            "gpt-4o-mini-2026-01-01",
            {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
        ),
        (
            OPENINFERENCE,
            "openai",
            None,
            "gpt-4o-mini-2026-01-01",
            {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
        ),
        (
            OPENLLMETRY_LEGACY,
            "openai",
            "gpt-4o-mini",
            "gpt-4o-mini-2026-01-01",
            {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
        ),
    ],
)
def test_model_provider_and_usage_per_convention(
    attributes: dict[str, Any],
    provider: str,
    request_model: str | None,
    response_model: str,
    usage: dict[str, int],
) -> None:
    meta = map_span(_span(attributes)).metadata
    assert meta["provider"] == provider
    assert meta.get("request_model") == request_model
    assert meta["response_model"] == response_model
    assert meta["usage"] == usage
    assert meta["operation"] == "chat"
    assert meta["finish_reasons"] == ["stop"]


def test_system_instructions_come_first_as_a_system_message() -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}],
    }
    mapped = map_span(_span(attributes))
    assert mapped.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert mapped.model_output is None
    assert not mapped.no_content


def test_one_malformed_message_keeps_the_others_and_is_named() -> None:
    messages = json.loads(str(OPENAI_V2["gen_ai.input.messages"]))
    messages.insert(1, {"parts": [{"type": "text", "content": "no role"}]})
    messages.insert(2, "not an object")
    mapped = map_span(_span({**OPENAI_V2, "gen_ai.input.messages": json.dumps(messages)}))
    assert mapped.messages == CHAT
    warnings = mapped.metadata["mapping_warnings"]
    assert warnings == [
        "gen_ai.input.messages[1]: a message has no role",
        "gen_ai.input.messages[2]: a message is an object, not str",
    ]


def test_unparseable_messages_fall_through_to_the_next_convention() -> None:
    attributes = {**OPENINFERENCE, "gen_ai.input.messages": "[{not json"}
    mapped = map_span(_span(attributes))
    assert mapped.messages[:2] == CHAT[:2]
    assert mapped.metadata["content_source"]["input"] == "llm.input_messages"
    assert mapped.metadata["mapping_warnings"][0].startswith("gen_ai.input.messages: not JSON")


def test_openinference_without_messages_reads_output_value() -> None:
    attributes = {k: v for k, v in OPENINFERENCE.items() if not k.startswith("llm.output_messages")}
    mapped = map_span(_span(attributes))
    assert mapped.model_output == ANSWER
    assert mapped.metadata["content_source"]["output"] == "output.value"


def test_tool_calls_and_tool_results_in_parts() -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "weather",
                        "arguments": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_1", "response": "18C"}],
            },
        ],
        "gen_ai.output.messages": [
            {"role": "assistant", "parts": [{"type": "text", "content": "It is 18C."}]}
        ],
    }
    mapped = map_span(_span(attributes))
    assert mapped.messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert mapped.messages[2] == {"role": "tool", "content": "18C", "tool_call_id": "call_1"}
    assert mapped.model_output == "It is 18C."
    assert mapped.scenario_input == "Weather in Paris?"


def test_openinference_tool_calls_and_content_lists() -> None:
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "Weather?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
    }
    mapped = map_span(_span(attributes))
    assert mapped.messages[0] == {"role": "user", "content": "Weather?"}
    call = {"id": "call_9", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    assert mapped.messages[1]["tool_calls"] == [call]
    assert json.loads(str(mapped.model_output)) == [call]  # a tool call is the output


def test_a_span_without_content_is_kept_and_marked() -> None:
    mapped = map_span(_span(OPENAI_V2_BARE))
    assert mapped.no_content
    assert mapped.is_llm  # an LLM call whose content was not captured
    assert mapped.metadata["no_content"] is True
    assert mapped.metadata["usage"] == {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28}
    other = map_span(_span({"http.method": "GET"}, name="GET /"))
    assert other.no_content and not other.is_llm
    assert other.row()["messages"] == []


def test_session_user_and_conversation_ids() -> None:
    meta = map_span(_span({**OPENINFERENCE, "session.id": "s1", "user.id": "u1"})).metadata
    assert (meta["session_id"], meta["user_id"]) == ("s1", "u1")
    meta = map_span(_span({**OPENAI_V2, "gen_ai.conversation.id": "c7"})).metadata
    assert meta["session_id"] == "c7"
