"""Model-check templates: placeholder validation, legacy names, literal braces, rendering."""

from __future__ import annotations

import pytest

from engine.contract import OutputType
from engine.judging.templates import model_check_type, render_template, validate_template
from engine.validation.rules import MODEL_CHECK_PLACEHOLDERS, ModelCheckType


@pytest.mark.parametrize("name", MODEL_CHECK_PLACEHOLDERS)
def test_every_contract_placeholder_is_accepted(name: str) -> None:
    report = validate_template(f"Judge {{model_output}} given {{{name}}}.")
    assert report.valid, report.issues
    assert name in report.placeholders


@pytest.mark.parametrize(
    ("legacy", "new"),
    [("generation", "model_output"), ("input", "scenario_input"), ("result", "scenario_result")],
)
def test_legacy_placeholders_are_normalised_with_a_warning(legacy: str, new: str) -> None:
    report = validate_template(f"Judge {{model_output}} and {{{legacy}}}.")
    assert report.valid
    assert report.template == f"Judge {{model_output}} and {{{new}}}."
    assert [(i.severity, i.code) for i in report.issues] == [("warning", "legacy-placeholder")]


def test_unknown_placeholder_is_an_error_with_position() -> None:
    report = validate_template("Rate this:\n{model_output}\nScore: {rating}")
    assert not report.valid
    (issue,) = report.issues
    assert (issue.code, issue.line, issue.col) == ("unknown-placeholder", 3, 8)
    assert "{rating}" in issue.message and "{{ }}" in issue.message


def test_json_in_single_braces_is_an_error_but_doubled_is_literal() -> None:
    bad = validate_template('{model_output}\nAnswer as {"score": 1}')
    assert [i.code for i in bad.issues] == ["unknown-placeholder"]
    good = validate_template('{model_output}\nAnswer as {{"score": 1}}')
    assert good.valid
    assert render_template(good.template, {"model_output": "hi"}) == 'hi\nAnswer as {"score": 1}'


@pytest.mark.parametrize("template", ["{model_output} {", "{model_output} }", "{{model_output}"])
def test_unbalanced_braces(template: str) -> None:
    report = validate_template(template)
    assert not report.valid


def test_template_must_show_the_model_output() -> None:
    report = validate_template("Is {scenario_input} a question?")
    assert [i.code for i in report.issues] == ["missing-model-output"]
    assert [i.code for i in validate_template("").issues] == ["empty-template"]


def test_declared_flags_must_agree() -> None:
    t = "Does {model_output} answer {scenario_input}?"
    assert validate_template(t, requires_scenario_input=True).valid
    assert validate_template(t, requires_scenario_input=None).valid
    wrong = validate_template(t, requires_scenario_input=False, requires_scenario_result=True)
    assert [i.code for i in wrong.issues] == ["requires-mismatch", "requires-mismatch"]
    assert validate_template(t).requires() == {
        "requires_scenario_input": True,
        "requires_scenario_result": False,
    }


def test_render_fills_json_values_and_legacy_names() -> None:
    row = {"model_output": "out", "metadata": {"b": 1, "a": 2}, "scenario_input": None}
    text = render_template("{generation}|{metadata}|{scenario_input}|{{x}}", row)
    assert text == 'out|{"a": 2, "b": 1}||{x}'


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (OutputType.BOOL, ModelCheckType.PASS_FAIL),
        ("int", ModelCheckType.SCORE),
        ("float", ModelCheckType.SCORE),
    ],
)
def test_model_check_type(output_type: str, expected: ModelCheckType) -> None:
    assert model_check_type(output_type) is expected
