"""How the receiver stores a batch of spans (SQLite and PostgreSQL): one multi-row insert
that leaves out a span already stored or met earlier in the batch, split past the rows a
statement may bind; and the bounds on a span's stored attributes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.online.mapping import Span
from engine.storage import bulk_insert, open_store
from engine.storage.span_bounds import MAX_ATTRIBUTES_CHARS, MAX_VALUE_CHARS, bounded
from engine.storage.span_rows import TRUNCATED
from engine.storage.span_sql import span_store
from engine.tenancy import auth


def _span(trace: int, span: int, question: str) -> Span:
    return Span(
        trace_id=f"{trace:032x}",
        span_id=f"{span:016x}",
        name="chat gpt-4o-mini",
        start_unix_nano=1_000 + span,
        end_unix_nano=2_000 + span,
        status_code=1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]
            ),
        },
        resource={"service.name": "bot"},
    )


def test_a_batch_is_stored_once_across_statements_and_retries(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_insert, "ROWS_PER_STATEMENT", 3)  # 7 spans: three statements
    store = open_store(database_url)
    tenant = auth.create_tenant(store, "a").tenant.id
    other = auth.create_tenant(store, "b").tenant.id
    spans = span_store(store.engine)
    first = [_span(1, n, f"question {n}") for n in range(7)]
    # the batch repeats its span 2 with other content: the first one met is kept
    views = spans.add_spans(tenant, [*first[:3], _span(1, 2, "again"), *first[3:]])
    assert len(views) == 8
    retry = [_span(1, n, f"retried {n}") for n in range(7)]
    spans.add_spans(tenant, retry)  # an exporter's retry: nothing changes
    spans.add_spans(other, retry[:1])  # the same ids in another tenant are its own
    assert spans.count(tenant) == 7
    assert spans.count(other) == 1
    stored = spans.trace(tenant, f"{1:032x}")
    assert [s.row["scenario_input"] for s in stored] == [f"question {n}" for n in range(7)]
    assert stored[0].attributes["gen_ai.usage.input_tokens"] == 12
    assert stored[0].service == "bot" and stored[0].is_llm and not stored[0].no_content
    assert spans.trace(other, f"{1:032x}")[0].row["scenario_input"] == "retried 0"
    store.engine.dispose()


def test_long_values_are_cut_and_the_total_is_bounded() -> None:
    cut = bounded({"big": "x" * (MAX_VALUE_CHARS + 10), "n": 7, "ok": True})
    assert cut["big"] == "x" * MAX_VALUE_CHARS
    assert cut["n"] == 7 and cut["ok"] is True
    assert cut[TRUNCATED] == 1
    many: dict[str, Any] = {f"k{i}": "y" * MAX_VALUE_CHARS for i in range(12)}
    many["list"] = list(range(10))
    kept = bounded(many)
    assert len(json.dumps(kept)) <= MAX_ATTRIBUTES_CHARS + 100
    # seven long values fit; the next five do not; the short list after them still does
    assert [k for k in kept if k.startswith("k")] == [f"k{i}" for i in range(7)]
    assert kept["list"] == list(range(10))
    assert kept[TRUNCATED] == 5
    assert TRUNCATED not in bounded({"n": 1, "f": 1.5, "none": None, "l": [1, 2]})
    short = {"s": "x" * MAX_VALUE_CHARS, "n": 1, "f": 1.5, "b": True, "none": None}
    assert bounded(short) is short  # nothing to cut: not copied
