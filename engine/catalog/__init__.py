"""The catalog: a tenant's checks. Create-or-update with immutable versions, lookup by
reference, soft delete, and references resolved for scoring (the tenant's checks first,
then the built-ins).

Versioning: a check version is identified by the sha256 of its content
(:func:`~engine.catalog.spec.content_sha256`). Saving content identical to the latest
live version returns that version; anything else becomes version N+1 (numbers are never
reused, even after a delete). Description, tags and origin are not content: changing
only them returns the existing version unchanged.

Deleting is a soft delete: ``DELETE name`` hides every version of the name,
``DELETE name?version=N`` hides one. Hidden versions can no longer be
referenced, but runs that already used them keep their results.

The room's other modules: :mod:`~engine.catalog.spec` (a check to save: its fields,
validation and content digest), :mod:`~engine.catalog.origin` (where a check comes
from), :mod:`~engine.catalog.ids` (a version's UUID) and :mod:`~engine.catalog.files`
(the kind of a pushed file).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.builtins import BuiltinCheck, Builtins
from engine.catalog.ids import check_id_from_uuid
from engine.catalog.spec import CheckSpec, content_sha256, validate_spec
from engine.contract import OutputType, Policy
from engine.environments.spec import BLOCK_MARKER, PackageRules, read_block
from engine.errors import (
    CheckValidationError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    QuotaExceededError,
)
from engine.json_limits import FreeJSON
from engine.names import BUILTIN_PREFIX
from engine.storage import CheckStore, CheckVersion, RunCheck, Store, new_id, utcnow
from engine.tenancy.auth import Principal
from engine.tenancy.quotas import Quotas
from engine.validation import Issue, ValidationReport

#: Highest check version number (the column is a 32-bit INTEGER on PostgreSQL).
MAX_VERSION = 2**31 - 1


@dataclass(frozen=True)
class SaveOutcome:
    check: CheckVersion
    created: bool
    report: ValidationReport


@dataclass(frozen=True)
class ResolvedCheck:
    """A check reference resolved for scoring."""

    kind: str  # what it is: code | builtin | model (catalog.origin: where it comes from)
    name: str
    version: int | None = None
    id: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    check: CheckVersion | None = None
    builtin: BuiltinCheck[Any] | None = None

    def to_run_check(self) -> RunCheck:
        output = self.check.output_data_type if self.check else None
        if self.builtin is not None:
            output = self.builtin.output_data_type.value
        origin = "generated" if self.check and self.check.origin == "generated" else None
        return RunCheck(self.kind, self.name, self.version, self.id, self.params, output, origin)


class CheckRef(BaseModel):
    """A check reference with parameters (for parameterised built-ins)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    id: str | None = None
    version: int | None = Field(default=None, ge=1, le=MAX_VERSION)
    params: dict[str, FreeJSON] = Field(default_factory=dict)


def check_environments(
    store: Store,
    tenant_id: str,
    spec: CheckSpec,
    quotas: Quotas,
    packages: PackageRules | None = None,
    building: Collection[tuple[str, ...]] = (),
) -> None:
    """The tenant's quota of distinct declared environments, counting this check's and the
    requirement sets it has being built (``building``)."""
    if spec.kind != "code" or not spec.source or BLOCK_MARKER not in spec.source:
        return
    declared = read_block(spec.source, packages)
    if not declared.requirements:
        return
    sets = {declared.requirements, *building}
    for check in store.list_checks(tenant_id):
        if check.name != spec.name and check.source and BLOCK_MARKER in check.source:
            other = read_block(check.source).requirements
            if other:
                sets.add(other)
    if len(sets) > quotas.environments:
        raise QuotaExceededError(
            f"this check would make {len(sets)} distinct declared environments (counting "
            f"{len(building)} being built), over this tenant's quota `environments` of "
            f"{quotas.environments}: declare the same `dependencies` as an existing check, "
            "wait for the builds in flight, delete checks you no longer use, or ask the "
            "operator to raise the quota",
            retry_after_seconds=3600,
        )


def save_check(
    store: Store,
    principal: Principal,
    spec: CheckSpec,
    quotas: Quotas,
    packages: PackageRules | None = None,
    building: Collection[tuple[str, ...]] = (),
) -> SaveOutcome:
    """Create or update: identical content returns the latest version, else version N+1.

    ``packages``: the operator's allow/deny rules for a PEP 723 block (None: any);
    ``building``: requirement sets the tenant has being built (the ``environments`` quota).
    """
    report, spec = validate_spec(spec, quotas, packages)
    if not report.valid:
        raise CheckValidationError(f"check {spec.name!r} is not valid", report)
    check_environments(store, principal.tenant_id, spec, quotas, packages, building)
    digest = content_sha256(spec)
    tenant_id = principal.tenant_id
    for _ in range(5):
        latest = store.latest_check(tenant_id, spec.name)
        if latest is not None and latest.sha256 == digest:
            return SaveOutcome(latest, False, report)
        version = store.max_check_version(tenant_id, spec.name) + 1
        check = CheckVersion(
            id=new_id("chk"),
            tenant_id=tenant_id,
            name=spec.name,
            version=version,
            kind=spec.kind,
            description=spec.description,
            tags=list(spec.tags),
            source=spec.source if spec.kind == "code" else None,
            prompt_template=spec.prompt_template if spec.kind == "model" else None,
            check_type=spec.check_type.value if spec.check_type else None,
            policy=spec.policy.value,
            output_data_type=(report.output_data_type or spec.output_data_type or None),
            requires_scenario_input=report.requires_scenario_input,
            requires_scenario_result=report.requires_scenario_result,
            limits=spec.limits or None,
            entry=spec.entry if spec.kind == "code" else None,
            config=dict(spec.config) if spec.kind == "code" and spec.config is not None else None,
            origin=spec.origin,
            sha256=digest,
            author_key_id=principal.key_id,
            created_at=utcnow(),
        )
        try:
            return SaveOutcome(store.insert_check(check), True, report)
        except ConflictError:
            continue  # another request saved a version of this name at the same moment
    raise ConflictError(f"check {spec.name!r} is being saved concurrently: retry")


def split_ref(ref: str) -> tuple[str, int | None]:
    """``name@3`` → (``name``, 3); ``name`` → (``name``, None)."""
    name, sep, version = ref.partition("@")
    if not sep:
        return name, None
    if not (version.isascii() and version.isdigit()) or not 1 <= int(version) <= MAX_VERSION:
        raise InvalidRequestError(
            f"bad check reference {ref!r}: use name, name@VERSION (1 to {MAX_VERSION}) or an id"
        )
    return name, int(version)


# ---- a check version's UUID: how the Okareo SDK sees it, and /v1 reads it too ----------


def _require_version(ref: str, version: int | None) -> None:
    """A version no check can have is not found (a database cannot even hold it: 64 bits)."""
    if version is not None and not 1 <= version <= MAX_VERSION:
        raise NotFoundError(f"check {ref!r} has no version {version}")


def get_check(
    store: CheckStore,
    tenant_id: str,
    ref: str,
    version: int | None = None,
    include_deleted: bool = False,
) -> CheckVersion:
    """A tenant's check by id (``chk_...`` or its UUID), ``name``, ``name@N``, or name + version.

    ``include_deleted``: an id may name a deleted version (it stays readable by id; a name
    only ever means its live versions).
    """
    _require_version(ref, version)
    ref = check_id_from_uuid(ref) or ref
    if ref.startswith("chk_"):
        found = store.get_check_by_id(tenant_id, ref, include_deleted=include_deleted)
        if version is not None and found.version != version:
            raise NotFoundError(f"check {ref!r} is version {found.version}, not {version}")
        return found
    name, ref_version = split_ref(ref)
    return store.get_check(tenant_id, name, version or ref_version)


def delete_check(store: CheckStore, tenant_id: str, ref: str, version: int | None = None) -> int:
    """Soft-delete a name (every version) or one version; returns how many were hidden."""
    _require_version(ref, version)
    ref = check_id_from_uuid(ref) or ref
    if ref.startswith("chk_"):
        found = store.get_check_by_id(tenant_id, ref)
        return store.delete_check(tenant_id, found.name, found.version)
    name, ref_version = split_ref(ref)
    return store.delete_check(tenant_id, name, version or ref_version)


def judge_models(params: dict[str, Any]) -> list[str] | None:
    """The ensemble of judge models a model-check reference names (``params.models``)."""
    models = params.get("models")
    if models is None:
        return None
    if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
        raise InvalidRequestError("params.models must be a list of judge model names")
    return models


def unsaved_code_check(
    tenant_id: str, source: str, output_type: OutputType, name: str = "generated"
) -> ResolvedCheck:
    """Code that is not saved (the generator's attempts), under the restricted policy."""
    version = CheckVersion(
        id="",
        tenant_id=tenant_id,
        name=name,
        version=0,
        kind="code",
        description=None,
        tags=[],
        source=source,
        prompt_template=None,
        check_type=None,
        policy=Policy.RESTRICTED.value,
        output_data_type=output_type.value,
        requires_scenario_input=False,
        requires_scenario_result=False,
        limits=None,
        sha256=hashlib.sha256(source.encode()).hexdigest(),
        author_key_id=None,
        created_at=utcnow(),
    )
    return ResolvedCheck("code", name, check=version)


def shadow_warning(name: str) -> Issue:
    """The warning a saved check gets when its name is a built-in's."""
    return Issue(
        severity="warning",
        code="shadows-builtin",
        message=f"{name!r} shadows the built-in {name}; use {BUILTIN_PREFIX}{name} to reach "
        "the built-in",
    )


def save_warnings(outcome: SaveOutcome, builtins: Builtins) -> list[Issue]:
    """What a save answers besides the check: its non-error issues, then ``shadows-builtin``."""
    warnings = [i for i in outcome.report.issues if i.severity != "error"]
    if outcome.check.name in builtins:
        warnings.append(shadow_warning(outcome.check.name))
    return warnings


def unknown_check(
    store: CheckStore, tenant_id: str, ref: str, builtins: Builtins, message: str
) -> str:
    """A not-found ``message`` about check ``ref``, with the tenant's and the built-ins'
    names closest to it when the name itself is unknown (not just a version of it)."""
    if ref.startswith("chk_") or check_id_from_uuid(ref):
        return message
    name = ref.partition("@")[0]
    known = {c.name for c in store.list_checks(tenant_id)} | set(builtins)
    if name in known:
        return message
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    return f"{message}{hint}: GET /v1/checks lists your checks, GET /v1/builtins the built-ins"


def resolve(
    store: Store, tenant_id: str, ref: str | CheckRef | dict[str, Any], builtins: Builtins
) -> ResolvedCheck:
    """Resolve a run's check reference: the tenant's checks first, then built-ins."""
    if isinstance(ref, dict):
        ref = CheckRef.model_validate(ref)
    params: dict[str, Any] = {}
    if isinstance(ref, CheckRef):
        params = ref.params
        if ref.id:
            key, version = ref.id, ref.version
        elif ref.name:
            key, version = ref.name, ref.version
        else:
            raise InvalidRequestError("a check reference object needs `name` or `id`")
    else:
        key, version = ref, None
    if key.startswith(BUILTIN_PREFIX):
        # `builtin:NAME` always names the built-in, even when the tenant pushed a NAME
        name = key.removeprefix(BUILTIN_PREFIX)
        builtin = builtins.get(name)
        if builtin is None or version is not None:
            raise InvalidRequestError(
                f"{key!r}: there is no built-in {name!r}; GET /v1/builtins lists them"
            )
        builtin.validate_params(params)
        return ResolvedCheck(builtin.kind, builtin.name, None, None, params, None, builtin)
    try:
        check = get_check(store, tenant_id, key, version)
    except NotFoundError as exc:
        builtin = builtins.get(key) if version is None else None
        if builtin is None:
            raise NotFoundError(unknown_check(store, tenant_id, key, builtins, str(exc))) from None
        builtin.validate_params(params)
        return ResolvedCheck(builtin.kind, builtin.name, None, None, params, None, builtin)
    if check.kind == "model":
        judge_models(params)
    return ResolvedCheck(check.kind, check.name, check.version, check.id, params, check)


# -- the kind of a pushed file -----------------------------------------------------------
