"""How the dashboard shows values: rounded numbers, and text that is empty, absent or long.

Pure formatting, registered as Jinja filters and globals in :mod:`engine.web.pages`. What
a page shows is rounded; what an export writes keeps full precision."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: Text longer than this is collapsed, with a "show all N characters" toggle.
COLLAPSE_CHARS = 4096
#: Significant digits of a displayed float (0.7926000000000001 shows as 0.7926).
DIGITS = 4


def number(value: Any) -> str:
    """A score or metric as a page shows it: floats rounded, bools as true/false."""
    if value is None:
        return "\u2013"  # an en dash, as the tables show a missing number
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.{DIGITS}g}"
    return str(value)


@dataclass(frozen=True)
class Shown:
    """A value ready for the ``text`` macro: its text, and how it is to be shown."""

    state: str  # absent | empty | short | long
    text: str = ""
    head: str = ""

    @property
    def length(self) -> int:
        return len(self.text)


def shown(value: Any, present: bool = True) -> Shown:
    """``value`` as a page shows it: ``(not set)`` when absent or None, ``(empty)`` when
    an empty string, collapsed past :data:`COLLAPSE_CHARS`; other values as JSON."""
    if not present or value is None:
        return Shown("absent")
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if text == "":
        return Shown("empty")
    if len(text) > COLLAPSE_CHARS:
        return Shown("long", text, text[:COLLAPSE_CHARS])
    return Shown("short", text)
