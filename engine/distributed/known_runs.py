"""What a worker knows of the runs it has run chunks of: marked running, stopped or not,
and each check's pace (what takes chunks along, engine/runs/work.py's ``ALONG_SECONDS``).

A run never goes back to ``queued``, so one ``running`` write per worker is
enough; whether a run stopped (cancelled, failed) is asked again when the last
answer is older than the caller's time-to-live. One bounded map per worker:
emptied past :data:`MAX_RUNS` runs (forgetting costs one more write or one
more question, never a wrong answer past the time-to-live).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: Runs remembered before the map is emptied.
MAX_RUNS = 10_000


@dataclass
class KnownRun:
    """One run: whether this worker marked it running, its last stopped-or-not answer, and
    the seconds a row took in each check's (by index) last chunk here that scored rows."""

    running: bool = False
    asked: float = float("-inf")  # monotonic time of the stopped-or-not answer
    stopped: bool = False
    pace: dict[int, float] = field(default_factory=dict)


class KnownRuns:
    """Run id -> :class:`KnownRun`, bounded; thread-safe (the slots and the after-thread)."""

    def __init__(self, limit: int = MAX_RUNS) -> None:
        self._limit = limit
        self._runs: dict[str, KnownRun] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def _run(self, run_id: str) -> KnownRun:
        """The run's entry, made when missing (the lock held)."""
        known = self._runs.get(run_id)
        if known is None:
            if len(self._runs) >= self._limit:
                self._runs.clear()
            known = self._runs[run_id] = KnownRun()
        return known

    def marked_running(self, run_id: str) -> bool:
        """Whether this worker already marked the run running."""
        with self._lock:
            known = self._runs.get(run_id)
            return known is not None and known.running

    def mark_running(self, run_id: str) -> None:
        with self._lock:
            self._run(run_id).running = True

    def stopped(self, run_id: str, now: float, ttl: float) -> bool | None:
        """The run's stopped-or-not answer if younger than ``ttl`` seconds, else None."""
        with self._lock:
            known = self._runs.get(run_id)
            if known is None or now - known.asked >= ttl:
                return None
            return known.stopped

    def saw(self, run_id: str, now: float, stopped: bool) -> None:
        """Record the run's stopped-or-not answer, as of ``now`` (monotonic)."""
        with self._lock:
            known = self._run(run_id)
            known.asked, known.stopped = now, stopped

    def pace(self, run_id: str, check_index: int) -> float | None:
        """Seconds a row of the check took in its last chunk here (None: none scored yet)."""
        with self._lock:
            known = self._runs.get(run_id)
            return None if known is None else known.pace.get(check_index)

    def set_pace(self, run_id: str, check_index: int, seconds_a_row: float) -> None:
        with self._lock:
            self._run(run_id).pace[check_index] = seconds_a_row
