"""A small stand-in for Braintrust's SDK inside the scorebox sandbox: ``braintrust.Score``,
and ``wrap_openai`` / ``traced``, which return what they are given (no tracing here).

A scorer file that imports more declares the real package (``braintrust``) in a PEP 723
block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Score", "traced", "wrap_openai"]
__version__ = "0.0.0+scorebox.stand-in"


@dataclass
class Score:
    """A named score in 0..1 (None: skipped), with metadata, as Braintrust's own."""

    name: str
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None

    def __post_init__(self) -> None:
        if self.score is not None and not 0 <= self.score <= 1:
            raise ValueError(f"score ({self.score}) must be between 0 and 1")


def wrap_openai(client: Any) -> Any:
    """The OpenAI client, unchanged: its calls go to the model gateway as they are."""
    return client


def traced(*span_args: Any, **span_kwargs: Any) -> Any:
    """``@traced`` or ``@traced(name=...)``: the function, unchanged."""
    if len(span_args) == 1 and callable(span_args[0]) and not span_kwargs:
        return span_args[0]

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        return func

    return mark
