"""``/v1/rules``: which received spans are scored, by which pinned checks; their series,
preview and backfills. Another tenant's rule is a 404."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from engine.agreement.corrected import rule_corrected_pass_rates
from engine.errors import InvalidRequestError, NotFoundError
from engine.http.deps import PrincipalDep, RunsDep, ServicesDep
from engine.http.problems import responses
from engine.json_limits import FreeJSON
from engine.online.filters import FilterError, check_filter
from engine.online.picking import picked
from engine.online.rules import RulePatch, RuleSpec, pin, refuse_unmet
from engine.online.series import parse_bucket, series
from engine.storage.backfill_sql import backfill_store
from engine.storage.label_sql import label_store
from engine.storage.records import utcnow
from engine.storage.rule_records import Backfill, Rule, RuleVersion
from engine.storage.rule_sql import UNSET, rule_store
from engine.storage.score_sql import score_store
from engine.storage.span_sql import span_store

router = APIRouter(prefix="/v1/rules", tags=["rules"])

TAG_DESCRIPTION = (
    "Rules pick received spans (a filter and a sample rate) and score them with pinned "
    "check versions; their series, preview and backfills."
)
NamePath = Annotated[str, Path(max_length=100)]
IgnoreAgreement = Annotated[
    bool,
    Query(
        description="Create or change the rule even when a pinned check's version requires an "
        "agreement with human labels that the labels do not meet now."
    ),
]
#: Most spans a preview looks at, and a backfill may take by default and at most.
PREVIEW_MAX_SPANS = 100_000
BACKFILL_DEFAULT_CAP = 10_000
BACKFILL_MAX_CAP = 1_000_000


class RuleOut(BaseModel):
    name: str
    enabled: bool
    version: int = Field(description="The current rule version.")
    checks: list[dict[str, Any]] = Field(description="The pinned check versions.")
    filter: dict[str, Any]
    sample_rate: float
    daily_token_budget: int | None
    created_at: datetime
    updated_at: datetime
    counts: dict[str, int] | None = Field(
        default=None, description="The rule's span scores by status (skips included)."
    )
    backlog: int | None = Field(default=None, description="Scores waiting to be written.")
    corrected_pass_rates: dict[str, Any] | None = Field(
        default=None,
        description="With `?labels=NAME` only: each pass/fail check's measured pass rate "
        "over the rule's scored spans, and the rate corrected for its TPR and TNR against "
        "the labels (Rogan-Gladen, with its interval), as `GET /v1/runs/{run}/corrected-"
        "pass-rates` gives a run's.",
    )

    @classmethod
    def of(cls, rule: Rule, counts: dict[str, int] | None = None) -> RuleOut:
        v = rule.current
        return cls(
            name=rule.name,
            enabled=rule.enabled,
            version=v.version,
            checks=[_pinned(c) for c in v.checks],
            filter=v.filter,
            sample_rate=v.sample_rate,
            daily_token_budget=v.daily_token_budget,
            created_at=rule.created_at,
            updated_at=rule.updated_at,
            counts=counts,
            backlog=None if counts is None else counts.get("pending", 0) + counts.get("queued", 0),
        )


def _pinned(check: dict[str, Any]) -> dict[str, Any]:
    out = {"name": check.get("name"), "version": check.get("version"), "kind": check.get("kind")}
    if check.get("params"):
        out["params"] = check["params"]
    return out


class RuleList(BaseModel):
    rules: list[RuleOut]


@router.post("", status_code=201, responses=responses(401, 404, 409, 422))
def create_rule(
    body: RuleSpec,
    principal: PrincipalDep,
    runs: RunsDep,
    services: ServicesDep,
    response: Response,
    ignore_required_agreement: IgnoreAgreement = False,
) -> RuleOut:
    """A rule at version 1; its checks' versions are pinned now. 409 when a pinned version
    requires an agreement with human labels that is not met (unless
    ``ignore_required_agreement=true``), or when the name is taken."""
    pinned = pin(runs, principal, body.checks)
    if not ignore_required_agreement:
        refuse_unmet(runs.store, label_store(services.db), principal.tenant_id, pinned)
    rule = rule_store(services.db).create_rule(
        principal.tenant_id,
        body.name,
        enabled=body.enabled,
        checks=pinned,
        filter=body.filter,
        sample_rate=body.sample_rate,
        daily_token_budget=body.daily_token_budget,
    )
    response.headers["Location"] = f"/v1/rules/{rule.name}"
    return RuleOut.of(rule)


@router.get("", responses=responses(401))
def list_rules(principal: PrincipalDep, services: ServicesDep) -> RuleList:
    """The tenant's rules by name."""
    return RuleList(
        rules=[RuleOut.of(r) for r in rule_store(services.db).list_rules(principal.tenant_id)]
    )


class PreviewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filter: dict[str, FreeJSON] = Field(default_factory=dict)
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    sample: int = Field(default=5, ge=0, le=50, description="How many matching spans to show.")


class PreviewOut(BaseModel):
    spans_seen: int = Field(description="Stored spans of the last 24 h looked at.")
    would_score: int = Field(description="Of those, spans the rule would score.")
    no_content: int = Field(description="Of those matched, spans without content (skipped).")
    sample: list[dict[str, Any]]


@router.post("/preview", responses=responses(401, 422))
def preview_rule(body: PreviewIn, principal: PrincipalDep, services: ServicesDep) -> PreviewOut:
    """How many of the stored spans of the last 24 h a rule with this filter and sample
    rate would score, with a sample of them. Nothing is stored."""
    try:
        document = check_filter(body.filter)
    except FilterError as exc:
        raise InvalidRequestError(str(exc)) from None
    version = RuleVersion("", "", 0, [], document, body.sample_rate, None, utcnow())
    since = int((time.time() - 86_400) * 1e9)
    views = span_store(services.db).recent_views(principal.tenant_id, since, PREVIEW_MAX_SPANS)
    chosen = [v for v in views if picked(v, version)]
    sample = [
        {
            "trace_id": v.ref.trace_id,
            "span_id": v.ref.span_id,
            "name": v.fields.name,
            "service": v.fields.service,
            "model": v.fields.model,
        }
        for v in chosen
        if not v.ref.no_content
    ][: body.sample]
    no_content = sum(1 for v in chosen if v.ref.no_content)
    return PreviewOut(
        spans_seen=len(views),
        would_score=len(chosen) - no_content,
        no_content=no_content,
        sample=sample,
    )


@router.get("/{name}", responses=responses(401, 404))
def get_rule(
    name: NamePath,
    principal: PrincipalDep,
    services: ServicesDep,
    labels: Annotated[
        str | None,
        Query(max_length=100, description="Also correct the pass rates for this label name."),
    ] = None,
) -> RuleOut:
    """A rule with its scores counted by status and its backlog; with `labels`, its pass
    rates measured and corrected for its checks' agreement with those labels."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    out = RuleOut.of(rule, score_store(services.db).counts(principal.tenant_id, rule.id))
    if labels is not None:
        out.corrected_pass_rates = rule_corrected_pass_rates(
            label_store(services.db), services.store, principal.tenant_id, name, labels
        )
    return out


@router.patch("/{name}", responses=responses(401, 404, 409, 422))
def update_rule(
    name: NamePath,
    body: RulePatch,
    principal: PrincipalDep,
    runs: RunsDep,
    services: ServicesDep,
    ignore_required_agreement: IgnoreAgreement = False,
) -> RuleOut:
    """Change a rule: new checks are pinned now; a change of checks, filter, sample rate or
    budget makes a new rule version (``enabled`` alone does not)."""
    pinned = None
    if body.checks is not None:
        pinned = pin(runs, principal, body.checks)
        if not ignore_required_agreement:
            refuse_unmet(runs.store, label_store(services.db), principal.tenant_id, pinned)
    budget = body.daily_token_budget if "daily_token_budget" in body.model_fields_set else UNSET
    rule = rule_store(services.db).update_rule(
        principal.tenant_id,
        name,
        enabled=body.enabled,
        checks=pinned,
        filter=body.filter,
        sample_rate=body.sample_rate,
        daily_token_budget=budget,
    )
    return RuleOut.of(rule)


@router.delete("/{name}", status_code=204, responses=responses(401, 404))
def delete_rule(name: NamePath, principal: PrincipalDep, services: ServicesDep) -> Response:
    """Delete a rule, its versions and its scores."""
    rule_store(services.db).delete_rule(principal.tenant_id, name)
    return Response(status_code=204)


class SeriesPoint(BaseModel):
    start: datetime
    count: int
    mean: float | None
    pass_rate: float | None = Field(description="Share passed among scores with a verdict.")


class SeriesLine(BaseModel):
    check: str
    check_version: int | None
    points: list[SeriesPoint]


class SeriesOut(BaseModel):
    rule: str
    bucket: str
    since: datetime
    until: datetime
    series: list[SeriesLine]


@router.get("/{name}/series", responses=responses(401, 404, 422))
def rule_series(
    name: NamePath,
    principal: PrincipalDep,
    services: ServicesDep,
    bucket: Annotated[str, Query(pattern=r"^\d+[smhd]$", description="e.g. 5m, 1h, 1d")] = "1h",
    since: Annotated[datetime | None, Query(description="Default: 24 h ago.")] = None,
    until: Annotated[datetime | None, Query(description="Default: now.")] = None,
) -> SeriesOut:
    """Per check version, per bucket of span start time: how many scored, their mean and
    pass rate. A changed check version is a line of its own."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    try:
        width = parse_bucket(bucket)
    except ValueError as exc:
        raise InvalidRequestError(str(exc)) from None
    end = _aware(until) or datetime.now(UTC)
    start = _aware(since) or end - timedelta(days=1)
    if start >= end:
        raise InvalidRequestError("since: before until")
    points = score_store(services.db).series_points(
        principal.tenant_id, rule.id, _ns(start), _ns(end), 1_000_000
    )
    lines = series(points, width)
    return SeriesOut(
        rule=rule.name,
        bucket=bucket,
        since=start,
        until=end,
        series=[
            SeriesLine(
                check=check,
                check_version=version,
                points=[
                    SeriesPoint(
                        start=datetime.fromtimestamp(b / 1e9, UTC),
                        count=n,
                        mean=mean,
                        pass_rate=rate,
                    )
                    for b, n, mean, rate in buckets
                ],
            )
            for (check, version), buckets in lines
        ],
    )


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _ns(value: datetime) -> int:
    return max(-(2**63), min(int(value.timestamp() * 1e9), 2**63 - 1))


class BackfillIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: datetime = Field(description="Spans started at or after.")
    until: datetime | None = Field(default=None, description="Spans started before (now).")
    row_cap: int = Field(
        default=BACKFILL_DEFAULT_CAP,
        ge=1,
        le=BACKFILL_MAX_CAP,
        description="At most this many matching spans with content are taken.",
    )


class BackfillOut(BaseModel):
    id: str
    rule: str
    rule_version: int
    status: str = Field(description="running, done or cancelled.")
    since: datetime
    until: datetime
    row_cap: int
    progress: dict[str, int] = Field(
        description="scanned, matched, rows taken, queued (scores), already (scored before "
        "by this rule version and check version: skipped), no_content, ..."
    )
    scores: dict[str, int] = Field(description="The scores it queued, by status now.")
    created_at: datetime
    finished_at: datetime | None


def _backfill_out(services: Any, rule: Rule, b: Backfill, version: int) -> BackfillOut:
    return BackfillOut(
        id=b.id,
        rule=rule.name,
        rule_version=version,
        status=b.status,
        since=datetime.fromtimestamp(b.since_unix_nano / 1e9, UTC),
        until=datetime.fromtimestamp(b.until_unix_nano / 1e9, UTC),
        row_cap=b.row_cap,
        progress=b.counts,
        scores=backfill_store(services.db).outcomes(b.tenant_id, b.id),
        created_at=b.created_at,
        finished_at=b.finished_at,
    )


def _version_number(services: Any, tenant_id: str, b: Backfill) -> int:
    return rule_store(services.db).get_version(tenant_id, b.rule_version_id)[1].version


@router.post("/{name}/backfill", status_code=202, responses=responses(401, 404, 422))
def start_backfill(
    name: NamePath,
    body: BackfillIn,
    principal: PrincipalDep,
    services: ServicesDep,
    response: Response,
) -> BackfillOut:
    """Score the stored spans of a window with the rule's current version: same filter,
    sampling and pinned checks as live. A span already scored by that rule version and
    check version is skipped; spans skipped for the budget or the backlog are scored now.
    Durable: a restart resumes it. Poll ``GET /v1/rules/{name}/backfills/{id}``."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    start = _aware(body.since)
    end = _aware(body.until) or datetime.now(UTC)
    assert start is not None
    if start >= end:
        raise InvalidRequestError("since: before until")
    b = backfill_store(services.db).create(
        principal.tenant_id, rule.id, rule.current.id, _ns(start), _ns(end), body.row_cap
    )
    response.headers["Location"] = f"/v1/rules/{rule.name}/backfills/{b.id}"
    return _backfill_out(services, rule, b, rule.current.version)


class BackfillList(BaseModel):
    backfills: list[BackfillOut]


@router.get("/{name}/backfills", responses=responses(401, 404))
def list_backfills(name: NamePath, principal: PrincipalDep, services: ServicesDep) -> BackfillList:
    """A rule's backfills, newest first."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    found = backfill_store(services.db).of_rule(principal.tenant_id, rule.id)
    return BackfillList(
        backfills=[
            _backfill_out(services, rule, b, _version_number(services, principal.tenant_id, b))
            for b in found
        ]
    )


BackfillPath = Annotated[str, Path(max_length=40)]


@router.get("/{name}/backfills/{backfill_id}", responses=responses(401, 404))
def get_backfill(
    name: NamePath, backfill_id: BackfillPath, principal: PrincipalDep, services: ServicesDep
) -> BackfillOut:
    """A backfill's progress and the state of the scores it queued."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    b = backfill_store(services.db).get(principal.tenant_id, backfill_id)
    _same_rule(rule, b)
    return _backfill_out(services, rule, b, _version_number(services, principal.tenant_id, b))


@router.post("/{name}/backfills/{backfill_id}/cancel", responses=responses(401, 404))
def cancel_backfill(
    name: NamePath, backfill_id: BackfillPath, principal: PrincipalDep, services: ServicesDep
) -> BackfillOut:
    """Stop a backfill; its spans not yet in a run are marked ``cancelled`` (a later
    backfill takes them again)."""
    rule = rule_store(services.db).get_rule(principal.tenant_id, name)
    _same_rule(rule, backfill_store(services.db).get(principal.tenant_id, backfill_id))
    b = backfill_store(services.db).cancel(principal.tenant_id, backfill_id)
    return _backfill_out(services, rule, b, _version_number(services, principal.tenant_id, b))


def _same_rule(rule: Rule, b: Backfill) -> None:
    if b.rule_id != rule.id:
        raise NotFoundError(f"no backfill {b.id!r} of rule {rule.name!r}")
