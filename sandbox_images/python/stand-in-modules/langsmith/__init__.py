"""A small stand-in for LangSmith's SDK inside the scorebox sandbox.

What an evaluator file imports from ``langsmith`` for types and decorators resolves
here: ``langsmith.wrappers.wrap_openai`` (returns the client unchanged: scorebox has no
tracing), ``langsmith.traceable``, ``langsmith.evaluation.EvaluationResult`` /
``EvaluationResults`` and ``langsmith.schemas.Run`` / ``Example``. A check that needs
more declares the real package (``langsmith``) in a PEP 723 block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["traceable"]
__version__ = "0.0.0+scorebox.stand-in"


def traceable(*args: Any, **options: Any) -> Any:
    """``@traceable`` or ``@traceable(name=...)``: the function, unchanged (no tracing here)."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        return func

    return mark
