"""A span's row as stored: its content kept once, in the span's own attributes.

A span's row (``messages``, ``model_output``, ``scenario_input``) is mapped from its
attributes and events (:mod:`engine.online.mapping`), which are stored anyway. When they
are stored whole (no value cut, no event dropped) and no log record was joined to the
span, its row is stored *compact*: its ``metadata`` alone, the content mapped again from
the stored attributes when the span is read (the mapping is pure: the same attributes
give the same row). Otherwise the whole row is stored, as every row was before migration
0018; a whole row is read as it is.

Stored whole, a chat span kept its content three times over (the attributes, the row,
the search text): each span cost SQLite about 4.3 KB, past a 4 KB page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.online.mapping import Event, Mapped, Span, map_span

__all__ = ["TRUNCATED", "full_row", "is_compact", "kept_whole", "stored_row"]

#: The attribute naming how many values were cut or dropped at storage.
TRUNCATED = "scorebox.truncated"


def kept_whole(
    span: Span, attributes: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether ``attributes`` and ``events`` (as they are stored) are all the mapping read
    of ``span``: nothing cut, no event dropped, no log record's body joined."""
    if TRUNCATED in attributes or len(events) != len(span.events):
        return False
    if any(e.body is not None for e in span.events):
        return False
    return not any(TRUNCATED in e.get("attributes", {}) for e in events)


def stored_row(mapped: Mapped, whole: bool) -> dict[str, Any]:
    """The row to store: the whole row, or (``whole`` False) its metadata alone."""
    return mapped.row() if whole else {"metadata": mapped.metadata}


def is_compact(row: Any) -> bool:
    """Whether a stored row is compact: its content is mapped from the attributes."""
    return isinstance(row, dict) and "messages" not in row


def full_row(row: Any, attributes: Mapping[str, Any], events: Sequence[Any]) -> dict[str, Any]:
    """A stored row as checks see it: a compact row's content mapped again from the span's
    stored ``attributes`` and ``events``; a whole row as it is."""
    if not isinstance(row, dict):
        return {}
    if "messages" in row:
        return row
    span = Span(
        trace_id="",
        span_id="",
        name="",
        attributes=dict(attributes),
        events=tuple(
            Event(str(e.get("name", "")), dict(e.get("attributes") or {}))
            for e in events
            if isinstance(e, dict)
        ),
    )
    mapped = map_span(span)
    return {
        "messages": mapped.messages,
        "model_output": mapped.model_output,
        "scenario_input": mapped.scenario_input,
        "metadata": row.get("metadata", {}),
    }
