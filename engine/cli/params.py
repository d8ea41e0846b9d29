"""Command-line values that only the CLI parses (``--map``, ``--threshold``)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import click

from engine.suites.data import ROW_FIELDS


def parse_map(pairs: Iterable[str]) -> dict[str, str]:
    """``--map model_output=output`` pairs: row field -> column in the file."""
    out: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or field not in ROW_FIELDS or not column:
            raise click.BadParameter(
                f"{pair!r}: expected FIELD=COLUMN with FIELD one of {', '.join(ROW_FIELDS)}",
                param_hint="--map",
            )
        out[field] = column
    return out


def parse_thresholds(pairs: Iterable[str]) -> dict[str, float]:
    """``CHECK=0.8`` pairs to a dict; a clear error otherwise."""
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name or math.isnan(number):
            raise click.BadParameter(
                f"{pair!r}: expected CHECK=NUMBER, e.g. is_json=0.95", param_hint="--threshold"
            )
        out[name] = number
    return out
