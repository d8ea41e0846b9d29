"""``phoenix.experiments.types``, as a stand-in: an evaluator's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EvaluationResult"]


@dataclass(frozen=True)
class EvaluationResult:
    """A score, a label and an explanation (any of them may be absent)."""

    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
