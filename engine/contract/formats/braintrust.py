"""Braintrust code scorers and Phoenix code evaluators (they bind the same names): a
function taking ``input``/``output``/``expected``... by name, returning a number, a score
object, a list of them or ``(score, label)``; ``None`` skips the row. Carried into the
sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.keywords import bind_keywords
from engine.contract.formats.results import field_of, finish, jsonable, refuse_none
from engine.contract.formats.rows import expected_of, output_of
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
    Format.BRAINTRUST,
    "Braintrust code scorer / Phoenix code evaluator",
    ("handler",),
    {
        "input": "the row's scenario_input",
        "output": "the row's output, else model_output parsed when it is a JSON "
        "object, array or number",
        "expected": "the row's scenario_result (else ground_truth)",
        "reference": "the same as expected (Phoenix's alias)",
        "metadata": "the row's metadata",
        "example": '{"input", "output": expected, "metadata"}',
    },
    (
        "bool or a number",
        '{"score", "name"?, "metadata"?} or {"score", "label", "explanation"}',
        "a list of those (several named scores; the score is their mean)",
        "(score, label[, explanation])",
        "EvaluationResult(score, label, explanation)",
    ),
    (
        "numbers outside 0..1 are accepted (Phoenix accepts them, Braintrust does not)",
        "a label alone (no score) is invalid_score: scorebox keeps a score per row",
        "None skips the row (status skipped), as Braintrust does",
    ),
    #: Phoenix's decorator marking an evaluator (``phoenix.experiments.evaluators``).
    marker="create_evaluator",
    none_skips=True,
    async_entry=True,
    structured_output=True,
    configured_by_keyword=True,
    name_decides=False,
    guess_rank=0,
    guessable=True,
    example=(
        "def handler(input, output, expected):\n"
        '    return {"name": "exact", "score": 1.0 if output == expected else 0.0}\n'
    ),
)


def fits(shape: FunctionShape) -> bool:
    """Required parameters among the names above."""
    return fits_by_keywords(SPEC, shape)


def lone_output(shape: FunctionShape) -> bool:
    """Phoenix binds a one-parameter evaluator whose name it does not know to the output."""
    if len(shape.params) != 1 or shape.var_positional:
        return False
    return shape.params[0].name not in SPEC.parameters


def loose_fit(shape: FunctionShape, explicit: bool) -> bool:
    """A one-parameter entry named at upload (or called ``handler``) takes the output."""
    return (explicit or shape.name in SPEC.entry_names) and lone_output(shape)


def own_bindings(shape: FunctionShape) -> dict[str, str] | None:
    """The lone parameter's binding (:func:`lone_output`), else None (bound by name)."""
    if not lone_output(shape):
        return None
    meaning = SPEC.parameters["output"] + " (Phoenix binds a one-parameter evaluator to the output)"
    return {shape.params[0].name: meaning}


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """Each parameter by its name (a lone unknown one gets the output); other keyword
    parameters from the check's configuration."""
    if lone_output(shape):
        return [], {shape.params[0].name: output_of(row)}
    metadata = row.get("metadata") or {}
    expected = expected_of(row)
    values = {
        "input": row.get("scenario_input"),
        "output": output_of(row),
        "expected": expected,
        "reference": expected,
        "metadata": metadata,
        "example": {"input": row.get("scenario_input"), "output": expected, "metadata": metadata},
    }
    return [], bind_keywords(SPEC, shape, values, config)


def skips(value: Any) -> bool:
    """``None``, or a ``Score`` / ``{"score": None}`` without a score, skips the row."""
    if value is None:
        return True
    if isinstance(value, Mapping):
        return "score" in value and value["score"] is None
    return type(value).__name__ == "Score" and getattr(value, "score", 0) is None


def coerce(value: Any, expected: OutputType | None = None) -> Score:
    """A number, ``(score, label[, explanation])``, a score object or a list of them (their
    mean, each a named sub-score); a label alone is refused."""
    refuse_none(SPEC, value)
    return _coerce(value, expected)


def _coerce(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, bool | int | float):
        return finish(value, expected, passed=value if isinstance(value, bool) else None)
    if isinstance(value, str):
        raise InvalidScore(
            f"the evaluator returned only the label {value[:80]!r}: return (score, label) or "
            '{"score", "label"}, since scorebox keeps a score per row'
        )
    if isinstance(value, tuple):
        return _tuple(value, expected)
    if isinstance(value, list):
        return _several(value, expected)
    if isinstance(value, Mapping) or type(value).__name__ in {"EvaluationResult", "Score"}:
        return _scored(value, expected)
    raise InvalidScore(
        f"a scorer returns a number, a dict with score, or a list of them; got "
        f"{type(value).__name__}"
    )


def _tuple(value: tuple[Any, ...], expected: OutputType | None) -> Score:
    if not 2 <= len(value) <= 3:
        raise InvalidScore(
            f"a tuple result is (score, label[, explanation]); got {len(value)} items"
        )
    label = value[1]
    return finish(
        value[0], expected, explanation=value[2] if len(value) == 3 else None,
        metadata={"label": jsonable(label)} if label is not None else None,
    )  # fmt: skip


def _several(value: list[Any], expected: OutputType | None) -> Score:
    if not value:
        raise InvalidScore("the scorer returned an empty list of scores")
    parts = [_coerce(v, None) for v in value]
    names = [field_of(v, "name") or f"score_{i}" for i, v in enumerate(value)]
    mean = sum(float(p.score) for p in parts) / len(parts)
    subs = {
        str(n): {"score": p.score} | (p.metadata or {}) for n, p in zip(names, parts, strict=True)
    }
    return finish(mean, expected, metadata={"sub_scores": subs})


def _scored(value: Any, expected: OutputType | None) -> Score:
    score = field_of(value, "score")
    if score is None:
        raise InvalidScore(
            "the evaluator's result has no score: return a number with the label, "
            "since scorebox keeps a score per row"
        )
    metadata = {}
    for key in ("name", "label"):
        if field_of(value, key) is not None:
            metadata[key] = jsonable(field_of(value, key))
    extra = field_of(value, "metadata")
    if isinstance(extra, Mapping):
        metadata.update({str(k): jsonable(v) for k, v in extra.items()})
    return finish(score, expected, explanation=field_of(value, "explanation"), metadata=metadata)


ADAPTER = FormatAdapter(
    SPEC,
    fits=fits,
    bind=bind,
    coerce=coerce,
    skips=skips,
    loose_fit=loose_fit,
    own_bindings=own_bindings,
)
