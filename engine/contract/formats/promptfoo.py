"""promptfoo python assertions: ``get_assert(output, context)`` returning a bool, a number
or a ``GradingResult``. Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.results import finish, jsonable, refuse_none, sub_scores
from engine.contract.formats.rows import output_of
from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import (
    Arguments,
    Format,
    FormatAdapter,
    FormatSpec,
    MessageFactory,
    fits_positionally,
)
from engine.contract.returns import InvalidScore, Score, coerce_score
from engine.contract.statuses import OutputType

SPEC = FormatSpec(
    Format.PROMPTFOO,
    "promptfoo python assertion",
    ("get_assert",),
    {
        "output": "the row's output, else model_output parsed when it is a JSON "
        "object, array or number",
        "context": '{"prompt": scenario_input, "vars": the row\'s vars (else its '
        'metadata), "test": {"vars", "metadata"}, "config": the check\'s '
        'configuration, "metadata"}',
    },
    (
        "bool",
        "a number (pass = score > 0)",
        'GradingResult {"pass", "score", "reason", "namedScores"?, '
        '"componentResults"?} (snake_case accepted)',
    ),
    ("a GradingResult without pass, score or reason is invalid_score",),
    positional=2,
    pass_flag=True,
    async_entry=True,
    structured_output=True,
    guessable=True,
    example=(
        "def get_assert(output, context):\n"
        '    ok = context["vars"]["expected"] in output\n'
        '    return {"pass": ok, "score": 1.0 if ok else 0.0, "reason": "substring"}\n'
    ),
)


def fits(shape: FunctionShape) -> bool:
    """Two required parameters, any names."""
    return fits_positionally(SPEC, shape)


def loose_fit(shape: FunctionShape, explicit: bool) -> bool:
    """promptfoo's ``file://x.py:fn`` takes any function of two parameters, whatever their
    names: an entry named at upload that fits no format by its names is this one."""
    return explicit and fits(shape)


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """``(output, context)``, the context as promptfoo builds it from the test case."""
    metadata = row.get("metadata") or {}
    variables = row.get("vars")
    if variables is None:
        variables = metadata
    context = {
        "prompt": row.get("scenario_input"),
        "vars": variables,
        "test": {"vars": variables, "metadata": metadata},
        "config": dict(config or {}),
        "metadata": metadata,
    }
    return [output_of(row), context], {}


def coerce(value: Any, expected: OutputType | None = None) -> Score:
    """A bool (the pass flag), a number (pass = score > 0) or a complete GradingResult."""
    refuse_none(SPEC, value)
    if isinstance(value, bool):
        return finish(value, expected, passed=value)
    if isinstance(value, int | float):
        score = coerce_score(value, expected)
        return finish(score.score, expected, passed=float(score.score) > 0)
    if not isinstance(value, Mapping):
        raise InvalidScore(
            f"a promptfoo assertion returns bool, a number or a GradingResult dict, got "
            f"{type(value).__name__}"
        )
    lacking = [k for k in ("pass", "score", "reason") if k not in value]
    if lacking:
        raise InvalidScore(
            f"a GradingResult needs pass, score and reason; it lacks {', '.join(lacking)}"
        )
    return finish(
        value["score"], expected, explanation=value["reason"], passed=value["pass"],
        metadata=_metadata(value),
    )  # fmt: skip


def _metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    named = value.get("namedScores", value.get("named_scores"))
    if named:
        metadata["sub_scores"] = sub_scores(named)
    components = value.get("componentResults", value.get("component_results"))
    if components:
        metadata["component_results"] = jsonable(components)
    skip = {"pass", "score", "reason", "namedScores", "named_scores"}
    skip |= {"componentResults", "component_results"}
    metadata.update({str(k): jsonable(v) for k, v in value.items() if k not in skip})
    return metadata


ADAPTER = FormatAdapter(SPEC, fits=fits, bind=bind, coerce=coerce, loose_fit=loose_fit)
