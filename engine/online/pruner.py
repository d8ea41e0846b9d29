"""The service prunes spans past ``SCOREBOX_SPAN_RETENTION_DAYS`` on its own, every
``SCOREBOX_SPAN_PRUNE_INTERVAL_SECONDS`` (first a minute after start), so production
traffic does not fill the database between an operator's ``scorebox db prune`` runs.
Scores are kept. Several API nodes pruning at once delete the same rows once."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import TYPE_CHECKING

from engine.errors import ScoreboxError, StorageError
from engine.storage.records import utcnow
from engine.storage.span_retention import prune_spans

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from engine.settings import Settings

__all__ = ["SpanPruner"]

log = logging.getLogger(__name__)
FIRST_PASS_SECONDS = 60.0


class SpanPruner:
    """A thread that prunes old spans while the service runs (when retention is set)."""

    def __init__(self, settings: Settings, db: Engine) -> None:
        self._settings = settings
        self._db = db
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._settings.span_retention_days is None:
            return
        self._thread = threading.Thread(target=self._loop, name="span-prune", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        wait = min(FIRST_PASS_SECONDS, self._settings.span_prune_interval_seconds)
        while not self._stop.wait(wait):
            wait = self._settings.span_prune_interval_seconds
            try:
                self.run_once()
            except StorageError:
                pass  # the database is away: the storage layer says so once per interval
            except ScoreboxError as exc:
                log.warning("span retention: %s", exc)

    def run_once(self) -> int:
        """Prune once now; the spans deleted."""
        days = self._settings.span_retention_days
        if days is None:
            return 0
        report = prune_spans(self._db, utcnow() - timedelta(days=days))
        if report.spans:
            log.info("span retention: %s", report.describe())
        return report.spans
