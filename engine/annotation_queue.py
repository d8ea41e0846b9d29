"""The annotation queue: which run row a person labels next, and how far labelling is.

Three strategies: ``random``; ``stratified`` by the check's outcome (its pass flag or
bool score, else five score bands), taking the band with the fewest labels so far, so
rare outcomes get labelled too; ``disagreements`` first: rows where someone's label
contradicts the check, then rows labelled once (they need a second person), then the
rest. Draws are seeded by the run, the annotator and how many they have done, so a
page reload shows the same item.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STRATEGIES = ("random", "stratified", "disagreements")


@dataclass(frozen=True)
class Candidate:
    """A run row with the check's result and the labels people gave it."""

    row: int
    score: Any
    passed: bool | None
    labels: Mapping[str, Any]  # annotator -> value


def outcome(c: Candidate) -> Any:
    """The check's verdict on the row: its pass flag, else its score."""
    return c.passed if c.passed is not None else c.score


def _band(value: Any, edges: Sequence[float]) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return sum(1 for e in edges if value > e)


def _disagrees(c: Candidate) -> bool:
    check = outcome(c)
    return any(v != check for v in c.labels.values()) if check is not None else False


def next_row(
    candidates: Sequence[Candidate],
    annotator: str,
    strategy: str,
    seed: str,
    skip: Sequence[int] = (),
) -> int | None:
    """The row ``annotator`` should label next, or None when none is left."""
    pool = [c for c in candidates if annotator not in c.labels and c.row not in skip]
    if not pool:
        return None
    done = sum(1 for c in candidates if annotator in c.labels)
    # the order items are shown in, reproducible from its seed: nothing secret depends on it
    rng = random.Random(f"{seed}:{annotator}:{done}:{len(skip)}")  # nosec B311
    if strategy == "disagreements":
        for tier in (
            [c for c in pool if _disagrees(c)],
            [c for c in pool if len(c.labels) == 1],
        ):
            if tier:
                return rng.choice(tier).row
    elif strategy == "stratified":
        numbers = sorted(
            float(outcome(c))
            for c in candidates
            if isinstance(outcome(c), (int, float)) and not isinstance(outcome(c), bool)
        )
        edges = [numbers[len(numbers) * q // 5] for q in range(1, 5)] if numbers else []
        labelled = Counter(_band(outcome(c), edges) for c in candidates if c.labels)
        bands: dict[Any, list[Candidate]] = {}
        for c in pool:
            bands.setdefault(_band(outcome(c), edges), []).append(c)
        fewest = min(bands, key=lambda b: (labelled.get(b, 0), str(b)))
        return rng.choice(bands[fewest]).row
    return rng.choice(pool).row


@dataclass(frozen=True)
class QueueProgress:
    """How labelling stands: per-annotator counts and rows still needing a second person."""

    per_annotator: dict[str, int]
    labelled_rows: int
    need_second: int
    total_rows: int


def progress(candidates: Sequence[Candidate]) -> QueueProgress:
    """Counts over the run's rows."""
    per: Counter[str] = Counter()
    for c in candidates:
        per.update(c.labels.keys())
    return QueueProgress(
        per_annotator=dict(sorted(per.items())),
        labelled_rows=sum(1 for c in candidates if c.labels),
        need_second=sum(1 for c in candidates if len(c.labels) == 1),
        total_rows=len(candidates),
    )
