"""Model-check templates in the engine: rendering rows, and the prompts built from them."""

from __future__ import annotations

import pytest

from engine.errors import InvalidRequestError
from engine.judging.model_check import model_check_messages, run_model_check
from engine.judging.templates import render_template, validate_template
from engine.models import Row
from engine.validation.rules import ModelCheckType


def test_render_fills_every_placeholder_json_for_non_strings() -> None:
    row = Row(
        model_output="out",
        scenario_input={"q": "é?"},
        scenario_result=[1, 2],
        model_input=None,
        metadata={"b": 2, "a": 1},
    )
    text = render_template(
        "{model_output}|{scenario_input}|{scenario_result}|{model_input}|{metadata}",
        row.model_dump(),
    )
    assert text == 'out|{"q": "é?"}|[1, 2]||{"a": 1, "b": 2}'


def test_render_legacy_names_and_literal_braces() -> None:
    row = {"model_output": "x", "scenario_input": "q", "scenario_result": "r"}
    assert render_template("{generation} {input} {result} {{json}}", row) == "x q r {json}"


def test_validate_normalises_legacy_and_rejects_unknown() -> None:
    report = validate_template("Judge {generation} for {input}")
    assert report.valid
    assert report.template == "Judge {model_output} for {scenario_input}"
    assert [i.code for i in report.issues] == ["legacy-placeholder", "legacy-placeholder"]
    assert not validate_template("Judge {model_output} by {criteria}").valid


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        (ModelCheckType.SCORE, "SCORE: <integer from 1 to 5>"),
        (ModelCheckType.PASS_FAIL, "RESULT: PASS"),
    ],
)
def test_messages_put_the_reply_format_in_the_system_message(
    kind: ModelCheckType, needle: str
) -> None:
    row = Row(model_output="Paris", scenario_input="Capital of France?")
    messages = model_check_messages(
        "Is {model_output} right for {scenario_input}?", kind, row, low=1, high=5
    )
    assert messages[0]["role"] == "system"
    assert needle in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": "Is Paris right for Capital of France??"}


def test_run_model_check_rejects_bad_templates_and_types_before_any_call() -> None:
    rows = [Row(model_output="x")]
    with pytest.raises(InvalidRequestError, match="unknown placeholder"):
        run_model_check("{model_output} {nope}", "score", rows, None)
    with pytest.raises(InvalidRequestError, match="check_type"):
        run_model_check("{model_output}", "stars", rows, None)


def test_run_model_check_without_client_and_skips() -> None:
    rows = [Row(model_output="x"), Row(model_output="y", scenario_result="z")]
    results = run_model_check("{model_output} vs {scenario_result}", "pass_fail", rows, None)
    assert [r.status.value for r in results] == ["skipped", "judge_error"]
