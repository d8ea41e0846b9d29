"""Scorer files as their tools' users publish them, run unchanged in the sandbox (runc, runsc).

Async entries, structured outputs, Phoenix's one-argument binding, LangSmith's several
metrics, a check version's configuration, and the tools' own modules (the image's
stand-ins: reward_kit's submodules, eval_protocol, langsmith, phoenix, braintrust).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from tests.integration.conftest import FAST

pytestmark = pytest.mark.docker

ROW: dict[str, Any] = {
    "model_output": "Paris",
    "scenario_input": "Capital of France?",
    "scenario_result": "Paris",
}


def run(
    runner: SandboxRunner,
    source: str,
    rows: list[dict[str, Any]] | None = None,
    *,
    entry: str | None = None,
    config: dict[str, Any] | None = None,
    limits: Limits = FAST,
) -> list[RowResult]:
    check = CodeCheck(source=textwrap.dedent(source), entry=entry, config=config)
    return runner.run_check(check, rows or [ROW], limits)


# -- async entries -------------------------------------------------------------------------


def test_async_entries_run_to_completion_in_each_format(runner: SandboxRunner) -> None:
    braintrust = """
    import asyncio

    async def exact(output, expected):
        await asyncio.sleep(0.01)
        return 1.0 if output == expected else 0.0
    """
    langsmith = """
    import asyncio

    async def correct(outputs: dict, reference_outputs: dict) -> dict:
        await asyncio.sleep(0)
        return {"key": "correct", "score": outputs["output"] == reference_outputs["output"]}
    """
    promptfoo = """
    async def get_assert(output, context):
        return {"pass": output == "Paris", "score": 0.5, "reason": "awaited"}
    """
    reward_kit = """
    from eval_protocol import EvaluateResult, reward_function

    @reward_function
    async def judged(messages, ground_truth=None, **kwargs):
        return EvaluateResult(score=0.25, reason=messages[-1]["content"])
    """
    rows = [ROW, {**ROW, "model_output": "Lyon"}]
    assert [r.score for r in run(runner, braintrust, rows)] == [1.0, 0.0]
    assert [(r.score, r.passed) for r in run(runner, langsmith, rows)] == [
        (True, True),
        (False, False),
    ]
    [result] = run(runner, promptfoo)
    assert (result.status, result.score, result.passed, result.explanation) == (
        Status.OK,
        0.5,
        True,
        "awaited",
    )
    [result] = run(runner, reward_kit)
    assert (result.status, result.score, result.explanation) == (Status.OK, 0.25, "Paris")


def test_an_async_entry_that_never_finishes_is_a_timeout(runner: SandboxRunner) -> None:
    source = """
    import asyncio

    async def handler(output):
        await asyncio.sleep(3600)
    """
    limits = Limits(row_timeout_seconds=0.5, wall_seconds_max=60)
    results = run(runner, source, [ROW, {**ROW, "model_output": "x"}], limits=limits)
    assert results[0].status is Status.TIMEOUT, results[0].error


def test_an_async_grader_is_refused_naming_the_fix(runner: SandboxRunner) -> None:
    [result] = run(runner, "async def grade(sample, item):\n    return 1.0\n")
    assert result.status is Status.ERROR
    assert "async def" in (result.error or "") and "plain `def`" in (result.error or "")


# -- structured outputs --------------------------------------------------------------------


def test_structured_outputs_reach_the_formats_that_pass_them(runner: SandboxRunner) -> None:
    braintrust = """
    def rows_ok(output, expected):
        return 1.0 if len(output["rows"]) == int(expected) else 0.0
    """
    rows: list[dict[str, Any]] = [
        {"model_output": "ignored", "output": {"rows": [1, 2]}, "scenario_result": "2"},
        {"model_output": '{"rows": [1, 2, 3]}', "scenario_result": "2"},
    ]
    assert [r.score for r in run(runner, braintrust, rows)] == [1.0, 0.0]
    number = """
    def under_limit(output):
        return output <= 100
    """
    results = run(runner, number, [{"model_output": "42"}, {"model_output": "420"}])
    assert [(r.status, r.score) for r in results] == [(Status.OK, True), (Status.OK, False)]
    promptfoo = """
    def get_assert(output, context):
        ok = isinstance(output, list) and output[0] == "a"
        return {"pass": ok, "score": float(ok), "reason": type(output).__name__}
    """
    [result] = run(runner, promptfoo, [{"model_output": '["a", "b"]'}])
    assert (result.passed, result.explanation) == (True, "list")
    langsmith = """
    def total(outputs):
        return outputs["output"] * 2
    """
    [result] = run(runner, langsmith, [{"model_output": "x", "output": 21}])
    assert (result.status, result.score) == (Status.OK, 42)


def test_okareo_still_receives_the_string(runner: SandboxRunner) -> None:
    source = """
    def evaluate(model_output: str) -> bool:
        return isinstance(model_output, str) and model_output == "42"
    """
    [result] = run(runner, source, [{"model_output": "42", "output": 42}])
    assert (result.status, result.score) == (Status.OK, True)


# -- Phoenix's one-argument binding, LangSmith's several metrics ---------------------------


def test_phoenix_one_argument_evaluator_gets_the_output(runner: SandboxRunner) -> None:
    source = """
    from phoenix.experiments.evaluators import create_evaluator
    from phoenix.experiments.types import EvaluationResult

    @create_evaluator(name="short", kind="CODE")
    def short_enough(text):
        return EvaluationResult(score=float(len(text) <= 5), label=str(len(text)))
    """
    results = run(runner, source, [ROW, {"model_output": "Paris, France"}])
    assert [(r.status, r.score) for r in results] == [(Status.OK, 1.0), (Status.OK, 0.0)]
    assert results[1].metadata == {"label": "13"}


def test_langsmith_lists_and_results_are_named_sub_scores(runner: SandboxRunner) -> None:
    as_list = """
    def checks(outputs, reference_outputs):
        out = outputs["output"]
        return [
            {"key": "exact", "score": out == reference_outputs["output"]},
            {"key": "short", "score": 0.5, "comment": "half"},
        ]
    """
    [result] = run(runner, as_list)
    assert (result.status, result.score) == (Status.OK, 0.75)
    assert result.metadata == {
        "sub_scores": {"exact": {"score": True}, "short": {"score": 0.5, "comment": "half"}}
    }
    as_results = """
    from langsmith.evaluation import EvaluationResult

    def checks(run, example):
        same = run.outputs["output"] == example.outputs["output"]
        return {"results": [
            EvaluationResult(key="same", score=int(same)),
            EvaluationResult(key="never", score=0),
        ]}
    """
    [result] = run(runner, as_results)
    assert (result.status, result.score) == (Status.OK, 0.5)
    assert result.metadata == {"sub_scores": {"same": {"score": 1}, "never": {"score": 0}}}


# -- configuration -------------------------------------------------------------------------


def test_configuration_reaches_each_format(runner: SandboxRunner) -> None:
    promptfoo = """
    def get_assert(output, context):
        banned = context["config"].get("banned", [])
        ok = not any(word in output for word in banned)
        return {"pass": ok, "score": float(ok), "reason": ",".join(banned)}
    """
    [result] = run(runner, promptfoo, config={"banned": ["Par"]})
    assert (result.passed, result.explanation) == (False, "Par")
    [result] = run(runner, promptfoo)
    assert (result.passed, result.explanation) == (True, "")
    braintrust = """
    def long_enough(output, minimum=100):
        return 1.0 if len(output) >= minimum else 0.0
    """
    assert run(runner, braintrust, config={"minimum": 3})[0].score == 1.0
    assert run(runner, braintrust)[0].score == 0.0
    reward = """
    from reward_kit import reward_function

    @reward_function
    def weighted(messages, ground_truth=None, weight=1.0, **kwargs):
        return {"score": weight, "reason": ",".join(sorted(kwargs))}
    """
    [result] = run(runner, reward, config={"weight": 0.3, "mode": "strict"})
    assert (result.score, result.explanation) == (0.3, "mode")


# -- the tools' own modules ----------------------------------------------------------------


def test_reward_kit_submodules_and_eval_protocol_load(runner: SandboxRunner) -> None:
    source = """
    from reward_kit.models import EvaluateResult, MetricResult, StepOutput
    from reward_kit.typed_interface import reward_function

    @reward_function
    def stepped(messages, **kwargs):
        steps = [StepOutput(step_index=0, base_reward=0.5)]
        metric = MetricResult(score=1.0, reason="ok")
        return EvaluateResult(score=0.5, metrics={"m": metric}, step_outputs=steps)
    """
    [result] = run(runner, source)
    assert (result.status, result.score) == (Status.OK, 0.5), result.error
    successor = """
    from eval_protocol.models import EvaluateResult, MetricResult
    from eval_protocol.typed_interface import reward_function

    @reward_function
    def scored(messages, ground_truth=None, **kwargs):
        metric = MetricResult(score=3.0, reason="raw count", data={"n": 3})
        return EvaluateResult(score=1.0, metrics={"count": metric})
    """
    [result] = run(runner, successor)
    assert (result.status, result.score) == (Status.OK, 1.0), result.error
    metric = {"score": 3.0, "reason": "raw count", "is_score_valid": True, "data": {"n": 3}}
    assert result.metadata == {"sub_scores": {"count": metric}}


def test_langsmith_wrappers_and_braintrust_score(runner: SandboxRunner) -> None:
    source = """
    from langsmith import traceable, wrappers

    client = wrappers.wrap_openai(object())

    @traceable
    def exact(outputs, reference_outputs):
        return outputs["output"] == reference_outputs["output"]
    """
    [result] = run(runner, source)
    assert (result.status, result.score) == (Status.OK, True), result.error
    scorer = """
    from braintrust import Score

    def handler(output, expected):
        if expected is None:
            return Score(name="exact", score=None)
        return Score(name="exact", score=float(output == expected), metadata={"n": 1})
    """
    results = run(runner, scorer, [ROW, {"model_output": "Paris"}])
    assert (results[0].status, results[0].score) == (Status.OK, 1.0)
    assert results[0].metadata == {"name": "exact", "n": 1}
    assert results[1].status is Status.SKIPPED
