"""``/v0`` checks: create or update, list, get, delete, generate (Okareo SDK shapes and codes)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Response

from engine import catalog, generation
from engine.audit import hooks
from engine.builtins import BUILTINS_CREATED_AT, BuiltinCheck, Builtins
from engine.catalog.ids import check_uuid
from engine.contract import OutputType
from engine.errors import InvalidRequestError
from engine.http.deps import AuditDep, LLMDep, RunsDep, ServicesDep, StoreDep
from engine.http.problems import responses
from engine.okareo import translate
from engine.okareo.routes.deps import OkareoPrincipalDep, OkareoStoreDep, project_of
from engine.okareo.schemas import CheckIn, GenerateIn, GenerateOut, OkareoCheckOut
from engine.okareo.store import builtin_uuid
from engine.storage import CheckVersion

TAG = "okareo"
router = APIRouter(prefix="/v0", tags=[TAG])


def render_check(
    check: CheckVersion, project_id: str | None, warnings: list[str] | None = None
) -> OkareoCheckOut:
    """A scorebox check version in Okareo's shape (id: the version's UUID)."""
    config: dict[str, Any]
    if check.kind == "model":
        config = {"prompt_template": check.prompt_template, "type": check.check_type}
    else:
        config = {"code_contents": check.source}
    return OkareoCheckOut(
        id=check_uuid(check.id),
        project_id=project_id,
        name=check.name,
        description=check.description or "",
        requires_scenario_input=check.requires_scenario_input,
        requires_scenario_result=check.requires_scenario_result,
        output_data_type=check.output_data_type or "",
        code_contents=check.source or "",
        time_created=check.created_at,
        warning="; ".join(warnings) if warnings else None,
        check_config=config,
        is_predefined=False,
        version=check.version,
        tags=list(check.tags),
    )


def render_builtin(builtin: BuiltinCheck[Any]) -> OkareoCheckOut:
    """A built-in check, as Okareo shows its predefined checks."""
    return OkareoCheckOut(
        id=builtin_uuid(builtin.name),
        name=builtin.name,
        description=builtin.description,
        output_data_type=builtin.output_data_type.value,
        check_config={"type": builtin.kind, "params": builtin.params_schema},
        time_created=BUILTINS_CREATED_AT,
        is_predefined=True,
    )


def builtin_by_uuid(builtins: Builtins, value: str) -> BuiltinCheck[Any] | None:
    return next((b for b in builtins.values() if builtin_uuid(b.name) == value), None)


@router.post(
    "/check_create_or_update",
    response_model=OkareoCheckOut,
    status_code=200,
    summary="Create or update a check (Okareo: create_or_update_check)",
    description="Identical content returns the existing version; changed content makes version "
    "N+1 with a new id; a description- or tags-only change keeps the version. `warning` "
    "carries the validator's warnings and says when the name shadows a built-in. 422 when the "
    "check is not valid (`detail` says why).",
    responses=responses(401, 404, 422),
)
def create_or_update_check(
    body: CheckIn,
    store: StoreDep,
    runs: RunsDep,
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
    audit: AuditDep,
) -> OkareoCheckOut:
    project = project_of(okareo, principal.tenant_id, body.project_id)
    name = body.name
    if body.check_id and not name:
        name = catalog.get_check(store, principal.tenant_id, str(body.check_id)).name
    spec = translate.check_spec(name, body.description, body.tags, body.check_config)
    outcome = catalog.save_check(
        store, principal, spec, runs.quotas(principal.tenant_id), runs.packages
    )
    hooks.check_pushed(audit, principal, "v0", outcome)
    warnings = [i.message for i in catalog.save_warnings(outcome, runs.builtins)]
    return render_check(outcome.check, project.id, warnings)


@router.get(
    "/checks",
    response_model=list[OkareoCheckOut],
    status_code=201,
    summary="List checks (Okareo: get_all_checks)",
    description="The latest version of each check, or every version with `all-versions=true`, "
    "then the built-ins (`is_predefined: true`).",
    responses=responses(401),
)
def list_checks(
    store: StoreDep,
    runs: RunsDep,
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
    all_versions: Annotated[bool, Query(alias="all-versions")] = False,
) -> list[OkareoCheckOut]:
    project = okareo.default_project(principal.tenant_id)
    own = [
        render_check(c, project.id) for c in store.list_checks(principal.tenant_id, all_versions)
    ]
    builtins = sorted(runs.builtins.values(), key=lambda b: b.name)
    return own + [render_builtin(b) for b in builtins]


@router.get(
    "/check/{check_id}",
    response_model=OkareoCheckOut,
    status_code=201,
    summary="Get a check version by id (Okareo: get_check)",
    description="A deleted version stays readable by its id.",
    responses=responses(401, 404),
)
def get_check(
    check_id: str,
    store: StoreDep,
    runs: RunsDep,
    okareo: OkareoStoreDep,
    principal: OkareoPrincipalDep,
) -> OkareoCheckOut:
    builtin = builtin_by_uuid(runs.builtins, check_id)
    if builtin is not None:
        return render_builtin(builtin)
    project = okareo.default_project(principal.tenant_id)
    found = catalog.get_check(store, principal.tenant_id, check_id, include_deleted=True)
    return render_check(found, project.id)


@router.delete(
    "/check/{check_id}",
    status_code=204,
    response_class=Response,
    summary="Delete a check (Okareo: delete_check)",
    description="Form field `name`. Deletes every version of the check's name; the name can be "
    "used again (it starts over at version 1, with new ids). The deleted versions stay "
    "readable by id, and runs keep their results.",
    responses=responses(401, 404, 422),
)
def delete_check(
    check_id: str,
    store: StoreDep,
    principal: OkareoPrincipalDep,
    audit: AuditDep,
    name: Annotated[
        str | None, Form(description="The check's name; when given it must be the check's own.")
    ] = None,
) -> Response:
    found = catalog.get_check(store, principal.tenant_id, check_id)
    if name is not None and name != found.name:
        raise InvalidRequestError(
            f"check {check_id} is named {found.name!r}, not {name!r}: pass its own name"
        )
    deleted = catalog.delete_check(store, principal.tenant_id, found.name)
    hooks.check_deleted(audit, principal, "v0", found.name, None, deleted)
    return Response(status_code=204)


@router.post(
    "/check_generate",
    response_model=GenerateOut,
    status_code=201,
    summary="Generate a check from a description (Okareo: generate_check)",
    description="scorebox's generator: the LLM writes the check, it is validated under the "
    "restricted policy, self-tested in the sandbox and repaired. Nothing is saved. `warning` "
    "says why when no attempt was accepted.",
    responses=responses(401, 422, 502, 503),
)
def generate_check(
    body: GenerateIn, services: ServicesDep, principal: OkareoPrincipalDep, llm: LLMDep
) -> GenerateOut:
    description = (body.user_input or body.description or "").strip()
    if not description:
        raise InvalidRequestError("describe the check: EvaluatorSpecRequest(description=...)")
    try:
        output = OutputType(body.output_data_type or "bool")
    except ValueError:
        raise InvalidRequestError(
            f"output_data_type {body.output_data_type!r} is not one of bool, int, float"
        ) from None
    check_type = body.check_type or "code"
    if check_type not in ("code", "model"):
        raise InvalidRequestError(f"check_type {check_type!r} is not one of code, model")
    result = generation.generate(
        services.runs,
        services.settings,
        principal,
        llm,
        description,
        kind="model" if check_type == "model" else "code",
        requires_scenario_input=body.requires_scenario_input,
        requires_scenario_result=body.requires_scenario_result,
        output_data_type=output,
        prior_code=body.prior_code or body.prior_prompt,
    )
    report = result.report
    return GenerateOut(
        name=body.name,
        description=description,
        requires_scenario_input=(
            report.requires_scenario_input if report else body.requires_scenario_input
        ),
        requires_scenario_result=(
            report.requires_scenario_result if report else body.requires_scenario_result
        ),
        output_data_type=(
            report.output_data_type.value if report and report.output_data_type else output.value
        ),
        generated_code=result.code,
        generated_prompt=result.prompt_template,
        warning=None if result.accepted else result.message,
    )
