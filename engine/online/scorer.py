"""Online scoring: spans matched by rules become durable runs, and their results come back
onto the spans.

Ingestion only queues (:meth:`OnlineScorer.enqueue`: the rules' filters and sampling,
then one insert of pending scores) and wakes the scorer's thread. A pass first asks the
database, in one statement, whether anything waits (a pending score, a run not linked, a
running backfill): an idle server's pass is that one read. Otherwise that thread, on each
pass:

- writes the results of the rules' runs back onto their spans as each chunk's results
  are stored, not when the run ends (:mod:`engine.online.linking`);
- claims pending scores per rule version (up to ``batch_spans`` spans) and submits them as
  one durable run through :class:`~engine.runs.service.RunService`'s public API, so the
  run is exactly-once, fair between tenants, within quotas, sandboxed and metered;
- steps running backfills (:mod:`engine.online.backfill`);
- frees or recovers batches a dead process claimed and never recorded.

How batches are cut (why: a run costs a fixed overhead, and a trickle of spans must not
cost a run each, yet a span must not wait for a full batch). A partial batch of a rule
version leaves once its oldest span has waited ``linger_seconds`` and no run of that
version is still waiting to start: while one waits, new spans could only queue behind it,
so they gather into the next batch instead. Under load batches grow by themselves; idle,
a span leaves after the linger. Full batches (a backlog, a backfill) leave while fewer
than ``MAX_WAITING_RUNS`` runs of the version wait. The thread sleeps until the earliest
of: a span queued in this process, a partial batch's linger ending, ``poll_seconds``
while runs are open (their results are read as they land), ``tick_seconds`` otherwise (a
span queued by another API node is seen within it).

Before a batch is submitted its rule version's daily LLM token budget is checked against
the tokens its runs spent today through the gateway meter; when spent, the batch's scores
are ``budget`` (backfillable later).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import Engine

from engine.errors import NotFoundError, QuotaExceededError, ScoreboxError, StorageError
from engine.logs import Repeated
from engine.online.backfill import BackfillStepper
from engine.online.linking import ResultLinker
from engine.online.picking import picked
from engine.online.rules import score_ref
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import Store
from engine.storage.backfill_sql import backfill_store
from engine.storage.rule_records import Batch, ScoreStatus, SpanView
from engine.storage.rule_sql import rule_store
from engine.storage.score_queue_sql import BATCH_LABEL, score_queue
from engine.storage.span_sql import span_store
from engine.tenancy.auth import Principal

log = logging.getLogger("scorebox.online")

#: Runs one rule version may start in one pass when its pending spans fill whole batches.
MAX_BATCHES_PER_TICK = 8
#: Runs of one rule version that may wait to start (full batches; a partial batch: none).
MAX_WAITING_RUNS = 2
#: Longest pause of a tenant whose queued-runs quota is full (its spans stay pending).
QUOTA_PAUSE_SECONDS = 1.0

__all__ = ["OnlineLimits", "OnlineScorer"]


class OnlineLimits:
    """How online scoring batches and bounds its work."""

    def __init__(
        self,
        *,
        tick_seconds: float = 0.2,
        batch_spans: int = 500,
        backlog_max: int = 100_000,
        orphan_seconds: float = 60.0,
        backfill_page: int = 500,
        linger_seconds: float = 0.05,
        poll_seconds: float = 0.05,
    ) -> None:
        #: the longest sleep with nothing in flight (spans queued by other API nodes)
        self.tick_seconds = tick_seconds
        self.batch_spans = batch_spans
        #: how long a partial batch waits for more spans before it leaves
        self.linger_seconds = linger_seconds
        #: the sleep while runs are open: their results are linked within it
        self.poll_seconds = poll_seconds
        #: scores waiting per tenant past which new matches are ``backlog`` (backfillable)
        self.backlog_max = backlog_max
        #: a batch claimed this long ago without a recorded run belongs to a dead process
        self.orphan_seconds = orphan_seconds
        self.backfill_page = backfill_page

    @classmethod
    def from_settings(cls, settings: Settings) -> OnlineLimits:
        """The operator's SCOREBOX_ONLINE_* settings."""
        return cls(
            tick_seconds=settings.online_tick_seconds,
            batch_spans=settings.online_batch_spans,
            backlog_max=settings.online_backlog_max,
        )


def _day_start() -> datetime:
    now = datetime.now(UTC)
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


class _Gauges:
    def __init__(self, backlog: Callable[[], int]) -> None:
        self._backlog = backlog

    def collect(self) -> Any:
        yield GaugeMetricFamily(
            "scorebox_online_backlog",
            "Span scores waiting (pending, or in a run whose results are not back).",
            value=self._backlog(),
        )


class OnlineScorer:
    """Queues matching spans at ingestion and scores them in the background."""

    def __init__(
        self,
        store: Store,
        runs: RunService,
        db: Engine,
        metrics: Metrics | None = None,
        limits: OnlineLimits | None = None,
    ) -> None:
        self.store = store
        self.runs = runs
        self.db = db
        self.limits = limits or OnlineLimits.from_settings(runs.settings)
        self.rules = rule_store(db)
        self.scores = score_queue(db)
        self.backfills = backfill_store(db)
        self.spans = span_store(db)
        self._stop = threading.Event()
        #: set by :meth:`enqueue` (and :meth:`stop`): the thread's sleep ends at once
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: when the thread must pass again at the latest (monotonic), set by each pass
        self._next_pass = 0.0
        #: per rule version, its runs not started yet (read while linking)
        self._waiting_runs: dict[str, int] = {}
        #: a tick that fails alike every time: one warning per interval, no traceback
        self._failures = Repeated(log, "online scoring tick")
        self._last_orphans = 0.0
        self._tenant_pause: dict[str, float] = {}
        self.linker = ResultLinker(store, self.scores)
        self.stepper = BackfillStepper(
            self.rules,
            self.scores,
            self.backfills,
            page_spans=self.limits.backfill_page,
            batch_spans=self.limits.batch_spans,
            count=self._count,
        )
        self._queued: Counter | None = None
        if metrics is not None:
            self._queued = Counter(
                "scorebox_online_scores",
                "Span scores queued or skipped at ingestion and in backfills, by status.",
                ["status"],
                registry=metrics.registry,
            )
            metrics.registry.register(_Gauges(self._backlog_or_zero))

    # ---- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start the background thread."""
        self._thread = threading.Thread(target=self._loop, name="scorebox-online", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; work claimed and not submitted is freed on the next start."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()  # before the pass: a span queued during it wakes the next
            started = time.monotonic()
            try:
                self.tick()
            except StorageError:
                # the database is away: the storage layer says so once per interval
                self._next_pass = started + self.limits.tick_seconds
            except Exception as exc:  # the loop must live: the next pass retries
                self._failures.failed(exc)
                self._next_pass = started + self.limits.tick_seconds
            else:
                self._failures.ok()
            self._wake.wait(max(0.0, self._next_pass - time.monotonic()))

    def _backlog_or_zero(self) -> int:
        try:
            return self.scores.backlog()
        except ScoreboxError:
            return 0

    def _count(self, counts: dict[str, int]) -> None:
        if self._queued is None:
            return
        for status, n in counts.items():
            if n and status != "already":
                self._queued.labels(status).inc(n)

    # ---- ingestion ----------------------------------------------------------------

    def enqueue(self, tenant_id: str, views: Sequence[SpanView]) -> None:
        """Queue the spans that the tenant's enabled rules pick (no scoring here)."""
        if not views:
            return
        rules = self.rules.enabled_rules(tenant_id)
        if not rules:
            return
        backlog_full: bool | None = None
        for rule in rules:
            refs = [v.ref for v in views if picked(v, rule.current)]
            if not refs:
                continue
            if backlog_full is None:
                backlog_full = self.scores.backlog(tenant_id) >= self.limits.backlog_max
            counts = self.scores.enqueue(
                tenant_id, rule.id, rule.current, refs, origin="live", backlog_full=backlog_full
            )
            self._count(counts)
            if counts.get("queued"):
                self._wake.set()  # the linger starts now, not at the next poll

    # ---- the background work ------------------------------------------------------------

    def tick(self) -> None:
        """One pass: recover orphans now and then, link results, step backfills, submit.
        Sets when the next pass is due at the latest."""
        now = time.monotonic()
        if now - self._last_orphans >= min(10.0, self.limits.orphan_seconds or 10.0):
            self._last_orphans = now
            self._recover_orphans()
        if not self.scores.has_work():
            # idle: nothing to link, step or submit (what the three reads below would find)
            self._waiting_runs = {}
            self._next_pass = time.monotonic() + self.limits.tick_seconds
            return
        # first: it tells which rule versions have runs waiting
        open_runs, self._waiting_runs = self.linker.link()
        backfilling = self.stepper.step_running()
        due = self._dispatch()
        # runs open (this pass's submissions among them): their results are read soon
        busy = open_runs or any(self._waiting_runs.values()) or backfilling or due < 0
        pause = self.limits.poll_seconds if busy else self.limits.tick_seconds
        if due >= 0:
            pause = min(pause, due)
        self._next_pass = time.monotonic() + pause

    def _recover_orphans(self) -> None:
        for token, tenant_id, rule_id, version_id in self.scores.orphan_tokens(
            self.limits.orphan_seconds
        ):
            found = self.store.list_runs(tenant_id, limit=1, label=(BATCH_LABEL, token))
            if found:
                self.scores.recover(token, tenant_id, rule_id, version_id, found[0].id)
                log.info("online batch %s: run %s found after a restart", token, found[0].id)
            else:
                self.scores.release(token)
                log.info("online batch %s: never submitted, queued again", token)

    def _dispatch(self) -> float:
        """Submit the batches that are due (see the module docstring). Returns the seconds
        until a partial batch left waiting is due (infinite: none; negative: one is held
        back behind its version's waiting run, so the caller polls)."""
        due = float("inf")
        now = datetime.now(UTC)
        for group in self.scores.pending_groups():
            tenant_id, version_id = group.tenant_id, group.rule_version_id
            pause = self._tenant_pause.get(tenant_id, 0.0) - time.monotonic()
            if pause > 0:
                due = min(due, pause)
                continue
            waiting = self._waiting_runs.get(version_id, 0)
            full = group.rows >= self.limits.batch_spans
            if waiting >= (MAX_WAITING_RUNS if full else 1):
                due = -1.0  # held back: it leaves when a run starts
                continue
            if not full:
                lingered = (now - group.oldest).total_seconds()
                if lingered < self.limits.linger_seconds:
                    due = min(due, self.limits.linger_seconds - lingered)
                    continue
            # a full batch may leave more behind: several runs a pass, not one
            for _ in range(MAX_BATCHES_PER_TICK):
                batch = self.scores.claim(tenant_id, version_id, self.limits.batch_spans)
                if batch is None:
                    break
                if self._submit(batch):
                    waiting += 1
                    self._waiting_runs[version_id] = waiting
                if len(batch.spans) < self.limits.batch_spans or waiting >= MAX_WAITING_RUNS:
                    break
        return due

    def _spent_today(self, rule_id: str, tenant_id: str) -> int:
        spent, open_runs = self.scores.rule_tokens(rule_id, _day_start())
        for run_id in open_runs:
            try:
                usage = self.store.get_run(tenant_id, run_id).llm_usage or {}
            except NotFoundError:
                continue
            spent += int(usage.get("total_tokens", 0))
        return spent

    def _submit(self, batch: Batch) -> bool:
        """Submit a claimed batch as a run; False when no run was made (skipped, paused)."""
        try:
            rule, version = self.rules.get_version(batch.tenant_id, batch.rule_version_id)
        except NotFoundError:
            self.scores.skip_batch(batch.token, ScoreStatus.ERROR, "the rule was deleted")
            return False
        budget = version.daily_token_budget
        if budget is not None:
            spent = self._spent_today(rule.id, batch.tenant_id)
            if spent >= budget:
                self.scores.skip_batch(
                    batch.token,
                    ScoreStatus.BUDGET,
                    f"the rule's daily LLM token budget ({budget}) is spent ({spent} today): "
                    "raise daily_token_budget, or backfill these spans tomorrow",
                )
                self._count({ScoreStatus.BUDGET.value: len(batch.spans)})
                return False
        found = self.spans.rows_of(batch.tenant_id, batch.spans)
        missing = [key for key in batch.spans if key not in found]
        if missing:
            batch = self.scores.drop_spans(
                batch,
                missing,
                "the span was pruned (SCOREBOX_SPAN_RETENTION_DAYS) before it was scored",
            )
            if not batch.spans:
                return False
        rows = [found[key] for key in batch.spans]
        labels = {
            "scorebox.rule": rule.name,
            "scorebox.rule_version": str(version.version),
            BATCH_LABEL: batch.token,
        }
        try:
            principal = Principal(self.store.get_tenant(batch.tenant_id), None)
            run = self.runs.submit_run(
                principal, [score_ref(c) for c in version.checks], rows, None, labels
            )
        except QuotaExceededError as exc:
            # the tenant's queued-runs quota: wait, the scores stay queued for later. Not
            # the Retry-After meant for clients (30 s): counting the tenant's runs again
            # each second costs one query, and spans must not wait half a minute
            self.scores.release(batch.token)
            pause = min(QUOTA_PAUSE_SECONDS, exc.retry_after_seconds or QUOTA_PAUSE_SECONDS)
            self._tenant_pause[batch.tenant_id] = time.monotonic() + pause
            return False
        except StorageError:
            self.scores.release(batch.token)
            raise
        except ScoreboxError as exc:  # a pinned version deleted, a tenant disabled...
            self.scores.skip_batch(batch.token, ScoreStatus.ERROR, f"not scored: {exc}")
            return False
        try:
            self.scores.attach_run(batch, run.id)
        except StorageError:
            # the run carries the token: the orphan pass finds it and records it
            log.warning("online batch %s: run %s not recorded yet", batch.token, run.id)
        return True
