"""Request and response bodies of the HTTP API (with OpenAPI examples)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from engine.builtins import BUILTINS_CREATED_AT
from engine.catalog import CheckRef
from engine.catalog.origin import Origin, origin_of, version_origin
from engine.catalog.spec import NAME_PATTERN, CheckSpec
from engine.json_limits import FreeJSON
from engine.models import Row
from engine.runs.summary import CheckSummary
from engine.storage import CheckVersion, Run, RunCheck, StoredResult
from engine.validation import Issue

CheckRefIn = str | CheckRef

_ROW_EXAMPLE: dict[str, Any] = {
    "id": "q-1",
    "scenario_input": "How do I reset my password?",
    "model_output": "Open Settings > Security and choose 'Reset password'.",
    "scenario_result": "Settings > Security > Reset password",
}
_LIMITS_DOC = "Lower the sandbox limits for this request (never raises them)."
_KIND_DOC = (
    "What the check is: `code` (Python run in the sandbox), `model` (a prompt an LLM judge "
    "answers), `builtin` (a deterministic built-in run in process). Where it comes from is "
    "`origin`: a judged built-in is `kind` `model`, `origin` `builtin`."
)
_ORIGIN_DOC = (
    "Where the check comes from: `builtin` (scorebox's own), `pushed` (a version of this "
    "tenant's, `POST /v1/checks`) or `generated` (written by the check generator and pushed "
    "with `origin: generated`)."
)


class CheckOut(BaseModel):
    """One version of a check (or a built-in)."""

    id: str | None = Field(examples=["chk_5d0c9e3b8a7f61d2a4c1"])
    name: str = Field(examples=["mentions_expected"])
    version: int | None = Field(examples=[2])
    kind: str = Field(examples=["code"], description=_KIND_DOC)
    origin: Origin = Field(default="pushed", examples=["pushed"], description=_ORIGIN_DOC)
    builtin: bool = Field(
        default=False,
        description='Deprecated: read `origin` (`builtin` is `origin == "builtin"`).',
        json_schema_extra={"deprecated": True},
    )
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    prompt_template: str | None = None
    check_type: str | None = None
    policy: str | None = "standard"
    output_data_type: str | None = Field(default=None, examples=["bool"])
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    limits: dict[str, Any] | None = None
    entry: str | None = Field(default=None, description="The entry function named at upload.")
    config: dict[str, Any] | None = Field(
        default=None, description="The configuration the version passes its scorer."
    )
    sha256: str | None = None
    created_at: datetime | None = None
    deleted_at: datetime | None = Field(
        default=None, description="When this version was deleted (readable by id after)."
    )
    warnings: list[Issue] = Field(default_factory=list)
    params: dict[str, Any] | None = Field(
        default=None,
        description="Built-ins: JSON schema of the `params` a check reference may pass.",
    )
    required_agreement: dict[str, Any] | None = Field(
        default=None,
        description="In lists: the agreement with human labels this version requires "
        "(`PUT /v1/checks/{ref}/required-agreement`), judged now: `{check, requirement, "
        "status, message}`, `status` one of `passed`, `below`, `too few labels`; null when "
        "it requires none.",
    )

    @classmethod
    def of_builtin(cls, item: Mapping[str, Any]) -> CheckOut:
        """A built-in from :func:`engine.builtins.describe` (the listing /v1/builtins shows)."""
        return cls(
            id=None,
            name=item["name"],
            version=None,
            kind=item["kind"],
            origin="builtin",
            builtin=True,
            description=item["description"],
            output_data_type=item["output_data_type"],
            policy=None,
            params=item["params_schema"],
            created_at=BUILTINS_CREATED_AT,
        )

    @classmethod
    def of(cls, check: CheckVersion, warnings: list[Issue] | None = None) -> CheckOut:
        return cls(
            id=check.id,
            name=check.name,
            version=check.version,
            kind=check.kind,
            origin=version_origin(check),
            description=check.description,
            tags=check.tags,
            source=check.source,
            prompt_template=check.prompt_template,
            check_type=check.check_type,
            policy=check.policy,
            output_data_type=check.output_data_type,
            requires_scenario_input=check.requires_scenario_input,
            requires_scenario_result=check.requires_scenario_result,
            limits=check.limits,
            entry=check.entry,
            config=check.config,
            sha256=check.sha256,
            created_at=check.created_at,
            deleted_at=check.deleted_at,
            warnings=warnings or [],
        )


class CheckList(BaseModel):
    checks: list[CheckOut]


class ValidateRequest(CheckSpec):
    """A check to validate; nothing is saved."""

    name: str = Field(default="check", pattern=NAME_PATTERN)


class Deleted(BaseModel):
    deleted: int = Field(description="How many versions were deleted.", examples=[3])


class ScoreRequest(BaseModel):
    """Rows to score now with one or more checks."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "checks": [
                        "is_json",
                        {"name": "regex_match", "params": {"pattern": "Settings"}},
                    ],
                    "rows": [dict(_ROW_EXAMPLE)],
                }
            ]
        },
    )

    checks: list[CheckRefIn] = Field(
        min_length=1, description="`name`, `name@version`, a check id, or {name, version, params}."
    )
    rows: list[Row] = Field(min_length=1, description="At most 1,000 rows.")
    limits: dict[str, Any] | None = Field(default=None, description=_LIMITS_DOC)


class ResultItem(BaseModel):
    """One check's result on one row."""

    row_index: int = Field(examples=[0])
    row_id: str | int | None = Field(default=None, examples=["q-1"])
    check: str = Field(examples=["mentions_expected"])
    version: int | None = Field(default=None, examples=[2])
    check_id: str | None = None
    status: str = Field(examples=["ok"])
    score: bool | int | float | None = Field(default=None, examples=[True])
    explanation: str | None = None
    error: str | None = None
    output: str | None = None
    duration_ms: float = Field(default=0.0, examples=[0.4])
    model: str | None = Field(
        default=None,
        description="The model that served the check's model-gateway calls, where one did.",
    )
    passed: bool | None = Field(
        default=None, description="The check's own pass flag (promptfoo, bool scores)."
    )
    metadata: dict[str, Any] | None = Field(
        default=None, description="Sub-scores and extra keys the check returned."
    )


class ScoreResponse(BaseModel):
    results: list[ResultItem] = Field(description="Ordered by row, then check.")
    summary: list[CheckSummary]


if TYPE_CHECKING:
    SentRows = list[Any]
else:
    #: Rows in the OpenAPI document, anything at validation (left to the route).
    SentRows = Annotated[list[Row], SkipValidation]


class RunRequest(BaseModel):
    """An asynchronous run: checks applied to rows (any number, within the tenant's quota)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "checks": [
                        "is_json",
                        {"name": "regex_match", "params": {"pattern": "Settings"}},
                    ],
                    "rows": [_ROW_EXAMPLE],
                    "labels": {"dataset": "support-v3"},
                }
            ]
        },
    )

    checks: list[CheckRefIn] = Field(min_length=1)
    #: The rows as sent, documented as rows but not validated by this model: the route
    #: checks them in one pass (engine.row_dumps), else with :class:`RunRequestChecked`.
    rows: SentRows = Field(min_length=1)
    limits: dict[str, Any] | None = Field(default=None, description=_LIMITS_DOC)
    labels: dict[str, FreeJSON] = Field(default_factory=dict, description="Free-form, echoed back.")


class RunRequestChecked(RunRequest):
    """:class:`RunRequest` with its rows validated as :class:`Row` values: what a request
    whose rows the one-pass check cannot vouch for is validated with, and so worded."""

    rows: list[Row] = Field(min_length=1)


class RunCheckOut(BaseModel):
    kind: str = Field(description=_KIND_DOC)
    origin: Origin = Field(default="pushed", description=_ORIGIN_DOC)
    name: str
    version: int | None = None
    id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, check: RunCheck) -> RunCheckOut:
        return cls(
            kind=check.kind,
            origin=origin_of(check),
            name=check.name,
            version=check.version,
            id=check.id,
            params=check.params,
        )


class Progress(BaseModel):
    done: int = Field(description="Results stored.", examples=[1500])
    total: int = Field(description="Rows times checks.", examples=[2000])
    fraction: float = Field(examples=[0.75])


class RunOut(BaseModel):
    """A run: status, progress and per-check summary."""

    id: str = Field(examples=["run_0a1b2c3d4e5f60718293"])
    status: str = Field(examples=["running"])
    row_count: int
    checks: list[RunCheckOut]
    progress: Progress
    summary: list[CheckSummary] = Field(default_factory=list)
    labels: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    llm_usage: dict[str, int] | None = Field(
        default=None,
        description="LLM calls and tokens this run spent (cache hits counted apart).",
        examples=[
            {
                "calls": 40,
                "cached_calls": 0,
                "prompt_tokens": 9120,
                "completion_tokens": 1800,
                "total_tokens": 10920,
            }
        ],
    )

    @classmethod
    def of(cls, run: Run, done: int, summary: list[CheckSummary] | None = None) -> RunOut:
        total = run.total_results
        return cls(
            id=run.id,
            status=run.status.value,
            row_count=run.row_count,
            checks=[RunCheckOut.of(c) for c in run.checks],
            progress=Progress(
                done=done, total=total, fraction=round(done / total, 4) if total else 1
            ),
            summary=summary or [],
            labels=run.labels,
            error=run.error,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            llm_usage=run.llm_usage,
        )


class RunList(BaseModel):
    runs: list[RunOut]


class ResultsPage(BaseModel):
    results: list[ResultItem]
    next_offset: int | None = Field(
        description="Pass as `offset` for the next page; null at the end."
    )


def result_item(run: Run, stored: StoredResult, row_id: str | int | None = None) -> ResultItem:
    check = run.checks[stored.check_index]
    return ResultItem(
        row_index=stored.row_index,
        row_id=row_id,
        check=check.name,
        version=check.version,
        check_id=check.id,
        status=stored.status,
        score=stored.score,
        explanation=stored.explanation,
        error=stored.error,
        output=stored.output,
        duration_ms=stored.duration_ms,
        passed=stored.passed,
        metadata=stored.metadata,
        model=stored.model,
    )


class TenantCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200, examples=["acme"])
    quotas: dict[str, int] = Field(default_factory=dict, examples=[{"rows_per_run": 100000}])


class TenantOut(BaseModel):
    id: str
    name: str
    quotas: dict[str, Any]
    created_at: datetime


class KeyOut(BaseModel):
    id: str
    tenant_id: str
    prefix: str = Field(description="The first characters of the key (the rest is never shown).")
    name: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None


class NewKeyOut(BaseModel):
    tenant: TenantOut
    key: KeyOut
    api_key: str = Field(description="The secret: shown once, store it now.")
