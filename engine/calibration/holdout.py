"""A seeded, stratified hold-out of labelled rows: the generator learns from the rest and
the agreement report is computed on the held-back part only.

The split depends only on the labelled rows (sorted), their majority labels, the fraction
and the seed, so the client that writes the generator's examples and the server that
reports on the held-back rows draw the same one.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.calibration.annotators import majority

Target = tuple[str, int]


def majorities(labels: Iterable[tuple[str, int, Any]]) -> dict[Target, Any]:
    """``(run, row, value)`` labels -> each row's majority value (rows without one left out)."""
    by_row: dict[Target, list[Any]] = {}
    for run, row, value in labels:
        by_row.setdefault((run, row), []).append(value)
    out: dict[Target, Any] = {}
    for target, values in by_row.items():
        top = majority(values)
        if top is not None:
            out[target] = top[0]
    return out


def held_out(rows: Mapping[Target, Any], fraction: float, seed: int) -> set[Target]:
    """The rows held back: ``fraction`` of each label value's rows, drawn with ``seed``."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"hold-out fraction {fraction} must be between 0 and 1")
    # a seeded, reproducible split of labelled rows: nothing secret depends on it
    rng = random.Random(seed)  # nosec B311
    chosen: set[Target] = set()
    classes: dict[str, list[Target]] = {}
    for target in sorted(rows):
        classes.setdefault(repr(rows[target]), []).append(target)
    for key in sorted(classes):
        members: Sequence[Target] = classes[key]
        count = round(fraction * len(members))
        chosen.update(rng.sample(list(members), count))
    return chosen
