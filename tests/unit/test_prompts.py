"""Prompts are built from the contract module: every contract fact appears, nothing else decides."""

from __future__ import annotations

import pytest

from engine.contract import (
    ENTRYPOINT_CLASS,
    ENTRYPOINT_FUNCTION,
    PARAMETER_NAMES,
    RESTRICTED_FORBIDDEN_BUILTINS,
    OutputType,
    Status,
    import_allowed,
)
from engine.validation import Issue
from engine.validation.rules import (
    MODEL_CHECK_PLACEHOLDERS,
    PARAMETER_DOCS,
    SANDBOX_PACKAGES,
    ModelCheckType,
)
from generator.models import Example, ExampleResult
from generator.prompts import (
    GenerationSpec,
    code_system_prompt,
    feedback_message,
    importable_modules,
    initial_messages,
    model_system_prompt,
    task_prompt,
)


def test_code_system_prompt_states_the_contract() -> None:
    prompt = code_system_prompt()
    for name in PARAMETER_NAMES:
        assert f"`{name}`: {PARAMETER_DOCS[name]}" in prompt
    assert f"`{ENTRYPOINT_FUNCTION}(...)`" in prompt
    assert f"`{ENTRYPOINT_CLASS}(" in prompt
    for output_type in OutputType:
        assert f"`{output_type.value}`" in prompt
    assert "CheckResponse(score, explanation=None, metadata=None)" in prompt
    for builtin in RESTRICTED_FORBIDDEN_BUILTINS:
        assert f"`{builtin}`" in prompt
    stdlib, third_party = importable_modules()
    for module in [*stdlib, *third_party]:
        assert module in prompt


def test_importable_modules_follow_the_allowlist_and_the_image() -> None:
    stdlib, third_party = importable_modules()
    assert "re" in stdlib and "json" in stdlib
    assert "__future__" not in stdlib
    assert "engine.checks" not in stdlib
    image = {p.import_name for p in SANDBOX_PACKAGES}
    assert set(third_party) <= image
    assert all(import_allowed(m) for m in [*stdlib, *third_party])
    assert "numpy" in third_party and "RestrictedPython" not in third_party


@pytest.mark.parametrize("kind", list(ModelCheckType))
def test_model_system_prompt_lists_the_placeholders(kind: ModelCheckType) -> None:
    prompt = model_system_prompt(kind)
    for name in MODEL_CHECK_PLACEHOLDERS:
        assert f"`{{{name}}}`" in prompt
    assert ("PASS or FAIL" in prompt) == (kind is ModelCheckType.PASS_FAIL)


def _spec(**kwargs: object) -> GenerationSpec:
    values: dict[str, object] = {"description": "mentions the expected city"}
    values.update(kwargs)
    return GenerationSpec(**values)  # type: ignore[arg-type]


def test_task_prompt_signature_rules_and_type() -> None:
    text = task_prompt(_spec(requires_scenario_result=True, output_type=OutputType.INT))
    assert "mentions the expected city" in text
    assert "must take `scenario_result`" in text
    assert "must not take `scenario_input`" in text
    assert "`-> int`" in text


def test_task_prompt_numbers_examples_with_expected_values() -> None:
    examples = (
        Example(row={"model_output": "Paris", "scenario_result": "Paris"}, expected=True),
        Example(row={"model_output": "Rome" * 1000}, expected=False),
    )
    text = task_prompt(_spec(examples=examples))
    assert '1. row: {"model_output": "Paris", "scenario_result": "Paris"}' in text
    assert "expected score: True" in text
    assert "2. row:" in text and "expected score: False" in text
    assert "[4000 chars]" in text  # long values are cut


def test_task_prompt_includes_prior_code() -> None:
    text = task_prompt(_spec(prior_code="def evaluate(model_output):\n    return True\n"))
    assert "Refine this existing check" in text
    assert "```python\ndef evaluate(model_output):\n    return True\n```" in text


def test_initial_messages_pick_the_system_prompt() -> None:
    code = initial_messages(_spec())
    model = initial_messages(_spec(kind="model", requires_scenario_input=True))
    assert [m["role"] for m in code] == ["system", "user"]
    assert code[0]["content"] == code_system_prompt()
    assert model[0]["content"] == model_system_prompt(ModelCheckType.PASS_FAIL)
    assert "{scenario_input}" in model[1]["content"]


def test_feedback_names_issues_examples_and_expected_values() -> None:
    examples = (
        Example(row={"model_output": "a"}, expected=True),
        Example(row={"model_output": "b"}, expected=0.5),
    )
    failures = [
        (
            ExampleResult(index=0, expected=True, status=Status.OK, score=False, agreed=False),
            examples[0],
        ),
        (
            ExampleResult(
                index=1, expected=0.5, status=Status.TIMEOUT, error="row timed out", agreed=False
            ),
            examples[1],
        ),
    ]
    text = feedback_message(
        attempt=2,
        issues=[
            Issue(severity="error", code="forbidden_import", message="socket", line=1, col=1),
            Issue(severity="warning", code="style", message="ignored"),
        ],
        failures=failures,
        passed=3,
        total=5,
    )
    assert "Attempt 2" in text
    assert "line 1, col 1: error forbidden_import: socket" in text
    assert "ignored" not in text  # warnings are not feedback
    assert 'example 1: row {"model_output": "a"}\n  expected True, got False' in text
    assert "example 2" in text and "expected 0.5" in text
    assert "status timeout" in text and "row timed out" in text
    assert "2 of 5" in text
    assert text.rstrip().endswith("```python block.")


def test_feedback_for_an_unusable_reply() -> None:
    text = feedback_message(attempt=1, error="the reply holds no code", kind="model")
    assert "the reply holds no code" in text
    assert "```text block" in text
