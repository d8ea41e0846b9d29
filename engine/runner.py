"""Moved to :mod:`engine.sandbox.runner`; this import path is kept for one release."""

from __future__ import annotations

from engine.rows import as_row, as_rows
from engine.sandbox.notebook import (
    close_default_runners,
    default_runner,
    iter_check,
    run_check,
    run_checks,
)
from engine.sandbox.runner import CodeCheck, Engine, SandboxRunner

__all__ = [
    "CodeCheck",
    "Engine",
    "SandboxRunner",
    "as_row",
    "as_rows",
    "close_default_engines",
    "close_default_runners",
    "default_engine",
    "default_runner",
    "iter_check",
    "run_check",
    "run_checks",
]

#: Deprecated names, kept for one release: "engine" is the package, the sandbox runs checks.
default_engine = default_runner
close_default_engines = close_default_runners
