"""Validating an attempt: a code check under the restricted policy (or its own format's),
and a model check's prompt template (its placeholders against the declared inputs)."""

from __future__ import annotations

import ast

from engine import contract
from engine.contract import formats
from engine.judging.templates import validate_template
from engine.validation import DeclaredCheck, Issue, ValidationReport, validate
from generator.prompts import GenerationSpec


def restricted_validator(source: str, spec: GenerationSpec) -> ValidationReport:
    """A :data:`~generator.adapters.ValidateCode`: ``engine.validation``, restricted policy."""
    if spec.format is not formats.Format.OKAREO:
        return _format_report(source, spec.format)
    declared = DeclaredCheck(
        output_data_type=spec.output_type,
        requires_scenario_input=spec.requires_scenario_input,
        requires_scenario_result=spec.requires_scenario_result,
    )
    report = validate(source, policy="restricted", declared=declared)
    if not report.valid or report.format in (None, formats.Format.OKAREO):
        return report
    # Another tool's format was written where a scorebox check was asked for: its parameters
    # (`output`, `expected`...) are not the contract's, which the repair prompt must say.
    line, col = _entry_position(source, report.entry)
    given = ", ".join(f"`{name}`" for name in report.signature) or "no parameters"
    issue = Issue(
        severity="error",
        code="wrong-format",
        message=f"`{report.entry}` takes {given}, the "
        f"{formats.FORMATS[report.format].title} format; write a scorebox check whose "
        f"parameters are among {', '.join(contract.PARAMETER_NAMES)}",
        line=line,
        col=col,
    )
    return report.model_copy(update={"valid": False, "issues": [*report.issues, issue]})


def _entry_position(source: str, entry: str | None) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the function ``entry`` in ``source``, when found."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry:
            return node.lineno, node.col_offset + 1
    return None, None


def _format_report(source: str, fmt: formats.Format) -> ValidationReport:
    """Validation of a check in another format: its policy, and the format asked for."""
    policy = "standard" if fmt in formats.STANDARD_POLICY_FORMATS else "restricted"
    report = validate(source, policy=policy)
    if report.valid and report.format is not fmt:
        wanted = formats.FORMATS[fmt].title
        issue = Issue(
            severity="error",
            code="wrong-format",
            message=f"this is a {formats.FORMATS[report.format].title} file; write it in the "
            f"{wanted} format instead",
        )
        return report.model_copy(update={"valid": False, "issues": [*report.issues, issue]})
    return report


def template_report(template: str, spec: GenerationSpec) -> tuple[str, ValidationReport]:
    """A model check's template, normalised, and its validation as a check's report."""
    parsed = validate_template(
        template,
        requires_scenario_input=spec.requires_scenario_input,
        requires_scenario_result=spec.requires_scenario_result,
    )
    report = ValidationReport(
        valid=parsed.valid,
        issues=list(parsed.issues),
        signature=list(parsed.placeholders),
        output_data_type=spec.output_type,
        **parsed.requires(),
    )
    return parsed.template, report
