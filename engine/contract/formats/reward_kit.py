"""reward-kit / Fireworks / eval-protocol reward functions: a ``@reward_function`` taking
``messages``, ``ground_truth`` and ``**kwargs``, returning an ``EvaluateResult``. Carried
into the sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.keywords import bind_keywords, configured_values
from engine.contract.formats.results import (
    field_of,
    finish,
    jsonable,
    refuse_none,
    sub_scores,
)
from engine.contract.formats.rows import messages_of
from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import (
    Arguments,
    Format,
    FormatAdapter,
    FormatSpec,
    MessageFactory,
)
from engine.contract.returns import InvalidScore, Score
from engine.contract.statuses import OutputType

SPEC = FormatSpec(
    Format.REWARD_KIT,
    "reward-kit / Fireworks / eval-protocol reward function",
    (),
    {
        "messages": "the row's messages, else [user: scenario_input, assistant: "
        "model_output] leaving out what the row lacks (Message objects when "
        "annotated List[Message])",
        "ground_truth": "the row's ground_truth, else its scenario_result",
        "**kwargs": "nothing: scorebox rows carry no extra fields (never scorebox's "
        "own parameter names)",
        "other keyword parameters": "the check's configuration (its key of that "
        "name), else their default",
    },
    (
        "EvaluateResult(score, reason, metrics)",
        '{"score", "reason"|"reasoning"?, "metrics"?, ...} (other keys -> metadata)',
        "a bare number (real reward-kit refuses it)",
    ),
    (
        "a bare float is accepted (reward-kit refuses it)",
        "metrics (MetricResult score, reason, is_score_valid) are kept as sub-scores "
        "in the result's metadata",
    ),
    decorator="reward_function",
    needs_var_keyword=True,
    async_entry=True,
    configured_by_keyword=True,
    standard_policy=True,
    example=(
        "from reward_kit import EvaluateResult, MetricResult, reward_function\n\n\n"
        "@reward_function\n"
        "def exact(messages, ground_truth=None, **kwargs):\n"
        '    reply = messages[-1]["content"]\n'
        "    ok = reply.strip() == str(ground_truth).strip()\n"
        "    return EvaluateResult(\n"
        '        score=1.0 if ok else 0.0, reason="exact match" if ok else "differs",\n'
        '        metrics={"exact": MetricResult(score=float(ok), reason="compared")},\n'
        "    )\n"
    ),
)


def fits(shape: FunctionShape) -> bool:
    """Any function marked ``@reward_function`` (its parameters are checked by binding)."""
    return not shape.var_positional and SPEC.decorator in shape.decorators


def bind(
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """``messages`` and ``ground_truth`` from the row; other keyword parameters and
    ``**kwargs`` from the check's configuration, as reward-kit hands the caller's keywords on.
    ``message`` turns the messages into ``Message`` objects for a ``List[Message]``."""
    truth = row.get("ground_truth")
    values = {
        "messages": messages_of(row),
        "ground_truth": row.get("scenario_result") if truth is None else truth,
    }
    kwargs = bind_keywords(SPEC, shape, values, config)
    for param in shape.params:
        if param.name == "messages" and message is not None and "Message" in param.annotation:
            kwargs["messages"] = [
                message(m) if isinstance(m, dict) else m for m in kwargs[param.name]
            ]
    if shape.var_keyword:
        configured = configured_values(SPEC, config)
        kwargs.update({k: v for k, v in configured.items() if k not in kwargs})
    return [], kwargs


def coerce(value: Any, expected: OutputType | None = None) -> Score:
    """An ``EvaluateResult`` (or its dict, or a bare number) as a Score; metrics become
    sub-scores, other keys metadata."""
    refuse_none(SPEC, value)
    if isinstance(value, bool | int | float):
        return finish(value, expected)
    if not isinstance(value, Mapping) and type(value).__name__ != "EvaluateResult":
        raise InvalidScore(
            f"a reward function returns EvaluateResult or a dict with score, got "
            f"{type(value).__name__}"
        )
    score = field_of(value, "score")
    if score is None:
        raise InvalidScore('a reward function\'s result needs "score"')
    reason = field_of(value, "reason")
    if reason is None:
        reason = field_of(value, "reasoning")
    return finish(score, expected, explanation=reason, metadata=_metadata(value))


def _metadata(value: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    metrics = field_of(value, "metrics")
    if metrics:
        if not isinstance(metrics, Mapping):
            raise InvalidScore(
                f"metrics must be a dict of MetricResult, got {type(metrics).__name__}"
            )
        metadata["sub_scores"] = sub_scores(metrics)
    if isinstance(value, Mapping):
        skip = {"score", "reason", "reasoning", "metrics"}
        metadata.update({str(k): jsonable(v) for k, v in value.items() if k not in skip})
    else:
        for key in ("is_score_valid", "error"):
            if field_of(value, key) is not None and field_of(value, key) is not True:
                metadata[key] = jsonable(field_of(value, key))
    return metadata


ADAPTER = FormatAdapter(SPEC, fits=fits, bind=bind, coerce=coerce)
