"""Judging an attempt against the labelled examples: each result agrees or not, the best
attempt is chosen, and the outcome is said in one message. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from engine.contract import OutputType, Status
from engine.errors import InvalidRequestError
from engine.models import Row, RowResult
from generator.models import Agreement, Attempt, Example, ExampleResult
from generator.prompts import GenerationSpec, feedback_problems


def agrees(expected: bool | int | float, result: RowResult, tolerance: float = 1e-6) -> bool:
    """Whether a row result matches the expected score.

    bool: equality (a bool score); int: equality (not a bool); float: within ``tolerance``.
    Any status other than ``ok`` disagrees.
    """
    score = result.score
    if result.status is not Status.OK or score is None:
        return False
    if isinstance(expected, bool):
        return isinstance(score, bool) and score is expected
    if isinstance(score, bool):
        return False
    if isinstance(expected, int):
        return score == expected
    return math.isclose(float(score), expected, rel_tol=0.0, abs_tol=tolerance)


def check_examples(examples: Sequence[Example], output_type: OutputType) -> None:
    for i, example in enumerate(examples):
        value = example.expected
        ok = (
            isinstance(value, bool)
            if output_type is OutputType.BOOL
            else (not isinstance(value, bool) and isinstance(value, int))
            if output_type is OutputType.INT
            else not isinstance(value, bool)
        )
        if not ok:
            raise InvalidRequestError(
                f"example {i + 1}: expected {value!r} is not a {output_type.value} score"
            )


def smoke_row(spec: GenerationSpec) -> Row:
    """A row to prove a check runs when no examples are given."""
    return Row(
        model_output="The capital of France is Paris.",
        scenario_input="What is the capital of France?" if spec.requires_scenario_input else None,
        scenario_result="Paris" if spec.requires_scenario_result else None,
    )


def with_results(
    attempt: Attempt, examples: Sequence[Example], results: Sequence[RowResult], tolerance: float
) -> Attempt:
    """The attempt with each example's result (and the smoke row's, past the examples):
    agreed or not, how many agreed, and accepted when every one did."""
    out: list[ExampleResult] = []
    for index, result in enumerate(results):
        if index < len(examples):
            expected = examples[index].expected
            agreed = agrees(expected, result, tolerance)
        else:  # the smoke row: it only has to run
            expected, agreed = False, result.status is Status.OK
        out.append(
            ExampleResult(
                index=index,
                expected=expected,
                status=result.status,
                score=result.score,
                error=result.error,
                agreed=agreed,
            )
        )
    passed = sum(r.agreed for r in out[: len(examples)])
    accepted = all(r.agreed for r in out) and len(out) >= len(examples)
    return attempt.model_copy(
        update={
            "example_results": out,
            "agreement": Agreement(passed=passed, total=len(examples)),
            "accepted": accepted,
        }
    )


def rank(attempt: Attempt) -> tuple[bool, bool, int, int, int]:
    report = attempt.report
    errors = len(report.errors) if report is not None else 1_000_000
    has_check = attempt.code is not None or attempt.prompt_template is not None
    return (
        has_check,
        report is not None and report.valid,
        attempt.agreement.passed,
        -errors,
        attempt.n,
    )


def summary(best: Attempt | None, attempts: Sequence[Attempt], spec: GenerationSpec) -> str:
    what = "template" if spec.kind == "model" else "check"
    if best is None:
        return f"no usable {what} in {len(attempts)} attempts: every reply was unusable"
    total = best.agreement.total
    if best.accepted:
        parts = [f"accepted on attempt {best.n} of {len(attempts)}: the {what} validates"]
        if spec.kind == "code":
            parts[0] += " under the restricted policy"
        if total:
            parts.append(f"agrees with all {total} examples")
        elif spec.kind == "model" and spec.examples:
            parts.append("examples not evaluated (LLM-judged checks are not available)")
        return "; ".join(parts) + "."
    report = best.report
    errors = len(report.errors) if report else 0
    state = (
        "validates"
        if report is not None and report.valid
        else f"fails validation ({errors} {'error' if errors == 1 else 'errors'})"
    )
    wrong = feedback_problems(best.feedback) if best.feedback else (best.error or "")
    tries = f"{len(attempts)} attempt" + ("" if len(attempts) == 1 else "s")
    return (
        f"not accepted after {tries}; best is attempt {best.n}: it {state} and "
        f"agrees with {best.agreement.passed} of {total} examples. What is still wrong:\n"
        f"{wrong}"
    )
