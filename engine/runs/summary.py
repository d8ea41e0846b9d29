"""Per-check summaries of scored rows: counts per status, mean, min, max, p50, pass rate."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from engine.contract import Status
from engine.models import RowResult
from engine.storage import ScoreStats


class CheckSummary(BaseModel):
    """How one check did over a run's rows."""

    check: str = Field(examples=["answer_mentions_expected"])
    version: int | None = Field(default=None, examples=[3])
    id: str | None = Field(default=None, examples=["chk_5d0c9e3b8a7f61d2a4c1"])
    kind: str = Field(default="code", examples=["code"])
    counts: dict[str, int] = Field(
        default_factory=dict, description="Results per status.", examples=[{"ok": 19, "error": 1}]
    )
    scored: int = Field(default=0, description="Rows with status ok.")
    mean: float | None = Field(default=None, examples=[0.8])
    min: float | None = None
    max: float | None = None
    p50: float | None = Field(default=None, description="Median of ok scores.")
    pass_rate: float | None = Field(
        default=None, description="Share of ok scores that are true (bool checks only)."
    )


def summarize(
    results: Iterable[RowResult],
    check: str,
    version: int | None = None,
    check_id: str | None = None,
    kind: str = "code",
) -> CheckSummary:
    """Summary of one check's results held in memory (the same rules as stored runs)."""
    return from_stats(score_stats(results), check, version, check_id, kind)


def score_stats(results: Iterable[RowResult]) -> ScoreStats:
    """The aggregates :meth:`engine.storage.RunStore.score_stats` computes in the database."""
    counts: Counter[str] = Counter()
    scores: list[float] = []
    bools = 0
    for result in results:
        counts[result.status.value] += 1
        if result.status is Status.OK and result.score is not None:
            scores.append(float(result.score))
            bools += isinstance(result.score, bool)
    return ScoreStats(
        counts=dict(counts),
        ok_count=len(scores),
        mean=statistics.fmean(scores) if scores else None,
        min=min(scores) if scores else None,
        max=max(scores) if scores else None,
        p50=statistics.median(scores) if scores else None,
        bool_scores=bools,
    )


def from_stats(
    stats: ScoreStats, check: str, version: int | None, check_id: str | None, kind: str
) -> CheckSummary:
    """The summary of a check's aggregates; a pass rate only when every ok score is a bool."""
    is_bool = stats.ok_count > 0 and stats.bool_scores == stats.ok_count
    return CheckSummary(
        check=check,
        version=version,
        id=check_id,
        kind=kind,
        counts=stats.counts,
        scored=stats.ok_count,
        mean=stats.mean,
        min=stats.min,
        max=stats.max,
        p50=stats.p50,
        pass_rate=stats.mean if is_bool else None,
    )
