"""The seam to built-in checks: trusted callables that run in process.

``engine.builtins`` (when installed) exposes ``BUILTINS``: a mapping of name to
an object with ``name``, ``description``, ``output_data_type`` (optional),
``kind`` (``"builtin"``, or ``"model"`` for LLM-judged built-ins; optional) and
``score(rows, params) -> list[RowResult]`` (one result per row, in order), or a
function ``builtins() -> Mapping`` returning the same. Without that module
there are no built-ins.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.models import Row, RowResult

ScoreFunction = Callable[[Sequence[Row], Mapping[str, Any]], list[RowResult]]


@dataclass(frozen=True)
class Builtin:
    """A built-in check as the service sees it."""

    name: str
    score: ScoreFunction
    description: str = ""
    output_data_type: str | None = None
    kind: str = "builtin"
    params_schema: dict[str, Any] = field(default_factory=dict)
    validate: Callable[[Mapping[str, Any]], Any] | None = None

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise ``InvalidRequestError`` naming the bad parameter (at submission, not mid-run)."""
        if self.validate is not None:
            self.validate(params)


def _adapt(name: str, value: Any) -> Builtin | None:
    score = getattr(value, "score", None)
    if not callable(score):
        score = value if callable(value) else None
    if score is None:
        return None
    output = getattr(value, "output_data_type", None)
    return Builtin(
        name=str(getattr(value, "name", name)),
        score=score,
        description=str(getattr(value, "description", "") or (getattr(value, "__doc__", "") or ""))
        .strip()
        .split("\n")[0],
        output_data_type=None if output is None else str(getattr(output, "value", output)),
        kind=str(getattr(value, "kind", "builtin") or "builtin"),
        params_schema=dict(getattr(value, "params_schema", None) or {}),
        validate=getattr(value, "validate_params", None),
    )


def load_builtins(module_name: str = "engine.builtins", llm: Any = None) -> dict[str, Builtin]:
    """Every built-in the installed ``engine.builtins`` offers (empty when it is absent).

    With ``llm`` (an LLM client), ``builtins(llm)`` builds the registry so judges can call it.
    """
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            return {}
        raise
    found: Any = None
    if llm is not None and callable(getattr(module, "builtins", None)):
        found = module.builtins(llm)
    if found is None:
        found = getattr(module, "BUILTINS", None)
    if not isinstance(found, Mapping):
        return {}
    out: dict[str, Builtin] = {}
    for name, value in found.items():
        adapted = _adapt(str(name), value)
        if adapted is not None:
            out[adapted.name] = adapted
    return out
