"""LangSmith custom evaluators: a function taking ``inputs``/``outputs``/
``reference_outputs``/``run``/``example`` by name, returning a number, ``{"key", "score"}``
or several of them. Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.keywords import bind_keywords
from engine.contract.formats.results import field_of, finish, jsonable, refuse_none
from engine.contract.formats.rows import Record, as_dict, expected_of, output_of
from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import (
    Arguments,
    Format,
    FormatAdapter,
    FormatSpec,
    MessageFactory,
    fits_by_keywords,
)
from engine.contract.returns import InvalidScore, Score
from engine.contract.statuses import OutputType

SPEC = FormatSpec(
    Format.LANGSMITH,
    "LangSmith custom evaluator",
    (),
    {
        "inputs": 'the row\'s scenario_input when a dict, else {"input": it}',
        "outputs": "the row's output (else model_output parsed when a JSON object, "
        'array or number) when a dict, else {"output": it}',
        "reference_outputs": 'scenario_result when a dict, else {"output": it}',
        "run": '{"inputs", "outputs"}',
        "example": '{"inputs", "outputs": reference_outputs, "metadata"}',
    },
    (
        "bool or a number",
        '{"key", "score", "comment"?}',
        'a list of those, or {"results": [...]} (several metrics: each a named '
        "sub-score, the score is their mean)",
    ),
    async_entry=True,
    structured_output=True,
    guess_rank=1,
    guessable=True,
    example=(
        "def correct(outputs: dict, reference_outputs: dict) -> dict:\n"
        '    ok = outputs["output"] == reference_outputs["output"]\n'
        '    return {"key": "correct", "score": ok, "comment": "exact"}\n'
    ),
)


def fits(shape: FunctionShape) -> bool:
    """Required parameters among the names above."""
    return fits_by_keywords(SPEC, shape)


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """Each parameter by its name; ``run`` and ``example`` as records with attributes."""
    inputs = as_dict(row.get("scenario_input"), "input")
    outputs = as_dict(output_of(row), "output")
    reference = as_dict(expected_of(row), "output")
    values = {
        "inputs": inputs,
        "outputs": outputs,
        "reference_outputs": reference,
        "run": Record(inputs=inputs, outputs=outputs),
        "example": Record(inputs=inputs, outputs=reference, metadata=row.get("metadata") or {}),
    }
    return [], bind_keywords(SPEC, shape, values, config)


def coerce(value: Any, expected: OutputType | None = None) -> Score:
    """A number, ``{"key", "score", "comment"}``, ``{"metric_name": score}``, or a list of
    results (or ``{"results": [...]}``): their mean, each a named sub-score."""
    refuse_none(SPEC, value)
    return _coerce(value, expected)


def _metric_named(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """LangSmith's uploaded code evaluators return ``{"metric_name": score, "comment"?}``:
    as ``{"key": "metric_name", "score": score, "comment"}``."""
    named = [k for k in value if k not in {"comment", "key", "value", "results"}]
    if len(named) == 1 and isinstance(value[named[0]], bool | int | float):
        return {"key": named[0], "score": value[named[0]]} | (
            {"comment": value["comment"]} if "comment" in value else {}
        )
    return value


def _coerce(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, Mapping) and "results" in value:
        value = value["results"]  # LangSmith's {"results": [...]}: several metrics
    if isinstance(value, list):
        return _several(value, expected)
    if isinstance(value, Mapping) and "score" not in value:
        value = _metric_named(value)
    if isinstance(value, Mapping) or type(value).__name__ == "EvaluationResult":
        return _keyed(value, expected)
    return finish(value, expected, passed=value if isinstance(value, bool) else None)


def _several(value: list[Any], expected: OutputType | None) -> Score:
    if not value:
        raise InvalidScore("the evaluator returned an empty list of results")
    parts = [_coerce(v, None) for v in value]
    keys = [field_of(v, "key") or f"score_{i}" for i, v in enumerate(value)]
    subs = {
        str(k): {"score": p.score}
        | ({"comment": p.explanation} if p.explanation is not None else {})
        for k, p in zip(keys, parts, strict=True)
    }
    mean = sum(float(p.score) for p in parts) / len(parts)
    return finish(mean, expected, metadata={"sub_scores": subs})


def _keyed(value: Any, expected: OutputType | None) -> Score:
    score = field_of(value, "score")
    if score is None:
        raise InvalidScore('a LangSmith result needs "score" (and "key", "comment")')
    if isinstance(value, Mapping):
        extra = {k: jsonable(v) for k, v in value.items() if k not in {"score", "comment"}}
    else:
        extra = {"key": jsonable(field_of(value, "key"))} if field_of(value, "key") else {}
    return finish(
        score, expected, explanation=field_of(value, "comment"),
        passed=score if isinstance(score, bool) else None, metadata=extra,
    )  # fmt: skip


ADAPTER = FormatAdapter(SPEC, fits=fits, bind=bind, coerce=coerce)
