"""``/ui/rules``: online scoring, live. The rules with their backlogs and skips, and per
rule a Live page: its pass rate and mean over time (one line per check version, the
series of ``GET /v1/rules/{name}/series``), its latest failing spans with links to their
traces, and how many of its scores stand in each status (backlog and typed skips)."""

from __future__ import annotations

import time

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from engine.agreement.corrected import rule_corrected_pass_rates
from engine.errors import InvalidRequestError, NotFoundError
from engine.online.series import series
from engine.storage.label_sql import label_store
from engine.storage.live_sql import recent_failures
from engine.storage.rule_records import ScoreStatus
from engine.storage.rule_sql import rule_store
from engine.storage.score_sql import score_store
from engine.web.line_chart import Line, line_svg
from engine.web.pages import not_found, page_router, render, services_of, who

router = page_router()

#: the windows the page offers: (label, length, bucket) in seconds
WINDOWS = {"1h": (3600, 300), "24h": (86_400, 3600), "7d": (7 * 86_400, 6 * 3600)}
MAX_POINTS = 1_000_000
BACKLOG = (ScoreStatus.PENDING.value, ScoreStatus.QUEUED.value)


@router.get("/rules", response_class=HTMLResponse)
def rules_page(request: Request) -> HTMLResponse:
    principal, session = who(request)
    db = services_of(request).db
    scores = score_store(db)
    rows = []
    for rule in rule_store(db).list_rules(principal.tenant_id):
        counts = scores.counts(principal.tenant_id, rule.id)
        rows.append(
            {
                "rule": rule,
                "counts": counts,
                "backlog": sum(counts.get(s, 0) for s in BACKLOG),
                "scored": counts.get(ScoreStatus.SCORED.value, 0),
            }
        )
    return render(request, "rules.html", session, rows=rows)


@router.get("/rules/{name}", response_class=HTMLResponse)
def live_page(
    request: Request,
    name: str,
    window: str = Query("24h", pattern="^(1h|24h|7d)$"),
    labels: str | None = Query(None, max_length=100),
) -> HTMLResponse:
    principal, session = who(request)
    db = services_of(request).db
    try:
        rule = rule_store(db).get_rule(principal.tenant_id, name)
    except NotFoundError:
        return not_found(request, session, f"rule {name!r}")
    length, bucket = WINDOWS[window]
    bucket_ns = bucket * 10**9
    end = time.time_ns()
    end += bucket_ns - end % bucket_ns  # the current bucket is whole on the chart
    start = end - length * 10**9
    scores = score_store(db)
    points = scores.series_points(principal.tenant_id, rule.id, start, end, MAX_POINTS)
    lines = series(points, bucket_ns)
    named = {key: f"{key[0]}@{key[1]}" if key[1] is not None else key[0] for key, _ in lines}
    rates = [Line(named[key], [(b, rate, n) for b, n, _, rate in pts]) for key, pts in lines]
    means = [Line(named[key], [(b, mean, n) for b, n, mean, _ in pts]) for key, pts in lines]
    counts = scores.counts(principal.tenant_id, rule.id)
    corrected, corrected_error = None, None
    if labels:  # only when asked: the correction reads an agreement report per check
        try:
            corrected = rule_corrected_pass_rates(
                label_store(db), services_of(request).store, principal.tenant_id, name, labels
            )["checks"]
        except (NotFoundError, InvalidRequestError) as exc:
            corrected_error = str(exc)
    return render(
        request,
        "live.html",
        session,
        rule=rule,
        window=window,
        windows=list(WINDOWS),
        scored=sum(n for _, pts in lines for _, n, _, _ in pts),
        rate_chart=line_svg(f"pass rate of {rule.name}", rates, start, end, bucket_ns, rate=True),
        mean_chart=line_svg(f"mean score of {rule.name}", means, start, end, bucket_ns, rate=False),
        failures=recent_failures(db, principal.tenant_id, rule.id),
        counts=sorted(counts.items()),
        backlog=sum(counts.get(s, 0) for s in BACKLOG),
        labels=labels,
        corrected=corrected,
        corrected_error=corrected_error,
    )
