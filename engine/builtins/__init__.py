"""Built-in checks: deterministic ones and LLM-judged ones, by name.

``builtins(llm)`` builds the registry with an LLM client for the judges;
``BUILTINS`` (built on first access) is the same without one (judges then answer ``judge_error`` on
every row: "no LLM endpoint configured: set SCOREBOX_LLM_BASE_URL"). Each
value has ``name``, ``description``, ``output_data_type``, ``kind``
(``builtin`` or ``model``), ``params_schema``, ``validate_params(params)`` and
``score(rows, params) -> list[RowResult]`` (see ``engine.runs.registry``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.builtins.base import BuiltinCheck
from engine.builtins.deterministic import deterministic_builtins
from engine.builtins.text_format import format_builtins
from engine.llm import LLMClient


def builtins(llm: LLMClient | None = None) -> Mapping[str, BuiltinCheck[Any]]:
    """Every built-in by name; the LLM-judged ones use ``llm``."""
    from engine.judging.judges import judge_builtins  # judges build on engine.builtins.base

    checks = [*deterministic_builtins(), *format_builtins(), *judge_builtins(llm)]
    return {check.name: check for check in checks}


def describe(registry: Mapping[str, BuiltinCheck[Any]]) -> list[dict[str, Any]]:
    """JSON-ready listing: name, kind, description, output type, params schema."""
    return [
        {
            "name": check.name,
            "kind": check.kind,
            "description": check.description,
            "output_data_type": check.output_data_type.value,
            "requires": list(check.requires),
            "params_schema": check.params_schema,
        }
        for check in registry.values()
    ]


_default: Mapping[str, BuiltinCheck[Any]] | None = None


def __getattr__(name: str) -> Any:
    """``BUILTINS``: the registry without an LLM client, built on first use."""
    global _default
    if name == "BUILTINS":
        if _default is None:
            _default = builtins()
        return _default
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BUILTINS", "BuiltinCheck", "builtins", "describe"]
