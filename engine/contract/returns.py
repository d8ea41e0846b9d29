"""What a check returns, coerced to a score, a pass flag, an explanation and metadata.

Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.contract.statuses import INT_MAX, INT_MIN, MAX_EXPLANATION_CHARS, OutputType


class InvalidScore(ValueError):
    """A check returned something that is not an acceptable score."""


@dataclass(frozen=True)
class Score:
    """A coerced check result."""

    score: bool | int | float
    output_type: OutputType
    explanation: str | None = None
    metadata: dict[str, Any] | None = None
    #: The format's own pass flag (promptfoo ``pass``, a bool score), or None.
    passed: bool | None = None


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def _plain_scalar(value: Any) -> Any:
    """numpy (and similar) scalars to the Python value they hold; others unchanged."""
    module = type(value).__module__ or ""
    if (
        module.split(".")[0] == "numpy"
        and hasattr(value, "item")
        and getattr(value, "ndim", 1) == 0
    ):
        return value.item()
    return value


#: Scores of exactly these types are the common case: nothing to unwrap or convert.
_PLAIN_SCORE_TYPES = frozenset({bool, int, float})


def _unwrap(value: Any) -> tuple[Any, Any, Any]:
    """A ``(score, explanation)`` tuple, a ``CheckResponse`` or a score mapping to its
    score, explanation and metadata; the score made a plain Python scalar."""
    explanation: Any = None
    metadata: Any = None
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidScore(
                f"a tuple result must be (score, explanation); got {len(value)} items"
            )
        value, explanation = value
    elif type(value).__name__ == "CheckResponse" and hasattr(value, "score"):
        explanation = getattr(value, "explanation", None)
        metadata = getattr(value, "metadata", None)
        value = value.score
    elif (
        isinstance(value, Mapping)
        and "score" in value
        and set(value)
        <= {
            "score",
            "explanation",
            "metadata",
        }
    ):
        explanation = value.get("explanation")
        metadata = value.get("metadata")
        value = value["score"]
    return _plain_scalar(value), explanation, metadata


def _widened(
    value: bool | int | float, actual: OutputType, expected: OutputType
) -> tuple[float, OutputType]:
    """A score of another type than ``expected``: an int widened to the float expected,
    anything else refused."""
    if expected is OutputType.FLOAT and actual is OutputType.INT:
        return float(value), OutputType.FLOAT
    raise InvalidScore(f"expected a {expected.value} score, got {_describe(value)}")


def _annotated(
    value: bool | int | float, actual: OutputType, explanation: Any, metadata: Any
) -> Score:
    """The score with its explanation (made text, cut to length) and metadata (a dict)."""
    if explanation is not None and not isinstance(explanation, str):
        explanation = str(explanation)
    if explanation is not None and len(explanation) > MAX_EXPLANATION_CHARS:
        explanation = explanation[: MAX_EXPLANATION_CHARS - 3] + "..."
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidScore(f"CheckResponse.metadata must be a dict, got {_describe(metadata)}")
    return Score(value, actual, explanation, metadata)


def coerce_score(value: Any, expected: OutputType | None = None) -> Score:
    """Turn what ``evaluate`` returned into a :class:`Score`, or raise :class:`InvalidScore`.

    ``bool`` is recognised before ``int``. An ``int`` is accepted where ``float``
    is expected (widened); nothing else changes type. NaN, infinities and ints
    outside the signed 64-bit range are invalid.
    """
    explanation: Any = None
    metadata: Any = None
    # Runs once a row in the container: a plain bool, int or float takes no helper call.
    if type(value) not in _PLAIN_SCORE_TYPES:
        value, explanation, metadata = _unwrap(value)
    if isinstance(value, bool):
        actual = OutputType.BOOL
    elif isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise InvalidScore(f"int score {value} is outside the signed 64-bit range")
        actual = OutputType.INT
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidScore(f"score must be a finite number, got {value!r}")
        actual = OutputType.FLOAT
    else:
        raise InvalidScore(f"score must be bool, int or float, got {_describe(value)}")

    if expected is not None and actual is not expected:
        value, actual = _widened(value, actual, expected)
    if explanation is None and metadata is None:
        return Score(value, actual)
    return _annotated(value, actual, explanation, metadata)
