"""``/ui/compare``: two runs side by side."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import (
    HTMLResponse,
)

from engine.errors import (
    NotFoundError,
    ScoreboxError,
)
from engine.runs.compare import RunComparison, compare_runs
from engine.runs.summary import RunSummary
from engine.tenancy.auth import Principal
from engine.web import charts
from engine.web.pages import (
    not_found,
    page_router,
    render,
    services_of,
    who,
)

router = page_router()


def _scores(name: str, summary: RunSummary) -> dict[str, charts.RunScores]:
    """Per check name, what the compare chart draws of one run."""
    out = {}
    for s, bins in zip(summary.checks, summary.histograms, strict=True):
        passed = round(s.pass_rate * s.scored) if s.pass_rate is not None else None
        out[s.check] = charts.RunScores(name, passed, s.scored, bins, s.max)
    return out


def _compare_charts(
    request: Request, principal: Principal, comparison: RunComparison
) -> dict[str, str]:
    """One chart per shared check, both runs overlaid, from each run's summary."""
    services = services_of(request)
    sides = []
    for name, run_id in (("A", comparison.run_a), ("B", comparison.run_b)):
        run = services.store.get_run(principal.tenant_id, run_id)
        sides.append(_scores(name, services.runs.summary(run)))
    a, b = sides
    return {
        c.check: charts.compare_svg(c.check, a[c.check], b[c.check])
        for c in comparison.checks
        if c.check in a and c.check in b
    }


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str = "", b: str = "") -> HTMLResponse:
    principal, session = who(request)
    store = services_of(request).store
    runs = store.list_runs(principal.tenant_id, 200)
    comparison = None
    error = None
    figures: dict[str, str] = {}
    if a and b:
        try:
            comparison = compare_runs(store, principal.tenant_id, a, b)
            figures = _compare_charts(request, principal, comparison)
        except NotFoundError:
            return not_found(request, session, f"run {a} or {b}")
        except ScoreboxError as exc:
            error = str(exc)
    return render(
        request,
        "compare.html",
        session,
        runs=runs,
        a=a,
        b=b,
        cmp=comparison,
        error=error,
        charts=figures,
    )
