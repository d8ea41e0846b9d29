"""The check generator, wired to a tenant: the one glue the edges that expose it call.

``POST /v1/checks/generate``, the dashboard's generate form and Okareo's
``/v0/check_generate`` all call :func:`generate`: the LLM's cached replies are the
tenant's alone (:func:`engine.llm.cache.scoped_llm`), a code check's self-tests run
through the run service as the tenant (its sandbox slots and metering), a model check's
examples are judged by the same LLM, and the options come from the settings. Nothing is
saved. ``scorebox check generate`` runs the generator locally instead (no tenant, its
own sandbox runner).

This package and ``engine.cli.generate`` are the only modules of ``engine`` that import
``generator`` (an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.contract import OutputType
from engine.llm.cache import scoped_llm
from engine.llm.client import LLMClient
from engine.runs.service import RunService
from engine.settings import Settings
from engine.tenancy.auth import Principal
from engine.validation.rules import MAX_SOURCE_BYTES
from generator.adapters import EXAMPLE_ROW_TIMEOUT_SECONDS, llm_judge
from generator.models import Example, GenerationResult
from generator.pipeline import GeneratorOptions, generate_check

__all__ = [
    "Example",
    "GenerateRequest",
    "GenerationResult",
    "Kind",
    "generate",
    "generate_request",
]

#: What the generator writes: ``code`` (Python source) or ``model`` (a prompt template).
Kind = Literal["code", "model"]


class GenerateRequest(BaseModel):
    """What to generate."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "description": "The answer names the expected city (case-insensitive).",
                    "requires_scenario_result": True,
                    "output_data_type": "bool",
                    "examples": [
                        {
                            "row": {"model_output": "It is Paris.", "scenario_result": "Paris"},
                            "expected": True,
                        },
                        {
                            "row": {"model_output": "Lyon, I think", "scenario_result": "Paris"},
                            "expected": False,
                        },
                    ],
                }
            ]
        },
    )

    description: str = Field(min_length=1, max_length=20_000, description="What to check.")
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    output_data_type: OutputType = OutputType.BOOL
    kind: Kind = Field(
        default="code", description="`code`: Python source; `model`: a prompt template."
    )
    check_type: Kind | None = Field(
        default=None,
        deprecated="use `kind`",
        description="Deprecated: the old name of `kind` (read as `kind`; send `kind`). "
        "Elsewhere `check_type` is a model check's answer, `score` or `pass_fail`.",
    )
    examples: list[Example] = Field(
        default_factory=list, max_length=200, description="Labelled rows the check must agree with."
    )
    prior_code: str | None = Field(
        default=None,
        max_length=MAX_SOURCE_BYTES,
        description="An existing check (or template) to refine from the description.",
    )
    max_attempts: int | None = Field(
        default=None, ge=1, le=20, description="Default: SCOREBOX_GENERATOR_MAX_ATTEMPTS."
    )

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data: Any) -> Any:
        """``check_type`` (deprecated) is read as ``kind``; giving both must agree."""
        if isinstance(data, dict) and data.get("check_type") is not None:
            data = dict(data)
            old = data.pop("check_type")
            if data.setdefault("kind", old) != old:
                raise ValueError(
                    f"kind {data['kind']!r} and check_type {old!r} disagree: send `kind` "
                    "alone (`check_type` is its deprecated name)"
                )
        return data


def generate(
    runs: RunService,
    settings: Settings,
    principal: Principal,
    llm: LLMClient,
    description: str,
    *,
    kind: Kind = "code",
    requires_scenario_input: bool = False,
    requires_scenario_result: bool = False,
    output_data_type: OutputType = OutputType.BOOL,
    examples: Sequence[Example] = (),
    prior_code: str | None = None,
    max_attempts: int | None = None,
) -> GenerationResult:
    """Generate a check from ``description`` as ``principal``'s tenant; save nothing."""
    llm = scoped_llm(llm, principal.tenant_id)  # its cached replies are this tenant's alone
    run = (
        runs.code_runner(principal, {"row_timeout_seconds": EXAMPLE_ROW_TIMEOUT_SECONDS})
        if kind == "code"
        else None
    )
    return generate_check(
        description,
        requires_scenario_input=requires_scenario_input,
        requires_scenario_result=requires_scenario_result,
        output_data_type=output_data_type,
        kind=kind,
        examples=examples,
        prior_code=prior_code,
        max_attempts=max_attempts,
        llm=llm,
        run=run,
        judge=llm_judge(llm) if kind == "model" else None,
        options=GeneratorOptions.from_settings(settings),
    )


def generate_request(
    runs: RunService,
    settings: Settings,
    principal: Principal,
    llm: LLMClient,
    body: GenerateRequest,
) -> GenerationResult:
    """:func:`generate` with the fields of a :class:`GenerateRequest` (the API's body, the
    dashboard's form)."""
    return generate(
        runs,
        settings,
        principal,
        llm,
        body.description,
        kind=body.kind,
        requires_scenario_input=body.requires_scenario_input,
        requires_scenario_result=body.requires_scenario_result,
        output_data_type=body.output_data_type,
        examples=body.examples,
        prior_code=body.prior_code,
        max_attempts=body.max_attempts,
    )
