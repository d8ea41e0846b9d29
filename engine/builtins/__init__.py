"""Built-in checks: deterministic ones and LLM-judged ones, by name.

:func:`build_builtins` is the one way to get the registry: the server, the worker
and ``scorebox run`` all call it, with their LLM client or None (judges then
answer ``judge_error`` on every row: "no LLM endpoint configured: set
SCOREBOX_LLM_BASE_URL"). Each value is a :class:`~engine.builtins.base.BuiltinCheck`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from engine.builtins.base import BuiltinCheck
from engine.builtins.deterministic import deterministic_builtins
from engine.builtins.judged import judge_builtins
from engine.builtins.published_judges import published_judge_builtins
from engine.builtins.text_format import format_builtins
from engine.llm.client import LLMClient

Builtins = Mapping[str, BuiltinCheck[Any]]
"""The built-in registry: name to check."""

#: The creation time a built-in reports: when scorebox first shipped its built-ins. They
#: belong to no tenant and are never saved, but clients (Okareo's SDK among them) expect a
#: time on every listed check.
BUILTINS_CREATED_AT = datetime(2026, 11, 22, tzinfo=UTC)


def build_builtins(llm: LLMClient | None = None) -> Builtins:
    """Every built-in by name; the LLM-judged ones use ``llm`` (None: they answer judge_error)."""
    checks = [
        *deterministic_builtins(),
        *format_builtins(),
        *judge_builtins(llm),
        *published_judge_builtins(llm),
    ]
    return {check.name: check for check in checks}


def describe(registry: Builtins) -> list[dict[str, Any]]:
    """JSON-ready listing: name, kind, description, output type, requires, params schema."""
    return [
        {
            "name": check.name,
            "kind": check.kind,
            "description": check.description,
            "output_data_type": check.output_data_type.value,
            "requires": list(check.requires),
            "params_schema": check.params_schema,
        }
        for check in sorted(registry.values(), key=lambda check: check.name)
    ]


__all__ = ["BUILTINS_CREATED_AT", "BuiltinCheck", "Builtins", "build_builtins", "describe"]
