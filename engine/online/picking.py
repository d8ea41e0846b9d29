"""Whether a rule version scores a span: its filter, then its sampling.

One decision, made alike at ingestion (:meth:`~engine.online.scorer.OnlineScorer.enqueue`),
in a backfill (:mod:`engine.online.backfill`) and in a rule's preview. Pure.
"""

from __future__ import annotations

from engine.online.filters import matches
from engine.online.sampling import sampled
from engine.storage.rule_records import RuleVersion, SpanView


def picked(view: SpanView, version: RuleVersion) -> bool:
    """Whether a rule version scores this span: its filter, then its sampling (the same
    decision live and in a backfill)."""
    return matches(view.fields, version.filter) and sampled(view.ref.trace_id, version.sample_rate)
