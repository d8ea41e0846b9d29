"""``POST /v1/judge/pairwise`` and ``GET /v1/builtins``.

The LLM client is ``services.llm`` when the app factory made one, otherwise it
is built from the settings on first use and kept there (the same
slot ``/v1/checks/generate`` uses). Nothing here is stored.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from engine.builtins import describe
from engine.http.deps import LLMDep, PrincipalDep, RunsDep
from engine.http.problems import responses
from engine.judging.pairwise import compare
from engine.llm.cache import scoped_llm

router = APIRouter(tags=["judging"])


class PairwiseRequest(BaseModel):
    """Two outputs for the same input."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "input": "What is the capital of France?",
                    "output_a": "Paris.",
                    "output_b": "I think it might be Lyon.",
                }
            ]
        },
    )

    input: str = Field(max_length=200_000, description="The input both outputs answer.")
    output_a: str = Field(max_length=200_000)
    output_b: str = Field(max_length=200_000)
    criteria: str | None = Field(
        default=None, max_length=10_000, description="What 'better' means; default: overall."
    )
    model: str | None = Field(default=None, description="Judge model; default: the configured.")


class PairwiseResponse(BaseModel):
    """The verdict over both orders (``first_order``/``second_order`` in the original labels)."""

    status: Literal["ok", "judge_error"]
    verdict: Literal["A", "B", "SAME", "inconsistent"] | None
    first_order: Literal["A", "B", "SAME"] | None
    second_order: Literal["A", "B", "SAME"] | None
    agreed: bool
    explanations: list[str | None]
    error: str | None = None


class BuiltinInfo(BaseModel):
    """One built-in check."""

    name: str
    kind: Literal["builtin", "model"]
    description: str
    output_data_type: str
    requires: list[str]
    params_schema: dict[str, Any]


class BuiltinList(BaseModel):
    """Every built-in check."""

    builtins: list[BuiltinInfo]


@router.post(
    "/v1/judge/pairwise",
    response_model=PairwiseResponse,
    summary="Compare two outputs for the same input (A, B or SAME)",
    description="The judge sees the pair in both orders; `verdict` is the answer both orders "
    "agree on, or `inconsistent`. An unreachable LLM or an unparseable reply gives "
    '`status: "judge_error"` with `error` (still 200).',
    responses=responses(401, 422, 503),
)
def pairwise(body: PairwiseRequest, principal: PrincipalDep, llm: LLMDep) -> PairwiseResponse:
    llm = scoped_llm(llm, principal.tenant_id)  # its cached replies are this tenant's alone
    result = compare(body.input, body.output_a, body.output_b, llm, body.criteria, model=body.model)
    return PairwiseResponse(
        status="judge_error" if result.error else "ok",
        verdict=result.verdict,
        first_order=result.first_order,
        second_order=result.second_order,
        agreed=result.agreed,
        explanations=list(result.explanations),
        error=result.error,
    )


@router.get(
    "/v1/builtins",
    response_model=BuiltinList,
    summary="Every built-in check with its parameters and output type",
    responses=responses(401),
)
def list_builtins(runs: RunsDep, principal: PrincipalDep) -> BuiltinList:
    return BuiltinList(builtins=[BuiltinInfo(**item) for item in describe(runs.builtins)])
