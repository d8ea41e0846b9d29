"""Prompt templates of model checks: parse, validate, normalise, render. Pure.

Lives in the engine because the engine renders templates when it judges rows
(``engine.judging.model_check``) and the service validates them at save.

A template uses ``{placeholder}`` for row fields (the names come from
:data:`engine.validation.rules.MODEL_CHECK_PLACEHOLDERS`) and ``{{`` / ``}}`` for
literal braces. Legacy names (:data:`engine.validation.rules.LEGACY_PLACEHOLDERS`) are
rewritten with a warning; anything else in single braces is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.contract import REQUIRABLE_PARAMETERS, OutputType
from engine.validation import Issue
from engine.validation.rules import LEGACY_PLACEHOLDERS, MODEL_CHECK_PLACEHOLDERS, ModelCheckType

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|\{|\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class TemplateReport:
    """The outcome of :func:`validate_template`."""

    template: str  # legacy placeholders rewritten
    placeholders: tuple[str, ...]  # distinct, in order of first use
    issues: tuple[Issue, ...]

    @property
    def valid(self) -> bool:
        """No error (warnings allowed)."""
        return not any(i.severity == "error" for i in self.issues)

    def requires(self) -> dict[str, bool]:
        """``requires_scenario_input``/``requires_scenario_result`` implied by the placeholders."""
        return {f"requires_{n}": n in self.placeholders for n in REQUIRABLE_PARAMETERS}


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def model_check_type(output_type: OutputType | str) -> ModelCheckType:
    """The judge's answer kind for a score type: bool → pass_fail, numbers → score."""
    if OutputType(output_type) is OutputType.BOOL:
        return ModelCheckType.PASS_FAIL
    return ModelCheckType.SCORE


#: An issue found in a template, before its position is known: severity, code, message.
_Problem = tuple[Literal["error", "warning"], str, str]


def _read_token(match: re.Match[str], allowed: str) -> tuple[str, str | None, list[_Problem]]:
    """One brace token of a template: the text it becomes, the placeholder it names (legacy
    names rewritten), and what is wrong with it."""
    token = match.group(0)
    if token in {"{{", "}}"}:
        return token, None, []
    inner = match.group(1)
    if inner is None:
        message = f"unmatched {token!r}; write a literal brace as {token * 2!r}"
        return token, None, [("error", "unbalanced-brace", message)]
    problems: list[_Problem] = []
    name = inner.strip()
    if name in LEGACY_PLACEHOLDERS:
        new = LEGACY_PLACEHOLDERS[name]
        message = f"{{{name}}} is a legacy name, rewritten to {{{new}}}"
        problems.append(("warning", "legacy-placeholder", message))
        name = new
    if name in MODEL_CHECK_PLACEHOLDERS:
        return "{" + name + "}", name, problems
    hint = (
        f"unknown placeholder {{{inner}}}; use one of {allowed}"
        if _IDENTIFIER.match(name)
        else f"{{{inner}}} is not a placeholder; use one of {allowed}"
    )
    problems.append(("error", "unknown-placeholder", hint + ", or write literal braces as {{ }}"))
    return token, None, problems


def _whole_template_problems(
    template: str, names: list[str], declared: dict[str, bool | None]
) -> list[_Problem]:
    """What is wrong with the template as a whole: empty, no ``{model_output}``, or a
    placeholder used (or not) against its declared ``requires_*`` flag."""
    problems: list[_Problem] = []
    if not template.strip():
        problems.append(("error", "empty-template", "the template is empty"))
    elif "model_output" not in names:
        message = "the template never shows the judge {model_output}, the output being judged"
        problems.append(("error", "missing-model-output", message))
    for param, flag in declared.items():
        if flag is None or flag == (param in names):
            continue
        if flag:
            message = f"requires_{param} is declared but the template never uses {{{param}}}"
        else:
            message = f"the template uses {{{param}}} but requires_{param} is declared false"
        problems.append(("error", "requires-mismatch", message))
    return problems


def validate_template(
    template: str,
    *,
    requires_scenario_input: bool | None = None,
    requires_scenario_result: bool | None = None,
) -> TemplateReport:
    """Check every placeholder; normalise legacy names; compare with declared flags."""
    issues: list[Issue] = []
    names: list[str] = []
    out: list[str] = []
    last = 0
    allowed = ", ".join("{" + p + "}" for p in MODEL_CHECK_PLACEHOLDERS)

    def issue(problem: _Problem, offset: int) -> None:
        line, col = _position(template, offset)
        severity, code, message = problem
        issues.append(Issue(severity=severity, code=code, message=message, line=line, col=col))

    for match in _TOKEN.finditer(template):
        out.append(template[last : match.start()])
        last = match.end()
        text, name, problems = _read_token(match, allowed)
        out.append(text)
        for problem in problems:
            issue(problem, match.start())
        if name is not None and name not in names:
            names.append(name)
    out.append(template[last:])

    declared = {
        "scenario_input": requires_scenario_input,
        "scenario_result": requires_scenario_result,
    }
    for problem in _whole_template_problems(template, names, declared):
        issue(problem, 0)
    return TemplateReport("".join(out), tuple(names), tuple(issues))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_template(template: str, row: Mapping[str, Any]) -> str:
    """The prompt for one row: placeholders filled (JSON for non-strings), ``{{ }}`` unescaped.

    The template must be valid (see :func:`validate_template`); legacy names are filled too.
    """

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in {"{{", "}}"}:
            return token[0]
        name = (match.group(1) or "").strip()
        name = LEGACY_PLACEHOLDERS.get(name, name)
        if name not in MODEL_CHECK_PLACEHOLDERS:
            return token
        return _as_text(row.get(name))

    return _TOKEN.sub(fill, template)
