"""``/ui/agreement`` and ``/ui/queue``: can this check be trusted, and labelling rows.

The agreement page draws the report of ``GET /v1/agreement`` (the same glue,
``engine.agreement``): the confusion matrix as a heatmap, the ROC curve with the chosen
threshold, the figures with their intervals, the verdict and the disagreements. The
queue shows one run row at a time, the check's score hidden until the row is labelled,
with keyboard shortcuts (``static/queue.js``); with ``rule=``, the spans a rule scored
(``engine.web.span_queue``).
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from engine import annotation_queue, catalog
from engine.agreement.corrected import corrected_pass_rates
from engine.agreement.labels import LabelInput, add_labels
from engine.agreement.report import check_report
from engine.annotation_queue import STRATEGIES, Candidate
from engine.calibration.report import ReportOptions
from engine.errors import InvalidRequestError, NotFoundError, ScoreboxError
from engine.storage import Run
from engine.storage.label_sql import LabelName, label_store
from engine.web import span_queue
from engine.web.pages import not_found, page_router, render, run_or_none, services_of, who
from engine.web.session import csrf_ok

router = page_router()

FIELDS = ("scenario_input", "model_input", "messages", "model_output", "scenario_result")
MAX_DISAGREEMENTS_SHOWN = 50


def _heat(value: int, top: int) -> str:
    """A blue from white (0) to dark (the largest cell)."""
    share = value / top if top else 0.0
    r, g, b = (int(255 - share * (255 - c)) for c in (43, 108, 176))
    return f"#{r:02x}{g:02x}{b:02x}"


def confusion_svg(confusion: dict[str, Any]) -> str:
    """The confusion matrix as an SVG heatmap: rows people, columns the check."""
    rows, cols, matrix = confusion["labels"], confusion["check_labels"], confusion["matrix"]
    cell, left, top = 56, 90, 40
    width, height = left + cell * len(cols) + 10, top + cell * len(rows) + 30
    peak = max((v for row in matrix for v in row), default=0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" aria-label="confusion matrix">',
        f'<text x="{left}" y="14" font-size="12">the check →</text>',
        f'<text x="4" y="{top + 14}" font-size="12">people ↓</text>',
    ]
    for j, col in enumerate(cols):
        x = left + j * cell + cell / 2
        parts.append(
            f'<text x="{x}" y="{top - 6}" font-size="12" text-anchor="middle">'
            f"{escape(str(col))}</text>"
        )
    for i, (label, row) in enumerate(zip(rows, matrix, strict=True)):
        y = top + i * cell
        parts.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + 4}" font-size="12" text-anchor="end">'
            f"{escape(str(label))}</text>"
        )
        for j, value in enumerate(row):
            x = left + j * cell
            ink = "#fff" if peak and value / peak > 0.55 else "#1a202c"
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{_heat(value, peak)}"><title>people {escape(str(label))}, '
                f"check {escape(str(cols[j]))}: {value}</title></rect>"
                f'<text x="{x + cell / 2 - 1}" y="{y + cell / 2 + 4}" font-size="14" '
                f'text-anchor="middle" fill="{ink}" data-cell="{i},{j}">{value}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def roc_svg(sweep: list[dict[str, Any]], chosen: float | None) -> str:
    """The ROC curve (TPR against 1 - TNR), the chosen threshold marked."""
    size, pad = 240, 30
    pts = [(1.0, 1.0)] + [(1 - p["tnr"], p["tpr"]) for p in sweep] + [(0.0, 0.0)]

    def xy(fpr: float, tpr: float) -> str:
        return f"{pad + fpr * size:.1f},{pad + (1 - tpr) * size:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 2 * pad}" '
        f'height="{size + 2 * pad}" '
        'role="img" aria-label="ROC curve">',
        f'<rect x="{pad}" y="{pad}" width="{size}" height="{size}" fill="none" stroke="#a0aec0"/>',
        f'<line x1="{pad}" y1="{pad + size}" x2="{pad + size}" y2="{pad}" '
        'stroke="#cbd5e0" stroke-dasharray="4"/>',
        '<polyline fill="none" stroke="#2b6cb0" stroke-width="2" '
        f'points="{" ".join(xy(*p) for p in pts)}"/>',
        f'<text x="{pad}" y="{pad + size + 20}" font-size="11">1 - TNR</text>',
        f'<text x="2" y="{pad - 8}" font-size="11">TPR</text>',
    ]
    point = next((p for p in sweep if p["threshold"] == chosen), None)
    if point is not None:
        cx, cy = xy(1 - point["tnr"], point["tpr"]).split(",")
        parts.append(
            f'<circle cx="{cx}" cy="{cy}" r="5" fill="#c53030"><title>threshold {chosen:g}: '
            f"TPR {point['tpr']:.3f}, TNR {point['tnr']:.3f}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


FIGURES = (
    ("tpr", "TPR (Wilson)"),
    ("tnr", "TNR (Wilson)"),
    ("accuracy", "accuracy"),
    ("f1", "F1"),
    ("mcc", "MCC"),
    ("kappa", "Cohen's kappa"),
    ("auc", "AUC"),
    ("spearman", "Spearman's rho"),
    ("kendall_tau_b", "Kendall's tau-b"),
    ("mae", "mean absolute error"),
)


def _figures(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [(title, report[key]) for key, title in FIGURES if key in report]
    for kind, fig in (report.get("weighted_kappa") or {}).items():
        out.append((f"weighted kappa ({kind})", fig))
    if report.get("annotators"):
        out.append(("Krippendorff's alpha (people)", report["annotators"]["alpha"]))
    return out


@router.get("/agreement", response_class=HTMLResponse)
def agreement_page(
    request: Request,
    check: str,
    labels: str,
    run: str | None = None,
    seed: int = 0,
    rule: str | None = None,
) -> HTMLResponse:
    principal, session = who(request)
    services = services_of(request)
    try:
        report = check_report(
            services.store,
            label_store(services.db),
            principal.tenant_id,
            check,
            labels,
            run,
            ReportOptions(seed=seed, n_resamples=2000),
            rule=rule,
        )
    except NotFoundError as exc:
        return not_found(request, session, str(exc))
    except InvalidRequestError as exc:
        return render(
            request, "agreement.html", session, status_code=422, error=str(exc), report=None
        )
    chosen = (report.get("suggested_threshold") or {}).get("value")
    corrected = None
    if run is not None:
        rates = corrected_pass_rates(
            services.store, label_store(services.db), principal.tenant_id, run, labels
        )
        corrected = next((c for c in rates["checks"] if c["check"] == report["check"]), None)
    return render(
        request,
        "agreement.html",
        session,
        error=None,
        report=report,
        figures=_figures(report),
        confusion=confusion_svg(report["confusion"]) if report.get("confusion") else None,
        roc=roc_svg(report["sweep"], chosen) if report.get("sweep") else None,
        disagreements=report["disagreements"][:MAX_DISAGREEMENTS_SHOWN],
        queue=_queue_url(run, check, labels, "disagreements")
        if run
        else (span_queue.queue_url(rule, check, labels, "disagreements") if rule else None),
        corrected=corrected,
    )


def _queue_url(run: str | None, check: str, labels: str, strategy: str, **extra: Any) -> str:
    params = {"run": run or "", "check": check, "labels": labels, "strategy": strategy, **extra}
    return "/ui/queue?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _check_index(run: Run, ref: str) -> int:
    name, version = catalog.split_ref(ref)
    for i, c in enumerate(run.checks):
        if c.name == name and (version is None or c.version == version):
            return i
    raise NotFoundError(f"run {run.id} has no check {ref!r}")


def _candidates(
    request: Request, tenant_id: str, run: Run, index: int, name: str
) -> list[Candidate]:
    services = services_of(request)
    results = {r.row_index: r for r in services.store.results_page(run.id, 0, run.row_count, index)}
    given: dict[int, dict[str, Any]] = {}
    for label in label_store(services.db).list_labels(tenant_id, name=name, run_id=run.id):
        given.setdefault(label.row, {})[label.annotator] = label.value
    out = []
    for row in range(run.row_count):
        r = results.get(row)
        ok = r is not None and r.status == "ok"
        out.append(
            Candidate(
                row,
                r.score if ok and r else None,
                r.passed if ok and r else None,
                given.get(row, {}),
            )
        )
    return out


def _choices(declared: LabelName) -> list[tuple[str, str, str]]:
    """(value, caption, key) of the label's buttons."""
    if declared.type == "bool":
        return [("true", "pass", "y"), ("false", "fail", "n")]
    if declared.type in ("ordinal", "category"):
        return [
            (str(level), str(level), str(i + 1) if i < 9 else "")
            for i, level in enumerate(declared.levels or [])
        ]
    return []


@router.get("/queue", response_class=HTMLResponse)
def queue_page(
    request: Request,
    check: str,
    labels: str,
    run: str | None = None,
    rule: str | None = None,
    strategy: str = "random",
    annotator: str | None = None,
    last: str | None = None,
    skip: str = "",
) -> HTMLResponse:
    if rule is not None:
        return span_queue.span_queue_page(
            request, rule, check, labels, strategy, annotator, last, skip, FIELDS, _choices
        )
    principal, session = who(request)
    services = services_of(request)
    if run is None:
        return not_found(request, session, "a queue: name a run (run=) or a rule (rule=)")
    last_row = int(last) if last is not None and last.isdigit() else None
    found = run_or_none(request, principal, run)
    if found is None:
        return not_found(request, session, f"run {run}")
    try:
        index = _check_index(found, check)
        declared = label_store(services.db).get_name(principal.tenant_id, labels)
    except NotFoundError as exc:
        return not_found(request, session, str(exc))
    if strategy not in STRATEGIES:
        strategy = "random"
    who_labels = annotator or f"key:{principal.key_id}"
    candidates = _candidates(request, principal.tenant_id, found, index, labels)
    skipped = [int(s) for s in skip.split(",") if s.strip().isdigit()]
    row = annotation_queue.next_row(candidates, who_labels, strategy, found.id, skipped)
    data = services.store.load_rows(found.id, [row]).get(row, {}) if row is not None else {}
    previous = None
    if last_row is not None and 0 <= last_row < len(candidates):
        c = candidates[last_row]
        previous = {
            "row": last_row,
            "mine": c.labels.get(who_labels),
            "check": c.score,
            "passed": c.passed,
        }
    return render(
        request,
        "queue.html",
        session,
        run=found,
        check=check,
        labels=labels,
        declared=declared,
        strategy=strategy,
        strategies=STRATEGIES,
        annotator=who_labels,
        row=row,
        fields=[(f, data[f]) for f in FIELDS if f in data],
        choices=_choices(declared),
        previous=previous,
        progress=annotation_queue.progress(candidates),
        skip_url=_queue_url(
            run,
            check,
            labels,
            strategy,
            annotator=annotator,
            skip=",".join(map(str, [*skipped, row])),
        ),
        agreement_url="/ui/agreement?" + urlencode({"check": check, "labels": labels, "run": run}),
    )


@router.post("/queue")
async def queue_label(request: Request) -> Response:
    principal, session = who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return HTMLResponse("the form expired: reload the page", status_code=403)
    services = services_of(request)
    run, check, labels = (str(form.get(k) or "") for k in ("run", "check", "labels"))
    strategy = str(form.get("strategy") or "random")
    annotator = str(form.get("annotator") or f"key:{principal.key_id}")
    rule = str(form.get("rule") or "")
    if rule:
        trace_id, span_id = (str(form.get(k) or "") for k in ("trace_id", "span_id"))
        given = LabelInput(
            labels, None, None, form.get("value"), annotator, None, trace_id, span_id
        )
        try:
            add_labels(services.store, label_store(services.db), principal.tenant_id, [given])
        except ScoreboxError as exc:
            return HTMLResponse(escape(str(exc)), status_code=422)
        last = span_queue.key_text((trace_id.lower(), span_id.lower()))
        back = span_queue.queue_url(rule, check, labels, strategy, annotator=annotator, last=last)
        return RedirectResponse(back, status_code=303)
    try:
        row = int(str(form.get("row")))
        add_labels(
            services.store,
            label_store(services.db),
            principal.tenant_id,
            [LabelInput(labels, run, row, form.get("value"), annotator, None)],
        )
    except (ValueError, ScoreboxError) as exc:
        return HTMLResponse(escape(str(exc)), status_code=422)
    target = _queue_url(run, check, labels, strategy, annotator=annotator, last=row)
    return RedirectResponse(target, status_code=303)
