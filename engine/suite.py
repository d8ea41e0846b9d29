"""Moved to :mod:`engine.suites.file`; this import path (and ``python -m engine.suite``) is
kept for one release."""

from __future__ import annotations

from engine.suites.file import (
    RowField,
    Suite,
    SuiteError,
    load_suite,
    parse_suite,
    schema_text,
    threshold_key,
)

__all__ = [
    "RowField",
    "Suite",
    "SuiteError",
    "load_suite",
    "parse_suite",
    "schema_text",
    "threshold_key",
]

if __name__ == "__main__":  # python -m engine.suite > docs/scorebox.schema.json
    print(schema_text(), end="")
