"""The filter language, one case a line: span fields, attributes, metadata and operators."""

from __future__ import annotations

from typing import Any

import pytest

from engine.online.filters import FilterError, SpanFields, check_filter, matches

SPAN = SpanFields(
    name="chat gpt-4o-mini",
    service="support-bot",
    model="gpt-4o-mini-2026-01-01",
    status="ok",
    kind=3,
    attributes={
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 21,
        "app.flag": True,
        "app.none": None,
    },
    metadata={"environment": "prod", "session_id": "s-1", "gen_ai.request.model": "shadowed"},
)

CASES: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"service.name": "support-bot"}, True),
    ({"service.name": "billing"}, False),
    ({"service": "support-bot"}, True),
    ({"name": "chat gpt-4o-mini"}, True),
    ({"span.name": "chat gpt-4o-mini"}, True),
    ({"model": "gpt-4o-mini-2026-01-01"}, True),
    ({"status": "ok", "kind": 3}, True),
    ({"gen_ai.request.model": "gpt-4o-mini"}, True),  # the attribute wins over metadata
    ({"environment": "prod"}, True),  # metadata
    ({"environment": "prod", "service.name": "billing"}, False),  # AND
    ({"gen_ai.usage.input_tokens": 21}, True),
    ({"gen_ai.usage.input_tokens": "21"}, False),  # no coercion
    ({"app.flag": True}, True),
    ({"app.flag": 1}, False),  # a boolean is not a number
    ({"gen_ai.request.model": {"in": ["gpt-4o", "gpt-4o-mini"]}}, True),
    ({"gen_ai.request.model": {"in": ["gpt-4o"]}}, False),
    ({"environment": {"ne": "staging"}}, True),
    ({"environment": {"ne": "prod"}}, False),
    ({"absent.key": {"ne": "x"}}, True),  # a missing key is not equal to anything
    ({"session_id": {"exists": True}}, True),
    ({"absent.key": {"exists": True}}, False),
    ({"absent.key": {"exists": False}}, True),
    ({"app.none": {"exists": True}}, False),  # null counts as absent
    ({"model": {"regex": "^gpt-4o"}}, True),
    ({"model": {"regex": "^claude"}}, False),
    ({"gen_ai.usage.input_tokens": {"regex": "^2"}}, True),  # on the value as text
    ({"absent.key": {"regex": "."}}, False),
    ({"model": {"regex": "mini", "ne": "gpt-4o-mini-2026-01-01"}}, False),  # operators ANDed
    ({"absent.key": "x"}, False),
    ({"absent.key": None}, False),
]


@pytest.mark.parametrize(("document", "expected"), CASES)
def test_filter_cases(document: dict[str, Any], expected: bool) -> None:
    assert matches(SPAN, check_filter(document)) is expected


BAD: list[tuple[Any, str]] = [
    ([], "filter: a JSON object of field names"),
    ({"model": {"like": "x"}}, "filter['model']: unknown operator 'like'"),
    ({"model": {"in": "gpt"}}, "filter['model'].in: a list of at most 1000 scalar values"),
    ({"model": {"exists": "yes"}}, "filter['model'].exists: true or false"),
    ({"model": {"regex": "("}}, "filter['model'].regex: not a regular expression"),
    ({"model": [1, 2]}, "filter['model']: a value to equal, or an object of operators"),
    ({"model": {}}, "filter['model']: a value to equal, or an object of operators"),
    ({"": 1}, "filter: each key is a field name of 1 to 500 characters"),
]


@pytest.mark.parametrize(("document", "message"), BAD)
def test_bad_filters_are_refused_naming_the_key(document: Any, message: str) -> None:
    with pytest.raises(FilterError) as caught:
        check_filter(document)
    assert str(caught.value).startswith(message)
