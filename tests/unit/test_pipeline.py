"""Pipeline logic, fast: real HTTP to the fake LLM, checks run in-process by a tiny stand-in.

The sandboxed, restricted-policy runs of the same scenarios are in
tests/integration/test_generator.py.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import pytest

from engine.contract import (
    OutputType,
    Status,
    check_prelude,
    coerce_score,
    import_allowed,
    resolve_entrypoint,
)
from engine.errors import InvalidRequestError, LLMUnavailableError
from engine.llm.openai_client import OpenAIClient
from engine.models import Row, RowResult
from engine.validation import Issue, ValidationReport
from engine.validation.rules import requires_from_parameters
from generator.adapters import llm_judge
from generator.pipeline import GeneratorOptions, generate_check
from generator.prompts import GenerationSpec
from generator.verdicts import agrees
from tests.fake_llm import FakeLLM, Reply


def run_in_process(source: str, output_type: OutputType, rows: Sequence[Row]) -> list[RowResult]:
    namespace = check_prelude()
    exec(compile(source, "check.py", "exec"), namespace)
    func, signature = resolve_entrypoint(namespace)
    out = []
    for row in rows:
        try:
            kwargs = {name: getattr(row, name) for name in signature.bound}
            score = coerce_score(func(**kwargs), output_type)
            out.append(RowResult(status=Status.OK, score=score.score))
        except Exception as exc:
            out.append(RowResult(status=Status.ERROR, error=f"{type(exc).__name__}: {exc}"))
    return out


def validate_simply(source: str, spec: GenerationSpec) -> ValidationReport:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return ValidationReport(
            valid=False,
            issues=[Issue(severity="error", code="syntax", message=str(exc), line=exc.lineno)],
        )
    issues = [
        Issue(severity="error", code="forbidden_import", message=a.name, line=n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.Import)
        for a in n.names
        if not import_allowed(a.name)
    ]
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    params = [a.arg for a in func.args.args]
    implied = requires_from_parameters(params)
    if implied["requires_scenario_result"] != spec.requires_scenario_result:
        issues.append(Issue(severity="error", code="requires-mismatch", message="scenario_result"))
    return ValidationReport(valid=not issues, issues=issues, signature=params)


GOOD = "```python\ndef evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n```"
WRONG = "```python\ndef evaluate(model_output: str) -> bool:\n    return True\n```"
EXAMPLES = [
    {"row": {"model_output": "yes indeed"}, "expected": True},
    {"row": {"model_output": "no way"}, "expected": False},
]


def generate(fake: FakeLLM, **kwargs: object):  # type: ignore[no-untyped-def]
    llm = OpenAIClient(fake.settings(llm_max_retries=0))
    values: dict[str, object] = {
        "description": "says yes",
        "examples": EXAMPLES,
        "llm": llm,
        "run": run_in_process,
        "validate": validate_simply,
        "options": GeneratorOptions(max_attempts=3),
    }
    values.update(kwargs)
    return generate_check(**values)  # type: ignore[arg-type]


def test_good_code_first_time(fake_llm: FakeLLM) -> None:
    fake_llm.reply(GOOD)
    result = generate(fake_llm)
    assert result.accepted
    assert (result.agreement.passed, result.agreement.total) == (2, 2)
    assert len(result.attempts) == 1 and len(fake_llm.requests) == 1
    assert result.code is not None and "'yes' in model_output" in result.code
    assert fake_llm.requests[0]["temperature"] == 0.2
    assert "accepted on attempt 1" in result.message


def test_disagreement_is_fed_back_then_repaired(fake_llm: FakeLLM) -> None:
    fake_llm.reply(WRONG).reply(GOOD)
    seen: list[object] = []
    result = generate(fake_llm, on_attempt=seen.append)
    assert result.accepted and len(result.attempts) == 2 and len(seen) == 2
    feedback = fake_llm.last_message(1)
    assert 'example 2: row {"model_output": "no way"}' in feedback
    assert "expected False, got True" in feedback
    assert result.attempts[0].feedback == feedback
    assert [m["role"] for m in fake_llm.requests[1]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


def test_no_code_then_repaired(fake_llm: FakeLLM) -> None:
    fake_llm.reply("I think you should check for yes.").reply(GOOD)
    result = generate(fake_llm)
    assert result.accepted
    assert result.attempts[0].error is not None
    assert "no ```python block" in fake_llm.last_message(1)


def test_empty_reply_counts_as_an_attempt(fake_llm: FakeLLM) -> None:
    fake_llm.reply("").reply(GOOD)
    result = generate(fake_llm)
    assert result.accepted and len(result.attempts) == 2
    assert "empty reply" in (result.attempts[0].error or "")


def test_all_attempts_fail_with_a_clear_report(fake_llm: FakeLLM) -> None:
    fake_llm.reply(WRONG).reply(
        "```python\nimport socket\ndef evaluate(model_output) -> bool:\n    return True\n```"
    ).reply(WRONG)
    result = generate(fake_llm)
    assert not result.accepted
    assert len(result.attempts) == 3
    assert result.code is not None and result.report is not None and result.report.valid
    assert result.agreement.passed == 1
    assert "not accepted after 3 attempts" in result.message
    assert "expected False, got True" in result.message
    assert "forbidden_import" in (result.attempts[1].feedback or "")


def test_llm_outage_propagates(fake_llm: FakeLLM) -> None:
    fake_llm.error(500)
    with pytest.raises(LLMUnavailableError):
        generate(fake_llm)


def test_no_examples_runs_a_smoke_row(fake_llm: FakeLLM) -> None:
    crash = "```python\ndef evaluate(model_output: str) -> bool:\n    return 1 / 0\n```"
    fake_llm.reply(crash).reply(GOOD)
    result = generate(fake_llm, examples=[])
    assert result.accepted and len(result.attempts) == 2
    assert "ZeroDivisionError" in fake_llm.last_message(1)


def test_model_check_placeholders_are_repaired(fake_llm: FakeLLM) -> None:
    fake_llm.reply("```text\nIs {answer} polite? Pass or Fail.\n```")
    fake_llm.reply("```text\nIs {generation} polite? Pass or Fail.\n```")
    result = generate(fake_llm, kind="model")
    assert result.accepted and result.kind == "model"
    assert result.model_dump()["check_type"] == "model"  # the deprecated name, still sent
    assert result.prompt_template == "Is {model_output} polite? Pass or Fail."
    assert result.model_check_type == "pass_fail"
    assert "unknown placeholder {answer}" in fake_llm.last_message(1)
    assert result.code is None
    assert "examples not evaluated" in result.message


def test_prior_code_goes_into_the_prompt(fake_llm: FakeLLM) -> None:
    fake_llm.reply(GOOD)
    generate(fake_llm, prior_code="def evaluate(model_output):\n    return False\n")
    assert "return False" in fake_llm.requests[0]["messages"][1]["content"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"examples": [{"row": {"model_output": "x"}, "expected": 1}]}, "not a bool"),
        (
            {
                "output_data_type": "int",
                "examples": [{"row": {"model_output": "x"}, "expected": 1.5}],
            },
            "not a int",
        ),
        ({"kind": "regex"}, "kind must be"),
        ({"description": "  "}, "empty"),
        ({"max_attempts": 0}, "at least 1"),
    ],
)
def test_bad_requests(fake_llm: FakeLLM, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match):
        generate(fake_llm, **kwargs)
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("expected", "status", "score", "ok"),
    [
        (True, Status.OK, True, True),
        (True, Status.OK, 1, False),
        (1, Status.OK, True, False),
        (3, Status.OK, 3, True),
        (3, Status.OK, 4, False),
        (0.5, Status.OK, 0.5000001, True),
        (0.5, Status.OK, 0.51, False),
        (1.0, Status.OK, 1, True),
        (True, Status.ERROR, None, False),
        (True, Status.TIMEOUT, None, False),
    ],
)
def test_agrees(
    expected: bool | float, status: Status, score: bool | float | None, ok: bool
) -> None:
    assert agrees(expected, RowResult(status=status, score=score)) is ok


def test_model_check_is_judged_on_the_examples(fake_llm: FakeLLM) -> None:
    templates = iter(
        ["```text\nDoes {model_output} say no?\n```", "```text\nDoes {model_output} say yes?\n```"]
    )

    def respond(body: dict[str, object]) -> Reply:
        messages = body["messages"]
        assert isinstance(messages, list)
        if "careful evaluator" not in messages[0]["content"]:
            return Reply(text=next(templates))  # the generator
        text = messages[-1]["content"]
        passed = ("say yes" in text and "yes indeed" in text) or (
            "say no" in text and "no way" in text
        )
        return Reply(text="RESULT: PASS" if passed else "RESULT: FAIL")

    fake_llm.responder = respond
    llm = OpenAIClient(fake_llm.settings(llm_max_retries=0))
    result = generate(fake_llm, kind="model", llm=llm, judge=llm_judge(llm))
    assert result.accepted, result.message
    assert len(result.attempts) == 2
    assert result.attempts[0].agreement.passed == 0
    assert result.prompt_template == "Does {model_output} say yes?"
    assert (result.agreement.passed, result.agreement.total) == (2, 2)
    assert "agrees with all 2 examples" in result.message


# --- messages: metadata stays an object for the model; the summary speaks to people --------


def test_feedback_keeps_metadata_an_object_not_a_json_string(fake_llm: FakeLLM) -> None:
    examples = [
        {"row": {"model_output": "yes", "metadata": {"lang": "fr", "n": 2}}, "expected": True},
        {"row": {"model_output": "no way", "metadata": {"lang": "en"}}, "expected": False},
    ]
    fake_llm.reply(WRONG).reply(GOOD)
    result = generate(fake_llm, examples=examples)
    assert result.accepted
    feedback = fake_llm.last_message(1)
    # was: "metadata": "{\"lang\": \"en\"}" (JSON text inside JSON)
    assert 'example 2: row {"model_output": "no way", "metadata": {"lang": "en"}}' in feedback


def test_the_summary_for_people_leaves_out_the_words_for_the_model(fake_llm: FakeLLM) -> None:
    broken = "```python\nimport socket\ndef evaluate(model_output) -> bool:\n    return True\n```"
    fake_llm.reply(broken).reply(broken)
    result = generate(fake_llm, options=GeneratorOptions(max_attempts=2))
    assert not result.accepted
    message = result.message
    assert message == (
        "not accepted after 2 attempts; best is attempt 2: it fails validation (1 error) and "
        "agrees with 0 of 0 examples. What is still wrong:\nValidation of the check failed:\n"
        "- line 1: error forbidden_import: socket"
    )
    assert "(1 errors)" not in message
    assert "Reply with the complete corrected" not in message
    assert "is not acceptable yet" not in message
    # the model still gets both
    assert "Reply with the complete corrected check" in (result.attempts[0].feedback or "")
