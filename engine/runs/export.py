"""Per-row results of a run: export (JSONL, CSV, one-file HTML report) and CI gates.

Pure: no engine imports, so ``scorebox --help`` stays fast. One record is one
check on one row: ``row_index, row_id, check, version, status, score, passed,
explanation, error, model, metadata`` and the row's inputs (``model_output,
scenario_input, scenario_result``). The CLI's ``-o`` files and the service's CSV
and NDJSON exports are all made of these records.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import InvalidRequestError

# re-exported (engine.cli.run reads it here)
from engine.names import DEFAULT_FAIL_ON as DEFAULT_FAIL_ON  # noqa: PLC0414
from engine.runs.cells import escape_cell

#: A result's own columns, as RowResult and the API's ResultItem name them.
RESULT_FIELDS = (
    "row_id",
    "check",
    "version",
    "status",
    "score",
    "passed",
    "explanation",
    "error",
    "model",
    "metadata",
)
INPUTS = ("model_output", "scenario_input", "scenario_result")
FIELDS = ("row_index", *RESULT_FIELDS, *INPUTS)

# Exit codes (README "Exit codes"): 0 gates passed; 1 scorebox could not run (bad
# input, server unreachable, run failed or cancelled); 2 usage error (click);
# 3 the checks fell below a gate; 130 interrupted.
EXIT_OK = 0
EXIT_COULD_NOT_RUN = 1
EXIT_GATE_FAILED = 3
EXIT_INTERRUPTED = 130


def record(
    row_index: int, result: Mapping[str, Any], row: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One flat record from a result (RowResult/ResultItem dump) and its input row; with
    no ``row``, the inputs a result carries itself (the service's NDJSON export)."""
    out: dict[str, Any] = {"row_index": row_index}
    for key in RESULT_FIELDS:
        out[key] = result.get(key)
    out["passed"] = passed(result)
    if out["row_id"] is None and row is not None:
        out["row_id"] = row.get("id")
    source = result if row is None else row
    for key in INPUTS:
        out[key] = source.get(key)
    return out


def passed(result: Mapping[str, Any]) -> bool | None:
    """Whether a result passes: the check's own pass flag (promptfoo, graders) where it
    has one, else a bool score; None for a number score or a row that did not score."""
    flag = result.get("passed")
    if flag is not None:
        return bool(flag)
    score = result.get("score")
    if result.get("status") == "ok" and isinstance(score, bool):
        return score
    return None


def write_records(path: Path, records: Sequence[Mapping[str, Any]], title: str) -> None:
    """Write by suffix: .jsonl/.ndjson, .csv, .tsv, .html/.htm (a self-contained report)."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    elif suffix in (".csv", ".tsv"):
        text = to_csv(records, delimiter="\t" if suffix == ".tsv" else ",")
    elif suffix in (".html", ".htm"):
        text = html_report(records, title)
    else:
        raise InvalidRequestError(
            f"{path}: unknown output format {suffix or '(none)'!r}; use .jsonl, .csv, .tsv or .html"
        )
    path.write_text(text, encoding="utf-8")


def to_csv(records: Iterable[Mapping[str, Any]], delimiter: str = ",") -> str:
    """CSV with a header of :data:`FIELDS`; booleans as true/false, None empty.

    Text cells that a spreadsheet would run as a formula get a leading ``'``
    (:func:`engine.runs.cells.escape_cell`); JSONL keeps the raw values.
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, delimiter=delimiter, extrasaction="ignore")
    writer.writeheader()
    for r in records:
        writer.writerow({k: escape_cell(_cell(r.get(k))) for k in FIELDS})
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


# --- gates --------------------------------------------------------------------------------


@dataclass
class Gates:
    """What makes a run fail in CI; see :func:`evaluate`."""

    fail_on: tuple[str, ...] = DEFAULT_FAIL_ON
    thresholds: dict[str, float] = field(default_factory=dict)
    max_failures: int | None = None


def _is_failure(r: Mapping[str, Any], fail_on: Sequence[str]) -> bool:
    return r.get("status") in fail_on or (r.get("status") == "ok" and passed(r) is False)


def check_value(records: Sequence[Mapping[str, Any]]) -> float | None:
    """The value a threshold is compared with: the pass rate of the check's own pass
    flags where it has them, else of a bool check (share of scored rows that are true),
    else the mean score of the rows that scored."""
    ok = [r for r in records if r.get("status") == "ok"]
    flags = [r["passed"] for r in ok if r.get("passed") is not None]
    if flags:
        return sum(1 for f in flags if f) / len(flags)
    scores = [r["score"] for r in ok if r.get("score") is not None]
    if not scores:
        return None
    if all(isinstance(s, bool) for s in scores):
        return sum(1 for s in scores if s) / len(scores)
    return sum(float(s) for s in scores) / len(scores)


def evaluate(records: Sequence[Mapping[str, Any]], gates: Gates) -> list[str]:
    """Every broken gate, as one line each; empty when the run passes."""
    problems: list[str] = []
    by_status: dict[str, int] = {}
    for r in records:
        if r.get("status") in gates.fail_on:
            by_status[str(r["status"])] = by_status.get(str(r["status"]), 0) + 1
    if by_status and gates.max_failures is None:
        counts = ", ".join(f"{k}={v}" for k, v in sorted(by_status.items()))
        problems.append(f"rows with a --fail-on status: {counts}")
    if gates.max_failures is not None:
        failures = sum(1 for r in records if _is_failure(r, gates.fail_on))
        if failures > gates.max_failures:
            problems.append(
                f"{failures} failing rows (false, or a --fail-on status) > "
                f"--max-failures {gates.max_failures}"
            )
    for name, minimum in gates.thresholds.items():
        mine = [r for r in records if name in (r.get("check"), _ref(r))]
        if not mine:
            problems.append(f"--threshold {name}: the run has no check {name!r}")
            continue
        value = check_value(mine)
        if value is None or value < minimum:
            shown = "no scored rows" if value is None else f"{value:.4g}"
            problems.append(f"{name}: {shown} < threshold {minimum:g}")
    return problems


def _ref(r: Mapping[str, Any]) -> str:
    return f"{r.get('check')}@{r.get('version')}" if r.get("version") is not None else ""


# --- HTML report ----------------------------------------------------------------------------


def _histogram_svg(values: Sequence[float], bins: int = 10) -> str:
    if not values:
        return "<p>no scores</p>"
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - low) / span * bins))] += 1
    top = max(counts)
    width, height, bar = 300, 100, 30
    rects = "".join(
        f'<rect x="{i * bar}" y="{height - c / top * height:.1f}" width="{bar - 2}" '
        f'height="{c / top * height:.1f}" fill="#4a7bd0"><title>{c}</title></rect>'
        for i, c in enumerate(counts)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 16}" '
        f'role="img" aria-label="score histogram">{rects}'
        f'<text x="0" y="{height + 14}" font-size="11">{low:.3g}</text>'
        f'<text x="{width - 40}" y="{height + 14}" font-size="11">{high:.3g}</text></svg>'
    )


def html_report(records: Sequence[Mapping[str, Any]], title: str) -> str:
    """One self-contained page: per-check summary and histogram (inline SVG), failing rows."""
    esc = html.escape
    checks: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        checks.setdefault(str(r.get("check")), []).append(r)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
        "vertical-align:top;text-align:left}</style></head><body>",
        f"<h1>{esc(title)}</h1><h2>Summary</h2><table><tr><th>check</th><th>rows</th>"
        "<th>statuses</th><th>mean / pass rate</th><th>histogram</th></tr>",
    ]
    for name, mine in checks.items():
        statuses: dict[str, int] = {}
        for r in mine:
            statuses[str(r.get("status"))] = statuses.get(str(r.get("status")), 0) + 1
        value = check_value(mine)
        numbers = [
            float(r["score"])
            for r in mine
            if r.get("status") == "ok" and isinstance(r.get("score"), int | float)
        ]
        parts.append(
            f"<tr><td>{esc(name)}</td><td>{len(mine)}</td><td>"
            + esc(", ".join(f"{k}={v}" for k, v in sorted(statuses.items())))
            + f"</td><td>{'-' if value is None else f'{value:.4g}'}</td>"
            f"<td>{_histogram_svg(numbers)}</td></tr>"
        )
    parts.append("</table><h2>Failing rows</h2>")
    failing = [r for r in records if _is_failure(r, (*DEFAULT_FAIL_ON, "timeout", "crashed"))]
    if not failing:
        parts.append("<p>none</p>")
    else:
        parts.append("<table><tr>" + "".join(f"<th>{k}</th>" for k in FIELDS) + "</tr>")
        for r in failing:
            cells = "".join(f"<td>{esc(str(_cell(r.get(k))))}</td>" for k in FIELDS)
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)
