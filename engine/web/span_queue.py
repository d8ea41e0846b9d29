"""``/ui/queue?rule=...``: the annotation queue over the spans a rule scored.

The same page and keys as a run's queue (``engine.web.labelling``): one span at a time,
its row as checks see it, the check's score hidden until it is labelled. Spans are drawn
from the ones the rule scored with the check last (at most ``MAX_SPANS``) by the same
strategies (``engine.annotation_queue``); an item is named ``TRACE:SPAN`` in the page's
links, its position in that draw only inside one request.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse

from engine import annotation_queue, catalog
from engine.annotation_queue import STRATEGIES, Candidate
from engine.errors import NotFoundError
from engine.storage.label_sql import SPAN, LabelName, label_store
from engine.storage.rule_records import ScoreStatus
from engine.storage.rule_sql import rule_store
from engine.storage.span_label_sql import SpanKey, span_label_queries
from engine.storage.span_sql import span_store
from engine.web.pages import not_found, render, services_of, who

#: The spans a queue draws from: the rule's latest scored ones.
MAX_SPANS = 5000


def key_text(key: SpanKey) -> str:
    """``TRACE:SPAN``, how a span is named in the queue's links."""
    return f"{key[0]}:{key[1]}"


def parse_key(text: str) -> SpanKey | None:
    """The span ``TRACE:SPAN`` names, or None."""
    trace, _, span = text.strip().lower().partition(":")
    return (trace, span) if len(trace) == 32 and len(span) == 16 else None


def queue_url(rule: str, check: str, labels: str, strategy: str, **extra: Any) -> str:
    """The span queue's address."""
    params = {"rule": rule, "check": check, "labels": labels, "strategy": strategy, **extra}
    return "/ui/queue?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _candidates(
    request: Request, tenant_id: str, rule_id: str, check: str, name: str
) -> tuple[list[SpanKey], list[Candidate]]:
    db = services_of(request).db
    check_name, version = catalog.split_ref(check)
    outcomes = span_label_queries(db).rule_outcomes(
        tenant_id, rule_id, check_name, version, MAX_SPANS
    )
    keys = sorted(outcomes)
    given: dict[SpanKey, dict[str, Any]] = {}
    for label in label_store(db).list_labels(tenant_id, name=name, kind=SPAN):
        if label.trace_id and label.span_id:
            given.setdefault((label.trace_id, label.span_id), {})[label.annotator] = label.value
    out = []
    for i, key in enumerate(keys):
        o = outcomes[key]
        ok = o.status == ScoreStatus.SCORED.value
        out.append(
            Candidate(i, o.score if ok else None, o.passed if ok else None, given.get(key, {}))
        )
    return keys, out


def span_queue_page(
    request: Request,
    rule: str,
    check: str,
    labels: str,
    strategy: str,
    annotator: str | None,
    last: str | None,
    skip: str,
    fields: tuple[str, ...],
    choices: Any,
) -> HTMLResponse:
    """The queue's page over the spans ``rule`` scored with ``check``."""
    principal, session = who(request)
    db = services_of(request).db
    try:
        found = rule_store(db).get_rule(principal.tenant_id, rule)
        declared: LabelName = label_store(db).get_name(principal.tenant_id, labels)
    except NotFoundError as exc:
        return not_found(request, session, str(exc))
    if strategy not in STRATEGIES:
        strategy = "random"
    who_labels = annotator or f"key:{principal.key_id}"
    keys, candidates = _candidates(request, principal.tenant_id, found.id, check, labels)
    position = {key: i for i, key in enumerate(keys)}
    skipped_keys = [k for k in (parse_key(t) for t in skip.split(",")) if k is not None]
    skipped = [position[k] for k in skipped_keys if k in position]
    index = annotation_queue.next_row(candidates, who_labels, strategy, found.id, skipped)
    key = keys[index] if index is not None else None
    data = span_store(db).rows_of(principal.tenant_id, [key]).get(key, {}) if key else {}
    previous = None
    last_key = parse_key(last) if last else None
    if last_key is not None and last_key in position:
        c = candidates[position[last_key]]
        previous = {
            "row": last_key[1],
            "mine": c.labels.get(who_labels),
            "check": c.score,
            "passed": c.passed,
        }
    hidden = [
        ("rule", rule), ("check", check), ("labels", labels), ("strategy", strategy),
        ("annotator", who_labels),
    ]  # fmt: skip
    if key is not None:
        hidden += [("trace_id", key[0]), ("span_id", key[1])]
    return render(
        request,
        "queue.html",
        session,
        rule=found.name,
        run=None,
        check=check,
        labels=labels,
        declared=declared,
        strategy=strategy,
        strategies=STRATEGIES,
        annotator=who_labels,
        row=None if key is None else key[1],
        trace_id=None if key is None else key[0],
        hidden=hidden,
        fields=[(f, data[f]) for f in fields if f in data],
        choices=choices(declared),
        previous=previous,
        progress=annotation_queue.progress(candidates),
        skip_url=queue_url(
            rule,
            check,
            labels,
            strategy,
            annotator=annotator,
            skip=",".join(key_text(k) for k in [*skipped_keys, *([key] if key else [])]),
        ),
        agreement_url="/ui/agreement?"
        + urlencode({"check": check, "labels": labels, "rule": rule}),
    )
