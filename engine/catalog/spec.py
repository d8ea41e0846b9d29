"""A check to save: its fields (:class:`CheckSpec`, the body of ``POST /v1/checks``), their
validation, and the digest of its content that names a version.

Content is what the check does (kind, source or prompt template, check type, policy,
declared flags, limits, entry, configuration); description, tags and origin are not.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.catalog.origin import PUSHED_ORIGINS, PushedOrigin
from engine.contract import OutputType, Policy
from engine.environments.spec import PackageRules
from engine.errors import InvalidRequestError
from engine.json_limits import FreeJSON
from engine.judging.templates import validate_template
from engine.models import Limits
from engine.tenancy.quotas import Quotas, check_source
from engine.validation import ValidationReport, validate
from engine.validation.rules import ModelCheckType

#: Letters, digits, ``_ . -`` and inner spaces (Okareo check names have spaces); no ``@``.
NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_.\- ]{0,98}[A-Za-z0-9_.\-])?$"


class CheckSpec(BaseModel):
    """A check to create or update (the body of ``POST /v1/checks``)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "mentions_expected",
                    "description": "The answer mentions the expected result.",
                    "tags": ["support"],
                    "kind": "code",
                    "source": (
                        "def evaluate(model_output: str, scenario_result: str) -> bool:\n"
                        "    return scenario_result.lower() in model_output.lower()\n"
                    ),
                }
            ]
        },
    )

    name: str = Field(pattern=NAME_PATTERN, description="Unique within the tenant; no `@`.")
    description: str | None = Field(default=None, max_length=10_000)
    tags: list[str] = Field(default_factory=list, max_length=50)
    kind: Literal["code", "model"] = "code"
    source: str | None = Field(default=None, description="Python source (kind=code).")
    prompt_template: str | None = Field(default=None, description="Judge prompt (kind=model).")
    check_type: ModelCheckType | None = Field(default=None, description="score or pass_fail.")
    requires_scenario_input: bool | None = None
    requires_scenario_result: bool | None = None
    output_data_type: OutputType | None = None
    policy: Policy = Policy.STANDARD
    entry: str | None = Field(
        default=None,
        max_length=200,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The entry function of another tool's scorer file where several fit "
        "(null: found by name or by its parameters; see docs/writing-checks/formats.md).",
    )
    config: dict[str, FreeJSON] | None = Field(
        default=None,
        description="Code checks: the configuration passed to the scorer (promptfoo's "
        "`context['config']`, the keyword parameters of reward-kit and Braintrust scorers). "
        "Part of the version's identity: a new configuration is a new version.",
        examples=[{"threshold": 0.8}],
    )
    limits: dict[str, Any] | None = Field(
        default=None,
        description="Lower the default sandbox limits for this check.",
        examples=[{"row_timeout_seconds": 2}],
    )
    origin: PushedOrigin = Field(
        default="pushed",
        description="Where the check comes from: `pushed` (default) or `generated` (written "
        "by the check generator). Not part of the content: pushing the same content with "
        "another origin returns the existing version unchanged.",
    )

    @field_validator("origin", mode="before")
    @classmethod
    def _pushed_origin(cls, value: object) -> object:
        if value not in PUSHED_ORIGINS:
            raise ValueError(
                f"origin {value!r} cannot be pushed: use `pushed` (the default) or `generated` "
                "(`builtin` is scorebox's own checks')"
            )
        return value


def _declared(spec: CheckSpec) -> dict[str, Any]:
    return {
        "requires_scenario_input": spec.requires_scenario_input,
        "requires_scenario_result": spec.requires_scenario_result,
        "output_data_type": spec.output_data_type,
    }


def validate_code(
    source: str,
    policy: Policy,
    declared: dict[str, Any],
    packages: PackageRules | None = None,
    entry: str | None = None,
) -> ValidationReport:
    """Validate code with :func:`engine.validation.validate`; never raises on user mistakes."""
    return validate(source, policy, declared=declared, packages=packages, entry=entry)


def validate_spec(
    spec: CheckSpec, quotas: Quotas | None = None, packages: PackageRules | None = None
) -> tuple[ValidationReport, CheckSpec]:
    """Validate a spec; returns the report and the spec as it would be stored."""
    if spec.limits:
        try:
            Limits.model_validate(spec.limits)
        except ValueError as exc:
            raise InvalidRequestError(f"limits: {exc}") from exc
    if spec.kind == "code":
        if not spec.source:
            raise InvalidRequestError("a code check needs `source`")
        if quotas is not None:
            check_source(quotas, len(spec.source.encode()))
        report = validate_code(spec.source, spec.policy, _declared(spec), packages, spec.entry)
        return report, spec
    if not spec.prompt_template:
        raise InvalidRequestError("a model check needs `prompt_template`")
    checked = validate_template(
        spec.prompt_template,
        requires_scenario_input=spec.requires_scenario_input,
        requires_scenario_result=spec.requires_scenario_result,
    )
    template = checked.template
    check_type = spec.check_type or ModelCheckType.SCORE
    output = OutputType.BOOL if check_type is ModelCheckType.PASS_FAIL else OutputType.INT
    requires = checked.requires()
    report = ValidationReport(
        valid=checked.valid,
        output_data_type=output,
        requires_scenario_input=requires["requires_scenario_input"],
        requires_scenario_result=requires["requires_scenario_result"],
        issues=list(checked.issues),
    )
    return report, spec.model_copy(update={"prompt_template": template, "check_type": check_type})


def content_sha256(spec: CheckSpec) -> str:
    """The identity of a check's content."""
    content = {
        "kind": spec.kind,
        "source": spec.source if spec.kind == "code" else None,
        "prompt_template": spec.prompt_template if spec.kind == "model" else None,
        "check_type": spec.check_type.value if spec.check_type else None,
        "policy": spec.policy.value,
        "declared": {
            k: (v.value if isinstance(v, OutputType) else v) for k, v in _declared(spec).items()
        },
        "limits": spec.limits or None,
    }
    if spec.entry is not None:  # only when named: earlier versions keep their digest
        content["entry"] = spec.entry
    if spec.config is not None:  # likewise: a version without one keeps its digest
        content["config"] = spec.config
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
