"""The span list's export: one record per score of each matching span (a span without
scores is one record with empty score fields), as CSV or JSONL, streamed page by page.

CSV text cells a spreadsheet would run as a formula are escaped as run exports escape
them (:func:`engine.runs.cells.escape_cell`); JSONL keeps the raw values.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from engine.runs.cells import escape_cell
from engine.storage.score_sql import score_store
from engine.storage.span_reads import SpanFilter, StoredSpan
from engine.storage.span_sql import SpanStore

__all__ = ["CSV", "EXPORT_TYPES", "FIELDS", "NDJSON", "export_stream", "records"]

CSV = "text/csv"
NDJSON = "application/x-ndjson"
EXPORT_TYPES = (CSV, NDJSON)
FIELDS = (
    "trace_id",
    "span_id",
    "start_time",
    "service",
    "model",
    "rule",
    "rule_version",
    "check",
    "check_version",
    "status",
    "score",
    "passed",
    "explanation",
    "scenario_input",
    "model_output",
)
_PAGE = 500


def records(spans: list[StoredSpan], scores: dict[Any, Any]) -> Iterator[dict[str, Any]]:
    """The export's records of ``spans`` with their ``scores`` (by trace and span id)."""
    for s in spans:
        base = {
            "trace_id": s.trace_id,
            "span_id": s.span_id,
            "start_time": datetime.fromtimestamp(s.start_unix_nano / 1e9, UTC).isoformat(),
            "service": s.service,
            "model": s.model,
            "scenario_input": s.row.get("scenario_input"),
            "model_output": s.row.get("model_output"),
        }
        found = scores.get((s.trace_id, s.span_id)) or []
        if not found:
            yield {**base, **dict.fromkeys(FIELDS[5:13])}
        for score in found:
            yield {**base, **score.to_json()}


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return escape_cell(value)


def export_stream(
    store: SpanStore, tenant_id: str, where: SpanFilter, cursor: str | None, media_type: str
) -> Iterator[bytes]:
    """Every span matching ``where`` from ``cursor`` on, newest first, as ``media_type``."""
    header = media_type == CSV
    while True:
        spans, cursor = store.spans(tenant_id, where, _PAGE, cursor)
        scores = score_store(store.engine).scores_of(
            tenant_id, [(s.trace_id, s.span_id) for s in spans]
        )
        rows = list(records(spans, scores))
        if media_type == CSV:
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, fieldnames=FIELDS, extrasaction="ignore")
            if header:
                writer.writeheader()
                header = False
            for r in rows:
                writer.writerow({k: _cell(r.get(k)) for k in FIELDS})
            yield buffer.getvalue().encode()
        else:
            yield "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
        if cursor is None:
            return
