"""What a label may be: a name's declared type, and values checked against it (pure).

A label name (``helpful``) is declared once per tenant: ``bool``; ``ordinal`` with its
levels in order (``[1, 2, 3, 4, 5]`` or ``["bad", "ok", "good"]``); ``float``; or
``category`` with its set of levels. Every value given is checked against that type,
and a wrong one is refused with the fix in the message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import InvalidRequestError

LABEL_TYPES = ("bool", "ordinal", "float", "category")
MAX_LEVELS = 100
_TRUE = {"true", "yes", "1", "pass", "y", "t"}
_FALSE = {"false", "no", "0", "fail", "n", "f"}


@dataclass(frozen=True)
class LabelType:
    """A label name's type; ``levels`` in order for ordinal, as a set for category."""

    type: str
    levels: tuple[Any, ...] = ()


def declare(type_: str, levels: Sequence[Any] | None) -> LabelType:
    """A checked declaration: levels required for ordinal and category, refused otherwise."""
    if type_ not in LABEL_TYPES:
        raise InvalidRequestError(
            f"label type {type_!r} is unknown: use one of {', '.join(LABEL_TYPES)}"
        )
    given = list(levels or [])
    if type_ in ("ordinal", "category"):
        if len(given) < 2:
            raise InvalidRequestError(
                f'a {type_} label needs at least 2 levels: give "levels", e.g. [1, 2, 3, 4, 5]'
            )
        if len(given) > MAX_LEVELS:
            raise InvalidRequestError(f"at most {MAX_LEVELS} levels: give fewer")
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in given):
            raise InvalidRequestError("levels must be strings or numbers")
        if len(set(given)) != len(given):
            raise InvalidRequestError("levels must be distinct: remove the repeated ones")
        return LabelType(type_, tuple(given))
    if given:
        raise InvalidRequestError(f'a {type_} label takes no levels: leave "levels" out')
    return LabelType(type_)


def parse_value(label: LabelType, value: Any, name: str = "label") -> Any:
    """``value`` checked against ``label``'s type (strings from CSV files are converted)."""
    if label.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise InvalidRequestError(
            f"{name} is a bool label: {value!r} is not true or false (give true/false, 1/0, "
            "yes/no or pass/fail)"
        )
    if label.type == "float":
        number = _number(value)
        if number is None:
            raise InvalidRequestError(f"{name} is a float label: {value!r} is not a number")
        return number
    for level in label.levels:
        if value == level and not isinstance(value, bool):
            return level
    if isinstance(value, str):  # "3" from a CSV file, for the level 3
        number = _number(value)
        for level in label.levels:
            if str(level) == value.strip() or (number is not None and level == number):
                return level
    raise InvalidRequestError(
        f"{name} is a {label.type} label: {value!r} is not one of its levels "
        f"{list(label.levels)}: give one of them, or declare the level with "
        f"PUT /v1/label-names/{name}"
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None
