"""scorebox engine: score LLM outputs with sandboxed code checks, built-ins and LLM judges.

Importing ``engine`` is cheap: the public names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "CodeCheck",
    "Limits",
    "Row",
    "RowResult",
    "SandboxRunner",
    "ScoreTable",
    "Settings",
    "Status",
    "iter_check",
    "run_check",
    "run_checks",
    "score_table",
]

_EXPORTS = {
    "CodeCheck": "engine.sandbox.runner",
    "SandboxRunner": "engine.sandbox.runner",
    "iter_check": "engine.sandbox.notebook",
    "run_check": "engine.sandbox.notebook",
    "run_checks": "engine.sandbox.notebook",
    "score_table": "engine.sandbox.notebook",
    "ScoreTable": "engine.sandbox.table",
    "Limits": "engine.models",
    "Row": "engine.models",
    "RowResult": "engine.models",
    "Settings": "engine.settings",
    "Status": "engine.contract",
}

if TYPE_CHECKING:
    from engine.contract import Status
    from engine.models import Limits, Row, RowResult
    from engine.sandbox.notebook import iter_check, run_check, run_checks, score_table
    from engine.sandbox.runner import CodeCheck, SandboxRunner
    from engine.sandbox.table import ScoreTable
    from engine.settings import Settings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
