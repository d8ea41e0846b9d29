"""``GET /v1/agreement``: can this check be trusted? Its results against human labels."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from engine.agreement.corrected import corrected_pass_rates
from engine.agreement.report import check_report
from engine.agreement.required import drop_required, required_status, set_required
from engine.api.routes.labels import LabelStoreDep
from engine.calibration.report import ReportOptions
from engine.http.deps import PrincipalDep, StoreDep
from engine.http.problems import responses

router = APIRouter(prefix="/v1", tags=["labels"])

MAX_RESAMPLES = 20_000


@router.get(
    "/agreement",
    summary="A check's agreement with human labels",
    description="The check's stored results on the labelled rows, against the labels "
    "(the majority where several people labelled a row): a run's rows with `run`, the "
    "spans a rule scored with `rule`, and with neither every labelled row and span the "
    "check scored. Every figure is "
    '`{"value", "ci": [lo, hi]}`; `verdict` is `"too few labels"` below `min_per_class` '
    "labels in any class, with `missing` saying how many of which. The `seed` "
    "reproduces the intervals and the dev/test split exactly.",
    responses=responses(401, 404, 422),
)
def get_agreement(
    principal: PrincipalDep,
    store: StoreDep,
    labels_store: LabelStoreDep,
    check: Annotated[str, Query(description="`name` or `name@N`", max_length=120)],
    labels: Annotated[str, Query(description="The label name", max_length=100)],
    run: Annotated[str | None, Query(description="Only this run's rows", max_length=40)] = None,
    rule: Annotated[
        str | None, Query(description="Only the spans this rule scored", max_length=100)
    ] = None,
    seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
    resamples: Annotated[int, Query(ge=100, le=MAX_RESAMPLES)] = 2000,
    min_per_class: Annotated[int, Query(ge=1, le=100_000)] = 30,
    confidence: Annotated[float, Query(gt=0.5, lt=1.0)] = 0.95,
    holdout: Annotated[
        float | None,
        Query(
            gt=0,
            lt=1,
            description="Report on this share of the labelled rows only: the "
            "part `scorebox labels examples --holdout` held back from the generator.",
        ),
    ] = None,
    holdout_seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
) -> dict[str, Any]:
    options = ReportOptions(
        seed=seed, n_resamples=resamples, min_per_class=min_per_class, confidence=confidence
    )
    held = None if holdout is None else (holdout, holdout_seed)
    return check_report(
        store, labels_store, principal.tenant_id, check, labels, run, options, held, rule
    )


@router.get(
    "/runs/{run_id}/corrected-pass-rates",
    summary="Pass rates corrected for the checks' agreement with labels",
    description="Each pass/fail check of the run: the measured pass rate, and the rate "
    "corrected for the check's TPR and TNR against the labels (Rogan-Gladen), with its "
    "interval (delta method). `corrected` is null, with a `reason`, where no agreement "
    "report on the label measures TPR and TNR.",
    responses=responses(401, 404, 422),
)
def get_corrected_pass_rates(
    run_id: Annotated[str, Path(max_length=40)],
    principal: PrincipalDep,
    store: StoreDep,
    labels_store: LabelStoreDep,
    labels: Annotated[str, Query(description="The label name", max_length=100)],
    seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
    min_per_class: Annotated[int, Query(ge=1, le=100_000)] = 30,
) -> dict[str, Any]:
    options = ReportOptions(seed=seed, n_resamples=500, min_per_class=min_per_class)
    return corrected_pass_rates(store, labels_store, principal.tenant_id, run_id, labels, options)


class RequirementIn(BaseModel):
    requirement: str = Field(
        max_length=500,
        description="`LABELS:FIGURE=MIN[,FIGURE=MIN]`, judged on the intervals' lower bounds.",
        examples=["helpful:tpr=0.8,tnr=0.8"],
    )


class RequirementOut(BaseModel):
    check: str = Field(examples=["is_helpful@3"])
    requirement: str


class RequirementStatus(BaseModel):
    check: str = Field(examples=["is_helpful@3"])
    requirement: str
    status: str = Field(description="`passed`, `below` or `too few labels`.")
    message: str


@router.put(
    "/checks/{ref}/required-agreement",
    response_model=RequirementOut,
    summary="Require a check version to agree with human labels",
    description="While the lower bounds of its agreement figures miss the minimums, "
    "`POST /v1/runs` naming the version answers 409 (unless "
    "`?ignore_required_agreement=true`), `scorebox run --min-agreement required` exits 3 "
    "(2 with too few labels), and `GET /v1/checks` and `GET /v1/required-agreements` flag "
    "it. `ref` is `name` (the latest version) or `name@N`.",
    responses=responses(401, 404, 422),
)
def put_required_agreement(
    ref: Annotated[str, Path(max_length=120)],
    body: RequirementIn,
    principal: PrincipalDep,
    store: StoreDep,
    labels_store: LabelStoreDep,
) -> RequirementOut:
    check, requirement = set_required(
        store, labels_store, principal.tenant_id, ref, body.requirement
    )
    return RequirementOut(check=check, requirement=requirement)


@router.delete(
    "/checks/{ref}/required-agreement",
    summary="Drop a check version's required agreement",
    responses=responses(401, 404),
)
def delete_required_agreement(
    ref: Annotated[str, Path(max_length=120)],
    principal: PrincipalDep,
    store: StoreDep,
    labels_store: LabelStoreDep,
) -> dict[str, int]:
    return {"deleted": drop_required(store, labels_store, principal.tenant_id, ref)}


@router.get(
    "/required-agreements",
    response_model=list[RequirementStatus],
    summary="Checks' required agreements, judged now",
    description="Every required agreement (or those of `check=NAME[@N]`, repeatable) "
    "judged against the labels as they are now: a check below its requirement is flagged "
    "`below`, one without enough labels `too few labels`.",
    responses=responses(401),
)
def get_required_agreements(
    principal: PrincipalDep,
    store: StoreDep,
    labels_store: LabelStoreDep,
    check: Annotated[
        str | None,
        Query(
            description="Only these checks: `name` or `name@N`, comma-separated.", max_length=2000
        ),
    ] = None,
) -> list[RequirementStatus]:
    names = None if check is None else [c.strip() for c in check.split(",") if c.strip()]
    found = required_status(
        store, labels_store, principal.tenant_id, names, ReportOptions(n_resamples=1000)
    )
    return [RequirementStatus(**entry) for entry in found]
