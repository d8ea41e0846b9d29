"""Spreadsheet formula injection: text cells of CSV/TSV exports, escaped as OWASP recommends.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)`` in a model
output becomes a live link). Such text cells get a leading ``'``, which spreadsheets
show as text and do not display. Numbers stay numbers (``-0.5`` is a value, not a
formula), and JSON/NDJSON exports keep every raw value.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` if it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
