"""``/v1/checks``: create or update, upload, validate, list, get, delete."""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import PurePath
from typing import Annotated, Literal, cast

from fastapi import APIRouter, File, Form, Query, Response, UploadFile

from engine import catalog
from engine.agreement.required import required_by_id
from engine.api.routes.labels import LabelStoreDep
from engine.api.schemas import CheckList, CheckOut, Deleted, ValidateRequest
from engine.audit import hooks
from engine.audit.store import AuditLog
from engine.builtins import describe
from engine.catalog.files import kind_of_file
from engine.catalog.origin import PushedOrigin
from engine.catalog.spec import CheckSpec, validate_spec
from engine.contract import Policy
from engine.environments.build import Environments
from engine.environments.hosts import distributed_status
from engine.environments.spec import BLOCK_MARKER
from engine.environments.status import EnvironmentStatus, build_in_background, status_of
from engine.errors import InvalidRequestError, NotFoundError, ScoreboxError
from engine.http.deps import AuditDep, PrincipalDep, RunsDep, ServicesDep, StoreDep
from engine.http.problems import responses
from engine.http.services import Services
from engine.redact import mask_credentials
from engine.validation import ValidationReport
from engine.validation.rules import ModelCheckType

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/checks", tags=["checks"])


def _environments(services: Services) -> Environments | None:
    """This node's environment cache, when it scores checks itself (embedded mode)."""
    if services.settings.broker_url:
        return None
    try:
        backend = services.runners.get().backend
    except ScoreboxError:
        return None
    cache = getattr(backend, "environments", None)
    return cache if isinstance(cache, Environments) else None


def _config_form(raw: str | None) -> dict[str, object] | None:
    """The upload form's ``config``: a JSON object, or absent."""
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"config is not JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise InvalidRequestError('config must be a JSON object, e.g. {"threshold": 0.8}')
    return value


def _save(
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    spec: CheckSpec,
    response: Response,
    audit: AuditLog,
    services: Services | None = None,
) -> CheckOut:
    tenant = principal.tenant_id
    environments = None
    if services is not None and spec.source and BLOCK_MARKER in spec.source:
        environments = _environments(services)
    # One push of a tenant at a time is admitted: the quota `environments` counts its builds
    # in flight, which the build started below joins before the next push is counted.
    admitting = environments.in_flight.admitting(tenant) if environments else nullcontext()
    with admitting:
        building = environments.in_flight.of(tenant) if environments else set()
        outcome = catalog.save_check(
            store, principal, spec, runs.quotas(tenant), runs.packages, building
        )
        if environments is not None and spec.source:  # the push returns now; the build goes on
            build_in_background(spec.source, environments, tenant)
    hooks.check_pushed(audit, principal, "api", outcome)
    response.status_code = 201 if outcome.created else 200
    return CheckOut.of(outcome.check, catalog.save_warnings(outcome, runs.builtins))


@router.post(
    "",
    response_model=CheckOut,
    status_code=201,
    summary="Create or update a check",
    description="Identical content returns the existing version (200); changed content "
    "creates version N+1 (201); an invalid check is 422 with `errors[{code, message, line, col}]`.",
    responses=responses(
        401,
        422,
        429,
        ok={200: {"description": "Unchanged: the existing version", "model": CheckOut}},
    ),
)
def create_check(
    spec: CheckSpec,
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    response: Response,
    audit: AuditDep,
    services: ServicesDep,
) -> CheckOut:
    return _save(store, runs, principal, spec, response, audit, services)


@router.post(
    "/upload",
    response_model=CheckOut,
    status_code=201,
    summary="Create or update a check from a file (.py source or a prompt template)",
    description="Multipart form: `file` (a `.py` source, or a model check's prompt template), "
    "optional `name` (default: the file name without its extension), `kind`, `check_type`, "
    "`description`, `tags` (comma-separated), `policy`. Without `kind`, a `.py` file is a code "
    "check and a `.txt`, `.md`, `.prompt` or `.tmpl` file a model check; any other file is a "
    "code check when it defines `evaluate` or `class Check`, else a model check. A name that "
    "is a built-in's adds a `shadows-builtin` warning. `origin`: `pushed` (default) or "
    "`generated` (written by the check generator).",
    responses=responses(401, 422, 429, ok={200: {"description": "Unchanged", "model": CheckOut}}),
)
async def upload_check(
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    audit: AuditDep,
    response: Response,
    services: ServicesDep,
    file: Annotated[
        UploadFile,
        File(description="The check: Python source (code) or a prompt template (model)."),
    ],
    name: Annotated[
        str | None,
        Form(description="Check name (default: the file name without its extension)."),
    ] = None,
    description: Annotated[str | None, Form(description="What the check measures.")] = None,
    tags: Annotated[str | None, Form(description="Comma-separated tags.")] = None,
    policy: Annotated[
        Policy,
        Form(
            description="Code checks: `standard` (any import) or `restricted` "
            "(RestrictedPython and an import allowlist)."
        ),
    ] = Policy.STANDARD,
    kind: Annotated[
        Literal["code", "model"] | None,
        Form(description="`code` or `model`; default: decided from the file name and content."),
    ] = None,
    check_type: Annotated[
        ModelCheckType | None,
        Form(description="Model checks: `score` (default) or `pass_fail`."),
    ] = None,
    entry: Annotated[
        str | None,
        Form(
            description="Code checks in another tool's format: the entry function, where "
            "several fit (promptfoo's `file://x.py:fn`)."
        ),
    ] = None,
    config: Annotated[
        str | None,
        Form(
            description="Code checks: the configuration (a JSON object) passed to the scorer: "
            "promptfoo's `context['config']`, reward-kit and Braintrust keyword parameters."
        ),
    ] = None,
    origin: Annotated[
        str | None,
        Form(
            description="`pushed` (default) or `generated` (written by the check generator); "
            "`builtin` is refused."
        ),
    ] = None,
) -> CheckOut:
    raw = await file.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{file.filename}: not UTF-8 text ({exc})") from exc
    filename = file.filename or "check.py"
    kind = kind or kind_of_file(filename, text)
    if kind == "code" and check_type is not None:
        raise InvalidRequestError("check_type is for model checks (kind=model) only")
    try:
        spec = CheckSpec(
            name=name or PurePath(filename).stem,
            description=description,
            tags=[t.strip() for t in (tags or "").split(",") if t.strip()],
            kind=kind,
            source=text if kind == "code" else None,
            prompt_template=text if kind == "model" else None,
            check_type=check_type,
            policy=policy,
            entry=entry or None,
            config=_config_form(config),
            # a str here: CheckSpec refuses any but `pushed` and `generated`, naming them
            origin=cast("PushedOrigin", origin or "pushed"),
        )
    except ValueError as exc:
        raise InvalidRequestError(f"bad check fields: {exc}") from exc
    return _save(store, runs, principal, spec, response, audit, services)


@router.post(
    "/validate",
    response_model=ValidationReport,
    summary="Validate a check without saving it",
    description="Always 200 with the report (`valid`, `issues`); nothing is stored.",
    responses=responses(401, 422),
)
def validate_check(
    spec: ValidateRequest, runs: RunsDep, principal: PrincipalDep
) -> ValidationReport:
    report, _ = validate_spec(spec, runs.quotas(principal.tenant_id), runs.packages)
    return report


@router.get(
    "",
    response_model=CheckList,
    summary="List checks",
    description="This tenant's checks (latest version of each, or every version with "
    "`all_versions=true`), followed by the built-ins (`origin: builtin`). A version that "
    "requires an agreement with human labels carries it judged now in `required_agreement`: "
    "`status` other than `passed` flags a check that does not meet it.",
    responses=responses(401),
)
def list_checks(
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    labels: LabelStoreDep,
    all_versions: bool = False,
    include_builtins: bool = True,
) -> CheckList:
    found = store.list_checks(principal.tenant_id, all_versions)
    judged = required_by_id(
        store, labels, principal.tenant_id, [(c.id, c.name, c.version) for c in found]
    )
    own = [
        CheckOut.of(c).model_copy(update={"required_agreement": judged.get(c.id)}) for c in found
    ]
    builtins = []
    if include_builtins:
        builtins = [CheckOut.of_builtin(item) for item in describe(runs.builtins)]
    return CheckList(checks=own + builtins)


@router.get(
    "/{ref}",
    response_model=CheckOut,
    summary="Get a check",
    description="`ref` is a name (latest version), `name@N`, or an id; `?version=N` picks a "
    "version. Built-ins are found by name. A deleted version stays readable by its id "
    "(`deleted_at` set); a name means its live versions only.",
    responses=responses(401, 404),
)
def get_check(
    ref: str,
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    version: Annotated[int | None, Query(ge=1, le=catalog.MAX_VERSION)] = None,
) -> CheckOut:
    try:
        found = catalog.get_check(store, principal.tenant_id, ref, version, include_deleted=True)
        return CheckOut.of(found)
    except NotFoundError as exc:
        builtin = runs.builtins.get(ref) if version is None else None
        if builtin is None:
            message = catalog.unknown_check(
                store, principal.tenant_id, ref, runs.builtins, str(exc)
            )
            raise NotFoundError(message) from None
        [item] = describe({builtin.name: builtin})
        return CheckOut.of_builtin(item)


@router.get(
    "/{ref}/environment",
    response_model=EnvironmentStatus,
    summary="The build state of a check's declared environment",
    description="A check with a PEP 723 block (`# /// script`) runs in an environment built "
    "once per requirement set: `missing` (the first job, or the push on a scoring node, "
    "builds it), `building`, `ready` (with what resolved and its size) or `failed` (with "
    "the error and the build log's path). `none`: the check declares nothing.",
    responses=responses(401, 404),
)
def check_environment(
    ref: str,
    store: StoreDep,
    principal: PrincipalDep,
    services: ServicesDep,
    version: Annotated[int | None, Query(ge=1, le=catalog.MAX_VERSION)] = None,
) -> EnvironmentStatus:
    check = catalog.get_check(store, principal.tenant_id, ref, version)
    source = check.source or ""
    status = status_of(source, _environments(services) if BLOCK_MARKER in source else None)
    return _from_workers(status, services)


def _from_workers(status: EnvironmentStatus, services: Services) -> EnvironmentStatus:
    """In distributed mode, ``unknown`` told from what the worker hosts published."""
    replies = getattr(services.runs.dispatch, "replies", None)  # the Celery dispatch's
    if status.state != "unknown" or not services.settings.broker_url or replies is None:
        return status
    try:
        hosts = replies.host_environments()
    except ScoreboxError as exc:  # the broker may be restarting: say unknown
        log.warning("could not read the workers' environments: %s", mask_credentials(str(exc)))
        return status
    return distributed_status(status, services.settings.image, hosts)


@router.delete(
    "/{ref}",
    response_model=Deleted,
    summary="Delete a check",
    description="Soft delete: a name deletes every version; `name@N`, an id or `?version=N` "
    "deletes one. Runs that used a deleted version keep their results; version numbers are "
    "never reused.",
    responses=responses(401, 404),
)
def delete_check(
    ref: str,
    store: StoreDep,
    principal: PrincipalDep,
    audit: AuditDep,
    version: Annotated[int | None, Query(ge=1, le=catalog.MAX_VERSION)] = None,
) -> Deleted:
    deleted = catalog.delete_check(store, principal.tenant_id, ref, version)
    hooks.check_deleted(audit, principal, "api", ref, version, deleted)
    return Deleted(deleted=deleted)
