"""The results of rules' runs written back onto their spans.

Each pass reads the runs whose results are not all linked yet: a run still queued has
none; a run still scoring is read again only when it stored new results (as each chunk's
results land, not when the run ends); a finished run is read once more and closed. The
link lives in the database, so it survives a restart.
"""

from __future__ import annotations

from typing import Any

from engine.errors import NotFoundError
from engine.storage import Run, RunStatus, Store
from engine.storage.rule_records import RunResult, ScoreStatus
from engine.storage.score_queue_sql import ScoreQueue


def result_of(
    status: str, score: Any, passed: bool | None, explanation: str | None, error: str | None
) -> tuple[str, float | None, bool | None, str | None]:
    """A run's row result as a span score: (status, score, passed, explanation)."""
    if status != "ok":
        return ScoreStatus.ERROR.value, None, None, f"{status}: {error or explanation or ''}"
    value: float | None
    if isinstance(score, bool):
        value = 1.0 if score else 0.0
        passed = score if passed is None else passed
    elif isinstance(score, int | float):
        value = float(score)
    else:
        value = None
    return ScoreStatus.SCORED.value, value, passed, explanation


class ResultLinker:
    """Writes the results stored since its last pass onto their spans."""

    def __init__(self, store: Store, scores: ScoreQueue) -> None:
        self.store = store
        self.scores = scores
        self._results_seen: dict[str, int] = {}  # run -> results linked so far

    def link(self) -> tuple[int, dict[str, int]]:
        """One pass. Returns how many runs are still open, and per rule version how many
        of its runs have not started yet."""
        waiting: dict[str, int] = {}
        open_runs = 0
        for run_id, tenant_id, version_id in self.scores.unlinked_runs():
            try:
                run = self.store.get_run(tenant_id, run_id)
            except NotFoundError:
                self.scores.link(run_id, [], tokens=0, final=True, unscored="its run was deleted")
                continue
            final = not run.status.active
            if not final:
                open_runs += 1
                if run.status is RunStatus.QUEUED:
                    waiting[version_id] = waiting.get(version_id, 0) + 1
                    continue  # no chunk has run: no results to read
                if not self._has_new_results(run_id):
                    continue
            else:
                self._results_seen.pop(run_id, None)
            self._link_run(run, final)
        return open_runs, waiting

    def _has_new_results(self, run_id: str) -> bool:
        """A run still scoring is read again only when it stored new results."""
        done = self.store.count_results(run_id)
        if done == self._results_seen.get(run_id):
            return False
        self._results_seen[run_id] = done
        return True

    def _link_run(self, run: Run, final: bool) -> None:
        results = [
            RunResult(
                r.row_index,
                r.check_index,
                *result_of(r.status, r.score, r.passed, r.explanation, r.error),
            )
            for r in self.store.results_page(run.id, 0, 1_000_000)
        ]
        tokens = int((run.llm_usage or {}).get("total_tokens", 0))
        self.scores.link(
            run.id,
            results,
            tokens=tokens,
            final=final,
            unscored=f"its run ended {run.status.value}: {run.error or 'no result'}",
        )
