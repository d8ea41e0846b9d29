"""``POST /v1/checks/generate``: description → validated, self-tested check. Nothing is saved.

Dependencies: the LLM client is ``services.llm`` when the app factory made one,
otherwise it is built from the settings on first use and kept there; the self-tests
run through ``services.runs`` as the tenant (:mod:`engine.generation`, the glue every
edge that generates calls).
"""

from __future__ import annotations

from fastapi import APIRouter

from engine import generation
from engine.generation import GenerateRequest, GenerationResult
from engine.http.deps import LLMDep, PrincipalDep, ServicesDep
from engine.http.problems import responses

__all__ = ["GenerateRequest", "router"]

router = APIRouter(prefix="/v1/checks", tags=["checks"])


@router.post(
    "/generate",
    response_model=GenerationResult,
    summary="Generate a check from a description",
    description="Asks the LLM for a check, validates it under the restricted policy, runs it on "
    "the examples in the sandbox, and feeds every failure back until it is accepted or the "
    "attempts run out. Nothing is saved: push the returned `code` with `POST /v1/checks` and "
    "`origin: generated` (it is then listed as generated). "
    "`accepted` is false (still 200) when no attempt passed; `message` and `attempts` say why. "
    "`check_type` in the body is the deprecated name of `kind` (still read).",
    responses=responses(401, 422, 429, 502, 503),
)
def generate(
    body: GenerateRequest, services: ServicesDep, principal: PrincipalDep, llm: LLMDep
) -> GenerationResult:
    return generation.generate_request(services.runs, services.settings, principal, llm, body)
