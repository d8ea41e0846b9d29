"""Stepping a running backfill: one page of stored spans at a time into the score queue.

A page is read from the backfill's cursor, the rule version picks its spans as it would
live (:func:`~engine.online.picking.picked`), and the picks are queued with the backfill
as their origin. Its row cap counts the spans with content only (a span without content
is queued, to be scored ``unscored``, but costs no row). The cursor moves only from where
this step read it: two API nodes stepping one backfill count its page once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.errors import NotFoundError
from engine.online.picking import picked
from engine.storage.backfill_sql import BackfillStore
from engine.storage.rule_records import RETRYABLE, Backfill, SpanView
from engine.storage.rule_sql import RuleStore
from engine.storage.score_queue_sql import ScoreQueue

#: Pages one backfill may queue in one tick, and how many batches of its scores may wait.
MAX_BACKFILL_PAGES_PER_TICK = 4
BACKFILL_WAITING_PAGES = 4


def _within_room(picks: Sequence[SpanView], room: int) -> list[SpanView]:
    """The picks up to the one that fills ``room`` spans with content."""
    kept: list[SpanView] = []
    with_content = 0
    for view in picks:
        if not view.ref.no_content:
            if with_content >= room:
                break
            with_content += 1
        kept.append(view)
    return kept


class BackfillStepper:
    """Queues the running backfills' pages, bounded so live spans are not starved."""

    def __init__(
        self,
        rules: RuleStore,
        scores: ScoreQueue,
        backfills: BackfillStore,
        *,
        page_spans: int,
        batch_spans: int,
        count: Callable[[dict[str, int]], None],
    ) -> None:
        self.rules = rules
        self.scores = scores
        self.backfills = backfills
        self.page_spans = page_spans
        self.batch_spans = batch_spans
        self._count = count  # the scores queued or skipped, by status (metrics)

    def step_running(self) -> bool:
        """Step every running backfill by a few pages; True when any is running."""
        running = self.backfills.running()
        for first in running:
            backfill = first
            for _ in range(MAX_BACKFILL_PAGES_PER_TICK):
                if not self.step(backfill):
                    break
                backfill = self.backfills.get(backfill.tenant_id, backfill.id)
        return bool(running)

    def step(self, b: Backfill) -> bool:
        """Queue the backfill's next page; False when it is done or must wait."""
        if b.status != "running":
            return False
        if self.backfills.waiting(b.tenant_id, b.id) >= BACKFILL_WAITING_PAGES * self.batch_spans:
            return False  # its queued work first: the backlog stays bounded
        try:
            _rule, version = self.rules.get_version(b.tenant_id, b.rule_version_id)
        except NotFoundError:
            self.backfills.advance(b.id, None, {}, done=True)
            return False
        page = self.backfills.page(b, self.page_spans, fields=bool(version.filter))
        room = max(0, b.row_cap - int(b.counts.get("rows", 0)))
        picks = [v for _, v in page if picked(v, version)]
        capped = len([v for v in picks if not v.ref.no_content]) > room
        if capped:
            picks = _within_room(picks, room)
        counts = dict(
            self.scores.enqueue(
                b.tenant_id,
                b.rule_id,
                version,
                [v.ref for v in picks],
                origin=b.id,
                revive=RETRYABLE,
            )
        )
        self._count(counts)
        counts["scanned"] = len(page)
        counts["matched"] = len(picks)
        counts["rows"] = len([v for v in picks if not v.ref.no_content])
        cursor = (page[-1][1].ref.start_unix_nano, page[-1][0]) if page else None
        if capped and picks:
            last = picks[-1].ref
            index = next(i for i, (_, v) in enumerate(page) if v.ref == last)
            cursor = (last.start_unix_nano, page[index][0])
            counts["scanned"] = index + 1
        done = capped or len(page) < self.page_spans
        moved = self.backfills.advance(
            b.id, cursor, counts, done=done, expected=(b.cursor_unix_nano, b.cursor_span_pk)
        )
        return moved and not done
