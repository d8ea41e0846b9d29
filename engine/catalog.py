"""Checks of a tenant: create-or-update with immutable versions, lookup, soft delete.

Versioning: a check version is identified by the sha256 of its content (kind,
source or prompt template, check type, policy, declared flags, limits).
Saving content identical to the latest live version returns that version;
anything else becomes version N+1 (numbers are never reused, even after a
delete). Description and tags are not content: changing only them returns the
existing version unchanged.

Deleting is a soft delete: ``DELETE name`` hides every version of the name,
``DELETE name?version=N`` hides one. Hidden versions can no longer be
referenced, but runs that already used them keep their results.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.builtins import BuiltinCheck, Builtins
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
from engine.judging.templates import validate_template
from engine.models import Limits
from engine.names import BUILTIN_PREFIX
from engine.storage import CheckStore, CheckVersion, RunCheck, Store, new_id, utcnow
from engine.tenancy.auth import Principal
from engine.tenancy.quotas import Quotas, check_source
from engine.validation import Issue, ValidationReport, validate
from engine.validation.rules import ModelCheckType

#: Highest check version number (the column is a 32-bit INTEGER on PostgreSQL).
MAX_VERSION = 2**31 - 1
#: Letters, digits, ``_ . -`` and inner spaces (Okareo check names have spaces); no ``@``.
NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_.\- ]{0,98}[A-Za-z0-9_.\-])?$"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: Where a check comes from, apart from what it is (its ``kind``: ``code``, ``model`` or
#: ``builtin``): scorebox's own (``builtin``: a judged built-in is ``kind`` ``model``), a
#: tenant's push (``pushed``), or the check generator's, pushed as such (``generated``).
#: A version's is stored (migration 0017); a built-in's is said, not stored.
Origin = Literal["builtin", "pushed", "generated"]
#: The origins a push may name (``builtin`` is scorebox's own, never pushed).
PushedOrigin = Literal["pushed", "generated"]
PUSHED_ORIGINS: tuple[PushedOrigin, ...] = ("pushed", "generated")


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


@dataclass(frozen=True)
class SaveOutcome:
    check: CheckVersion
    created: bool
    report: ValidationReport


def origin_of(check: RunCheck) -> Origin:
    """A run's check's origin: built-ins are resolved without a version id (a run keeps
    no version's origin: its check's page says whether it was generated)."""
    return "builtin" if check.id is None else "pushed"


def version_origin(check: CheckVersion) -> Origin:
    """A stored version's origin: ``pushed`` or ``generated``."""
    return "generated" if check.origin == "generated" else "pushed"


@dataclass(frozen=True)
class ResolvedCheck:
    """A check reference resolved for scoring."""

    kind: str  # what it is: code | builtin | model (origin_of says where it comes from)
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
        return RunCheck(self.kind, self.name, self.version, self.id, self.params, output)


class CheckRef(BaseModel):
    """A check reference with parameters (for parameterised built-ins)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    id: str | None = None
    version: int | None = Field(default=None, ge=1, le=MAX_VERSION)
    params: dict[str, FreeJSON] = Field(default_factory=dict)


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

#: The last 12 hex digits of a check version's UUID; the first 20 are its ``chk_`` id's.
_CHECK_UUID_TAIL = "5c0b0000c4ec"
_CHECK_ID_HEX = 20


def check_uuid(check_id: str) -> str:
    """The UUID of a check version: a reversible spelling of its ``chk_<20 hex>`` id."""
    prefix, _, digits = check_id.partition("_")
    if prefix != "chk" or len(digits) != _CHECK_ID_HEX:
        raise ValueError(f"not a scorebox check id: {check_id!r}")
    return str(uuid.UUID(digits + _CHECK_UUID_TAIL))


def check_id_from_uuid(value: str) -> str | None:
    """The ``chk_`` id a check version UUID spells, or None when ``value`` is not one."""
    try:
        digits = uuid.UUID(value).hex
    except (ValueError, AttributeError, TypeError):
        return None
    if not digits.endswith(_CHECK_UUID_TAIL):
        return None
    return "chk_" + digits[:_CHECK_ID_HEX]


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

CheckKind = Literal["code", "model"]

#: File extensions of a model check's prompt template.
TEMPLATE_SUFFIXES: tuple[str, ...] = (".txt", ".md", ".prompt", ".tmpl")


def kind_of_file(filename: str, text: str) -> CheckKind:
    """The kind of check a file named ``filename`` holding ``text`` is.

    ``scorebox check push FILE`` and ``POST /v1/checks/upload`` decide alike: ``.py`` is
    a code check; ``.txt``, ``.md``, ``.prompt`` and ``.tmpl`` are a model check's prompt
    template; any other file is a code check when it parses as Python and defines
    ``evaluate`` or ``class Check`` at module level, and a prompt template otherwise. An
    explicit ``kind`` (``--kind``, the form's ``kind`` field) overrides the rule.
    """
    suffix = PurePath(filename).suffix.lower()
    if suffix == ".py":
        return "code"
    if suffix in TEMPLATE_SUFFIXES:
        return "model"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return "model"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "evaluate":
            return "code"
        if isinstance(node, ast.ClassDef) and node.name == "Check":
            return "code"
    return "model"
