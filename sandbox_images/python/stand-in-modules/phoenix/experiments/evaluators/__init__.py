"""``phoenix.experiments.evaluators``, as a stand-in: the ``create_evaluator`` decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["create_evaluator"]


def create_evaluator(
    kind: str = "CODE",
    name: str | None = None,
    scorer: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark an evaluator: the function is returned unchanged; scorebox binds its arguments."""

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        func._phoenix_evaluator = {"kind": kind, "name": name}  # type: ignore[attr-defined]
        return func

    return mark
