"""Binding by keyword: the entry's parameters take the row's values of their names, else the
check's configuration (for formats configured by keyword). Shared by the keyword-bound
formats (Okareo, reward-kit, Braintrust/Phoenix, LangSmith). Carried into the sandbox image
(stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.formats.shapes import FunctionShape
from engine.contract.formats.spec import FormatSpec


def bind_keywords(
    spec: FormatSpec,
    shape: FunctionShape,
    values: Mapping[str, Any],
    config: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Keyword arguments for ``shape``: each parameter's value from ``values``, else from
    ``config`` when ``spec`` is configured by keyword; parameters with neither are left out
    (their defaults apply)."""
    configured = configured_values(spec, config)
    kwargs: dict[str, Any] = {}
    for param in shape.params:
        if param.name in values:
            kwargs[param.name] = values[param.name]
        elif param.name in configured:
            kwargs[param.name] = configured[param.name]
    return kwargs


def configured_values(spec: FormatSpec, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The check's configuration as keyword values, or nothing when ``spec`` takes none."""
    return dict(config or {}) if spec.configured_by_keyword else {}
