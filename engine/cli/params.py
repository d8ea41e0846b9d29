"""Command-line values that only the CLI parses (``--map``, ``--threshold``)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

from engine.names import BUILTIN_PREFIX, split_entry
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


def result_names(refs: Sequence[str | Mapping[str, Any]]) -> list[str]:
    """The names a run's results carry, which ``--threshold`` names: a file's stem, a
    built-in without ``builtin:``, a pushed check's name (and ``NAME@VERSION`` when pinned)."""
    names: list[str] = []
    for ref in refs:
        name = ref if isinstance(ref, str) else str(ref["name"])
        bare = name.removeprefix(BUILTIN_PREFIX)
        file, entry = split_entry(bare)
        if file.endswith(".py"):  # a file's stem, with the entry it names (graders:blocked)
            stem = file.rsplit("/", 1)[-1].removesuffix(".py")
            names.append(stem if entry is None else f"{stem}:{entry}")
        else:
            names.append(bare)
        if not isinstance(ref, str) and ref.get("version") is not None:
            names.append(f"{names[-1]}@{ref['version']}")
        elif "@" in names[-1]:  # a pinned server check, NAME@VERSION: its results say NAME
            names.append(names[-1].partition("@")[0])
    return names


def check_threshold_names(
    thresholds: Mapping[str, float], refs: Sequence[str | Mapping[str, Any]]
) -> None:
    """Every ``--threshold`` (and suite threshold) names a check of the run: checked before
    scoring, a usage error (exit 2) with a did-you-mean."""
    known = result_names(refs)
    for name in thresholds:
        if name in known or (name.partition("@")[2] and name.partition("@")[0] in known):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise click.BadParameter(
            f"{name}: the run has no check {name!r}; {hint}its checks are "
            f"{', '.join(known)} (a .py check is named by its file's stem)",
            param_hint="--threshold",
        )
