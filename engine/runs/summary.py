"""Per-check summaries of scored rows: counts per status, mean, min, max, p50, pass rate.

One implementation for every caller: ``/v1/score`` and the CLI summarise
results held in memory (:func:`summarize`); a stored run's summary comes from
the store's aggregates over its result blocks (:func:`run_summary`). A finished run's summary is
computed once and stored with the run (``runs.summary``), so its page and
``GET /v1/runs/{id}`` read one row instead of scanning a million results; it is
used only while the run's result count is the one it was computed at (results
that land after a cancel make it recompute). A queued or running run's summary
is kept in the process for a short while (see ``STALE_FACTOR``), so a page and
the CLI polling a million-row run do not each rescan it every half second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from engine.contract import Status
from engine.errors import ScoreboxError
from engine.models import RowResult
from engine.storage import Run, RunStore, ScoreStats, moments

log = logging.getLogger("scorebox.runs")


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
        default=None,
        description="Share of ok results that pass: the check's own pass flag where its "
        "format has one (promptfoo), else the share of true scores (bool checks only).",
    )
    corrected_pass_rate: dict[str, Any] | None = Field(
        default=None,
        description="Only when asked for (`GET /v1/runs/{id}?labels=NAME`) or when the check "
        "version requires an agreement on a label: the pass rate corrected for the check's "
        "TPR and TNR against that label (Rogan-Gladen), `{labels, value, ci, tpr, tnr, "
        "verdict}`, or `{labels, value: null, reason}` where it cannot be corrected.",
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
    """The aggregates :meth:`engine.storage.RunStore.score_stats` computes from stored results."""
    counts: Counter[str] = Counter()
    scores: list[float] = []
    bools = flagged = passes = 0
    for result in results:
        counts[result.status.value] += 1
        if result.status is Status.OK and result.score is not None:
            scores.append(float(result.score))
            bools += isinstance(result.score, bool)
            if result.passed is not None:
                flagged += 1
                passes += result.passed
    return ScoreStats(
        counts=dict(counts),
        ok_count=len(scores),
        mean=moments.mean(scores),  # never overflows, and splits as the store does
        min=min(scores) if scores else None,
        max=max(scores) if scores else None,
        p50=moments.median(scores),
        bool_scores=bools,
        flagged=flagged,
        passes=passes,
    )


def from_stats(
    stats: ScoreStats, check: str, version: int | None, check_id: str | None, kind: str
) -> CheckSummary:
    """The summary of a check's aggregates; a pass rate from the results' own pass flags
    (scorer formats that have one), else only when every ok score is a bool."""
    is_bool = stats.ok_count > 0 and stats.bool_scores == stats.ok_count
    if stats.flagged:
        return _summary(stats, check, version, check_id, kind, stats.passes / stats.flagged)
    return _summary(stats, check, version, check_id, kind, stats.mean if is_bool else None)


def _summary(
    stats: ScoreStats,
    check: str,
    version: int | None,
    check_id: str | None,
    kind: str,
    pass_rate: float | None,
) -> CheckSummary:
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
        pass_rate=pass_rate,
    )


class RunSummary(BaseModel):
    """A stored run's summary: every check's summary and score histogram, at ``done`` results."""

    done: int = Field(description="Results the summary covers.")
    checks: list[CheckSummary]
    histograms: list[list[tuple[float, int]]] = Field(
        description="Per check, ``(lower edge, count)`` of its ok numeric scores (empty for "
        "bool checks)."
    )


#: An active run's summary is reused while its result count is unchanged, and
#: otherwise for up to this many times what computing it took: a summary that
#: costs 2 ms is always fresh; one that scans a million results in 1.5 s is
#: recomputed at most every 6 s, however many pages and clients poll the run.
STALE_FACTOR = 4.0
#: Active runs whose summary this process keeps (least recently computed dropped).
MAX_ACTIVE_KEPT = 256


@dataclass(frozen=True)
class _Kept:
    at: float
    cost: float
    summary: RunSummary


_active: OrderedDict[str, _Kept] = OrderedDict()
_active_lock = threading.Lock()
_clock = time.monotonic


def _kept(run: Run) -> RunSummary | None:
    """The summary this process computed for active ``run``, if it may still be served."""
    with _active_lock:
        kept = _active.get(run.id)
    if kept is None:
        return None
    if kept.summary.done == run.results_done or _clock() - kept.at < STALE_FACTOR * kept.cost:
        return kept.summary
    return None


def _forget(run: Run) -> None:
    with _active_lock:
        _active.pop(run.id, None)


def _keep(run: Run, summary: RunSummary, started: float) -> None:
    with _active_lock:
        now = _clock()
        kept = _active.get(run.id)
        if kept is not None and kept.summary.done > summary.done:
            return  # computed at the same time from fewer results: the kept one is newer
        _active[run.id] = _Kept(now, now - started, summary)
        _active.move_to_end(run.id)
        while len(_active) > MAX_ACTIVE_KEPT:
            _active.popitem(last=False)


def run_summary(store: RunStore, run: Run) -> RunSummary:
    """``run``'s summary: the stored one while it is still true, else computed from its results.

    A finished run's computed summary is stored, guarded by its result count: if
    a result landed while it was computed, it is not stored (the next call
    computes again). A queued or running run's summary is computed, and served
    again by this process while no result has landed since, or for a while
    proportional to its cost (``STALE_FACTOR``).
    """
    if run.status.active:
        kept = _kept(run)
        if kept is not None:
            return kept
    else:
        _forget(run)
    if run.summary is not None and not run.status.active:
        try:
            stored = RunSummary.model_validate(run.summary)
        except ValidationError:
            stored = None  # written by another version: compute it again
        if stored is not None and stored.done == run.results_done:
            return stored
    started = _clock()
    checks: list[CheckSummary] = []
    histograms: list[list[tuple[float, int]]] = []
    for ci, rc in enumerate(run.checks):
        summary = from_stats(store.score_stats(run.id, ci), rc.name, rc.version, rc.id, rc.kind)
        checks.append(summary)
        numeric = summary.scored > 0 and summary.pass_rate is None
        histograms.append(store.score_histogram(run.id, ci) if numeric else [])
    counted = sum(sum(c.counts.values()) for c in checks)
    computed = RunSummary(done=max(counted, run.results_done), checks=checks, histograms=histograms)
    if run.status.active:
        _keep(run, computed, started)
    elif counted == run.results_done:
        try:
            store.save_run_summary(run.id, computed.model_dump(mode="json"), run.results_done)
        except ScoreboxError as exc:  # the page still shows it; the next view tries again
            log.warning("run %s: summary not stored: %s", run.id, exc)
    return computed


def results_done(run: Run, summary: RunSummary) -> int:
    """How many results ``run`` has now, for progress: its counter, which every write of
    results bumps, unless the summary counted more (results stored by a worker older than
    migration 0006). Never a kept summary's count alone: that may be seconds old."""
    return max(summary.done, run.results_done)


def store_summary(store: RunStore, run: Run) -> None:
    """Compute and store a run's summary as it finishes (never raises: a view computes it)."""
    try:
        run_summary(store, run)
    except ScoreboxError as exc:
        log.warning("run %s: summary not computed at finish: %s", run.id, exc)
