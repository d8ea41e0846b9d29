"""Other tools' scorer files, run unchanged in the real sandbox (runc and runsc).

Each file is written the way its tool documents it; binding and return coercion happen
in the harness child (engine.contract.formats).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from engine.contract import Status
from engine.models import RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.integration.conftest import FAST

pytestmark = pytest.mark.docker

ROW: dict[str, Any] = {
    "id": "r1",
    "model_output": "Paris",
    "scenario_input": "Capital of France?",
    "scenario_result": "Paris",
    "metadata": {"topic": "geo"},
}


def run(
    runner: SandboxRunner,
    source: str,
    rows: list[dict[str, Any]] | None = None,
    entry: str | None = None,
) -> list[RowResult]:
    check = CodeCheck(source=textwrap.dedent(source), entry=entry)
    return runner.run_check(check, rows or [ROW], FAST)


def one(runner: SandboxRunner, source: str, row: dict[str, Any] | None = None) -> RowResult:
    result = run(runner, source, [row or ROW])[0]
    return result


# -- reward-kit (seed 002's shape) ---------------------------------------------------------

SEED_SHAPE = """
from reward_kit import reward_function

@reward_function
def evaluate(messages: list[dict], criteria: str = None, **kwargs) -> dict:
    conversation_history = messages[:-1]
    result_to_evaluate = messages[-1]
    if criteria is None:
        criteria = "default"
    # seed 002 forwards **kwargs into chat.completions.create: it must hold no
    # scorebox parameter names
    assert not kwargs, kwargs
    reply = result_to_evaluate["content"]
    score = 10.0 if conversation_history and reply == "Paris" else 1.0
    return {
        "score": score,
        "reasoning": f"{criteria}: {len(conversation_history)} earlier message(s)",
        "raw_response": "Score: 10",
        "usage": None,
    }
"""


def test_seed_002_shape_dict_return(runner: SandboxRunner) -> None:
    result = one(runner, SEED_SHAPE)
    assert result.status is Status.OK, result.error
    assert result.score == 10.0
    assert result.explanation == "default: 1 earlier message(s)"
    assert result.metadata == {"raw_response": "Score: 10", "usage": None}


def test_reward_kit_messages_from_the_row_and_evaluate_result(runner: SandboxRunner) -> None:
    source = """
    from typing import List
    from reward_kit import EvaluateResult, Message, MetricResult, reward_function

    @reward_function
    def exact(messages: List[Message], ground_truth: str = None, **kwargs) -> EvaluateResult:
        last = messages[-1]
        assert isinstance(last, Message)
        ok = last.content == ground_truth
        return EvaluateResult(
            score=1.0 if ok else 0.0,
            reason=f"{len(messages)} messages",
            metrics={"exact": MetricResult(score=float(ok), reason="compared")},
        )
    """
    row = {
        **ROW,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "Capital?"},
            {"role": "assistant", "content": "Lyon"},
        ],
        "ground_truth": "Lyon",
    }
    result = one(runner, source, row)
    assert result.status is Status.OK, result.error
    assert (result.score, result.explanation) == (1.0, "3 messages")
    assert result.metadata == {
        "sub_scores": {"exact": {"score": 1.0, "reason": "compared", "is_score_valid": True}}
    }


def test_reward_kit_exception_and_wrong_type(runner: SandboxRunner) -> None:
    raising = """
    from reward_kit import reward_function

    @reward_function
    def judge(messages, **kwargs):
        return helper(messages)

    def helper(messages):
        raise KeyError("no judge")
    """
    result = one(runner, raising)
    assert result.status is Status.ERROR
    assert result.error is not None and "KeyError" in result.error
    assert "in judge" in result.error and "in helper" in result.error  # the check's own frames
    wrong = (
        "from reward_kit import reward_function\n"
        "@reward_function\ndef j(messages, **kw):\n    return 'high'\n"
    )
    result = one(runner, wrong)
    assert result.status is Status.INVALID_SCORE and "EvaluateResult" in (result.error or "")


# -- OpenAI grader -------------------------------------------------------------------------


def test_grader_sample_item_fallbacks_and_row_fields(runner: SandboxRunner) -> None:
    source = """
    def grade(sample, item) -> float:
        if sample.get("output_json") is not None:
            return float(sample["output_json"]["n"])
        reference = item.get("reference", item.get("scenario_result"))
        return 1.0 if sample["output_text"] == reference else 0.0
    """
    rows = [
        ROW,
        {**ROW, "model_output": "Lyon"},
        {**ROW, "model_output": '{"n": 0.25}'},
        {**ROW, "sample": {"output_text": "x"}, "item": {"reference": "x"}},
    ]
    results = run(runner, source, rows)
    assert [r.status for r in results] == [Status.OK] * 4, [r.error for r in results]
    assert [r.score for r in results] == [1.0, 0.0, 0.25, 1.0]
    assert results[0].passed is None


def test_grader_exception_and_wrong_type(runner: SandboxRunner) -> None:
    result = one(runner, "def grade(sample, item):\n    return 1 / 0\n")
    assert result.status is Status.ERROR and "ZeroDivisionError" in (result.error or "")
    assert "in grade" in (result.error or "")
    result = one(runner, "def grade(sample, item):\n    return 'A'\n")
    assert result.status is Status.INVALID_SCORE


# -- promptfoo -----------------------------------------------------------------------------


def test_promptfoo_grading_result_bool_and_number(runner: SandboxRunner) -> None:
    source = """
    def get_assert(output, context):
        expected = context["vars"].get("expected")
        if expected is None:
            return len(output) / 10
        ok = output == expected
        return {
            "pass": ok,
            "score": 1.0 if ok else 0.0,
            "reason": "matches" if ok else "differs",
            "namedScores": {"exact": 1.0 if ok else 0.0},
            "componentResults": [{"pass": ok, "score": 1.0 if ok else 0.0, "reason": "exact"}],
        }
    """
    rows = [
        {**ROW, "vars": {"expected": "Paris"}},
        {**ROW, "vars": {"expected": "Rome"}},
        {**ROW, "metadata": {}},
    ]
    results = run(runner, source, rows)
    assert [r.status for r in results] == [Status.OK] * 3, [r.error for r in results]
    assert [(r.score, r.passed) for r in results] == [(1.0, True), (0.0, False), (0.5, True)]
    assert results[0].explanation == "matches"
    assert results[1].metadata is not None
    assert results[1].metadata["sub_scores"] == {"exact": {"score": 0.0}}
    boolean = one(
        runner, "def get_assert(output, context):\n    return context['prompt'].endswith('?')\n"
    )
    assert (boolean.score, boolean.passed) == (True, True)


def test_promptfoo_named_function_exception_and_missing_reason(runner: SandboxRunner) -> None:
    source = (
        "def first(output, context):\n    return True\n\n"
        "def second(output, context):\n    raise ValueError('bad')\n"
    )
    result = run(runner, source, entry="second")[0]
    assert result.status is Status.ERROR and "in second" in (result.error or "")
    result = one(
        runner, "def get_assert(output, context):\n    return {'pass': True, 'score': 1}\n"
    )
    assert result.status is Status.INVALID_SCORE and "reason" in (result.error or "")


# -- Braintrust / Phoenix ------------------------------------------------------------------


def test_braintrust_handler_and_named_scores(runner: SandboxRunner) -> None:
    source = """
    def handler(input, output, expected, metadata):
        return [
            {"name": "exact", "score": 1.0 if output == expected else 0.0},
            {
                "name": "has_topic",
                "score": 1.0 if metadata.get("topic") else 0.0,
                "metadata": {"q": input},
            },
        ]
    """
    result = one(runner, source, {**ROW, "metadata": {}})
    assert result.status is Status.OK, result.error
    assert result.score == 0.5
    assert result.metadata == {
        "sub_scores": {
            "exact": {"score": 1.0, "name": "exact"},
            "has_topic": {"score": 0.0, "name": "has_topic", "q": "Capital of France?"},
        }
    }


def test_phoenix_evaluator_tuple_and_fallback_to_ground_truth(runner: SandboxRunner) -> None:
    source = """
    def matches(output, reference):
        ok = output == reference
        return (1.0 if ok else 0.0, "correct" if ok else "incorrect", f"{output} vs {reference}")
    """
    result = one(runner, source, {**ROW, "scenario_result": None, "ground_truth": "Lyon"})
    assert result.status is Status.OK, result.error
    assert (result.score, result.explanation, result.metadata) == (
        0.0,
        "Paris vs Lyon",
        {"label": "incorrect"},
    )


def test_braintrust_exception_none_and_label_only(runner: SandboxRunner) -> None:
    result = one(runner, "def handler(output):\n    return int(output)\n")
    assert result.status is Status.ERROR and "in handler" in (result.error or "")
    result = one(runner, "def handler(output):\n    return None\n")
    assert result.status is Status.SKIPPED and "None" in (result.error or "")
    result = one(runner, "def get_assert(output, context):\n    return None\n")
    assert result.status is Status.INVALID_SCORE  # only Braintrust/Phoenix skip on None
    result = one(runner, "def handler(output):\n    return 'good'\n")
    assert result.status is Status.INVALID_SCORE and "label" in (result.error or "")


# -- LangSmith -----------------------------------------------------------------------------


def test_langsmith_evaluator(runner: SandboxRunner) -> None:
    source = """
    def correct(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
        ok = outputs["output"] == reference_outputs["output"]
        return {"key": "correct", "score": ok, "comment": inputs["input"]}
    """
    result = one(runner, source)
    assert result.status is Status.OK, result.error
    assert (result.score, result.passed, result.explanation) == (True, True, "Capital of France?")
    assert result.metadata == {"key": "correct"}
    result = one(runner, "def correct(outputs):\n    return {'key': 'k'}\n")
    assert result.status is Status.INVALID_SCORE
    result = one(runner, "def correct(outputs):\n    return outputs['missing']\n")
    assert result.status is Status.ERROR and "in correct" in (result.error or "")


# -- entry ---------------------------------------------------------------------------------


def test_several_fitting_functions_fail_to_load_naming_them(runner: SandboxRunner) -> None:
    source = "def a(output, expected):\n    return 1\n\ndef b(outputs):\n    return 1\n"
    result = one(runner, source)
    assert result.status is Status.ERROR
    assert result.error is not None and "`a`" in result.error and "--entry" in result.error
    chosen = run(runner, source, entry="b")[0]
    assert (chosen.status, chosen.score) == (Status.OK, 1)


def test_okareo_checks_unchanged(runner: SandboxRunner) -> None:
    result = one(
        runner,
        "def evaluate(model_output, scenario_result):\n"
        "    return model_output == scenario_result\n",
    )
    assert (result.status, result.score, result.passed, result.metadata) == (
        Status.OK,
        True,
        None,
        None,
    )


def test_python_api_takes_format_rows_and_an_entry(docker_settings: Settings) -> None:
    import engine

    source = (
        "def a(output, context):\n    return False\n\n"
        "def b(output, context):\n    return context['vars']['ok']\n"
    )
    results = engine.run_check(
        source, [{"model_output": "x", "vars": {"ok": True}}], settings=docker_settings, entry="b"
    )
    assert (results[0].status, results[0].score, results[0].passed) == (Status.OK, True, True)
