"""Prompt templates of model checks: re-exported from :mod:`engine.judging.templates`.

The pure template rules moved into the engine (the engine renders templates when it
judges rows and must not import the generator); this module keeps the old import path.
"""

from __future__ import annotations

from engine.judging.templates import (
    TemplateIssue,
    TemplateReport,
    model_check_type,
    render_template,
    validate_template,
)

__all__ = [
    "TemplateIssue",
    "TemplateReport",
    "model_check_type",
    "render_template",
    "validate_template",
]
