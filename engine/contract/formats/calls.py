"""Calling an entry on a row: its arguments (:func:`bind`), whether what it returned skips
the row (:func:`skips`), and what that means as a score (:func:`coerce`), each by the
format's adapter. The harness calls these per row. Carried into the sandbox image (stdlib
only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import Arguments, Format, MessageFactory
from engine.contract.formats.table import ADAPTERS
from engine.contract.returns import Score
from engine.contract.statuses import OutputType


def bind(
    fmt: Format,
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: MessageFactory | None = None,
    config: Mapping[str, Any] | None = None,
) -> Arguments:
    """Positional and keyword arguments for the entry, from a row.

    ``message`` builds a ``Message`` object from a dict, for parameters annotated
    ``List[Message]`` (the harness passes ``reward_kit.Message``). ``config`` is the check
    version's configuration: promptfoo's ``context["config"]``, and the keyword
    parameters of reward-kit and Braintrust scorers that the row does not bind.
    """
    return ADAPTERS[fmt].bind(shape, row, message, config)


def skips(fmt: Format, value: Any) -> bool:
    """Whether ``value`` returned by a ``fmt`` entry skips the row (Braintrust's ``None``,
    or a ``Score`` / ``{"score": None}`` without a score)."""
    return ADAPTERS[fmt].skips(value)


def coerce(fmt: Format, value: Any, expected: OutputType | None = None) -> Score:
    """What the entry returned, as a :class:`Score`; or :class:`InvalidScore` naming the fix."""
    return ADAPTERS[fmt].coerce(value, expected)
