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
from engine.runs.compare import compare_runs
from engine.web.pages import (
    not_found,
    page_router,
    render,
    services_of,
    who,
)

router = page_router()


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str = "", b: str = "") -> HTMLResponse:
    principal, session = who(request)
    store = services_of(request).store
    runs = store.list_runs(principal.tenant_id, 200)
    comparison = None
    error = None
    if a and b:
        try:
            comparison = compare_runs(store, principal.tenant_id, a, b)
        except NotFoundError:
            return not_found(request, session, f"run {a} or {b}")
        except ScoreboxError as exc:
            error = str(exc)
    return render(
        request, "compare.html", session, runs=runs, a=a, b=b, cmp=comparison, error=error
    )
