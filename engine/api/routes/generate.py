"""``POST /v1/checks/generate``: description → validated, self-tested check. Nothing is saved.

Dependencies: the LLM client is ``services.llm`` when the app factory made one,
otherwise it is built from the settings on first use and kept there; the sandbox
engine comes from ``services.runners``.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from engine.api.deps import LLMDep, PrincipalDep, ServicesDep
from engine.api.problems import responses
from engine.api.services import Services
from engine.auth import Principal
from engine.contract import OutputType
from engine.contract.rules import MAX_SOURCE_BYTES
from engine.llm.cache import scoped_llm
from engine.llm.client import LLMClient
from generator.models import Example, GenerationResult
from generator.pipeline import (
    EXAMPLE_ROW_TIMEOUT_SECONDS,
    GeneratorOptions,
    generate_check,
    llm_judge,
)

router = APIRouter(prefix="/v1/checks", tags=["checks"])


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
    check_type: Literal["code", "model"] = Field(
        default="code", description="`code`: Python source; `model`: a prompt template."
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


@router.post(
    "/generate",
    response_model=GenerationResult,
    summary="Generate a check from a description",
    description="Asks the LLM for a check, validates it under the restricted policy, runs it on "
    "the examples in the sandbox, and feeds every failure back until it is accepted or the "
    "attempts run out. Nothing is saved: push the returned `code` with `POST /v1/checks`. "
    "`accepted` is false (still 200) when no attempt passed; `message` and `attempts` say why.",
    responses=responses(401, 422, 429, 502, 503),
)
def generate(
    body: GenerateRequest, services: ServicesDep, principal: PrincipalDep, llm: LLMDep
) -> GenerationResult:
    return run_generation(services, principal, llm, body)


def run_generation(
    services: Services, principal: Principal, llm: LLMClient, body: GenerateRequest
) -> GenerationResult:
    """The generator as ``principal``'s tenant (the API route and the dashboard's form)."""
    settings = services.settings
    llm = scoped_llm(llm, principal.tenant_id)  # its cached replies are this tenant's alone
    run = (
        services.runs.code_runner(principal, {"row_timeout_seconds": EXAMPLE_ROW_TIMEOUT_SECONDS})
        if body.check_type == "code"
        else None
    )
    return generate_check(
        body.description,
        requires_scenario_input=body.requires_scenario_input,
        requires_scenario_result=body.requires_scenario_result,
        output_data_type=body.output_data_type,
        check_type=body.check_type,
        examples=body.examples,
        prior_code=body.prior_code,
        max_attempts=body.max_attempts,
        llm=llm,
        run=run,
        judge=llm_judge(llm) if body.check_type == "model" else None,
        options=GeneratorOptions.from_settings(settings),
    )
