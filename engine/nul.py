"""NUL characters: PostgreSQL's ``text`` and ``jsonb`` cannot hold ``\\u0000``.

Text a check produced (its explanation, error, captured output), or that a record
carries, is stored with each NUL replaced by U+FFFD, the Unicode replacement
character, so one row's NUL can never fail a write (and with it a run). Input a
caller names (refs, names, templates) is refused at the edge instead, with a 422
naming the field (:func:`nul_problem`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

NUL = "\x00"
REPLACEMENT = "\ufffd"

T = TypeVar("T")


def without_nul(text: str) -> str:
    """``text`` with every NUL replaced by U+FFFD."""
    return text.replace(NUL, REPLACEMENT) if NUL in text else text


def without_nul_json(value: T) -> T:
    """A JSON-like value with NUL replaced in every string, keys included."""
    if isinstance(value, str):
        return without_nul(value)  # type: ignore[return-value]
    if isinstance(value, Mapping):
        return {without_nul(str(k)): without_nul_json(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return [without_nul_json(v) for v in value]  # type: ignore[return-value]
    return value


def nul_problem(value: Any, where: str, depth: int = 0) -> str | None:
    """The first field of ``value`` holding a NUL, as a 422 message; None if none does."""
    if depth > 64:
        return None
    if isinstance(value, str):
        if NUL in value:
            return f"{where}: holds a NUL character (\\u0000), which cannot be stored: remove it"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = nul_problem(str(key), f"{where} key", depth + 1) or nul_problem(
                item, f"{where}.{key}", depth + 1
            )
            if problem:
                return problem
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = nul_problem(item, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
    return None
