"""What of a span's attributes and events is stored: long values cut, and past a total
size, later keys (or events) dropped, the row keeping the content (engine/storage/span_rows.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from engine.online.mapping import Event
from engine.storage.span_rows import TRUNCATED

#: A stored attribute value past this many characters is cut (the row, then stored whole,
#: keeps the content).
MAX_VALUE_CHARS = 16_384
#: A span's stored attributes (and, separately, its events) past this JSON size are cut.
MAX_ATTRIBUTES_CHARS = 131_072


def bounded(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` with long values cut and, past the total, later keys dropped (the
    same dict when nothing is: most spans' attributes are short strings and numbers)."""
    total = 0
    for key, value in attributes.items():
        if isinstance(value, str):
            if len(value) > MAX_VALUE_CHARS:
                break
            total += len(key) + len(value) + 6
        elif value is None or isinstance(value, int | float):
            total += len(key) + len(str(value)) + 6
        else:
            break  # a list or a map: sized by encoding it, below
        if total > MAX_ATTRIBUTES_CHARS:
            break
    else:
        return attributes
    return _cut(attributes)


def _cut(attributes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total = 0
    dropped = 0
    for key, original in attributes.items():
        value = original
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            value = value[:MAX_VALUE_CHARS]
            dropped += 1
        # a string's or a number's length is its JSON size closely enough for a bound, and
        # far cheaper than encoding it (this runs for every attribute of every span)
        if isinstance(value, str):
            size = len(key) + len(value) + 6
        elif value is None or isinstance(value, int | float):
            size = len(key) + len(str(value)) + 6
        else:
            size = len(key) + len(json.dumps(value, default=str)) + 6
        if total + size > MAX_ATTRIBUTES_CHARS:
            dropped += 1
            continue
        out[key] = value
        total += size
    if dropped:
        out[TRUNCATED] = dropped
    return out


def bounded_events(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The events as stored: each one's attributes bounded, and those past the total left out."""
    out: list[dict[str, Any]] = []
    total = 0
    for event in events:
        item = {"name": event.name, "attributes": bounded(event.attributes)}
        total += len(json.dumps(item, default=str))
        if total > MAX_ATTRIBUTES_CHARS:
            break
        out.append(item)
    return out
