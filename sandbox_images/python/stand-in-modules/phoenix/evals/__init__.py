"""``phoenix.evals`` (arize-phoenix-evals 3.9), as a stand-in: ``create_evaluator`` and ``Score``.

The decorator returns the function unchanged; scorebox binds its parameters by name
(``input``, ``output``, ``expected``, ``metadata``). A check that needs the LLM
classifiers or ``evaluate()`` declares the real distribution, ``arize-phoenix-evals``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Score", "create_evaluator"]


@dataclass
class Score:
    """An evaluation's result: a score, a label, an explanation (any may be absent)."""

    name: str | None = None
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str | None = None
    direction: str = "maximize"


def create_evaluator(
    name: str,
    source: str | None = None,
    direction: str = "maximize",
    kind: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark an evaluator: the function is returned unchanged; scorebox binds its arguments."""

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        func._phoenix_evaluator = {"name": name, "kind": kind or source}  # type: ignore[attr-defined]
        return func

    return mark
