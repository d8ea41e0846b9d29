"""``/v1/label-names`` and ``/v1/labels``: human labels on run rows and on received spans,
one label per annotator and item."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, Field

from engine.agreement.labels import LabelInput, add_labels, declare_name
from engine.http.deps import PrincipalDep, ServicesDep, StoreDep
from engine.http.problems import responses
from engine.storage.label_sql import MAX_PAGE, SPAN, Label, LabelName, LabelStore, label_store

router = APIRouter(prefix="/v1", tags=["labels"])

TAG_DESCRIPTION = "Human labels on run rows and spans, and a check's agreement with them."

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
MAX_LABELS_PER_REQUEST = 10_000
#: Bounds that keep numbers in the database's integer range.
MAX_ROW = 2**31 - 1
MAX_OFFSET = 10**9
TRACE_ID = r"^[0-9a-fA-F]{32}$"
SPAN_ID = r"^[0-9a-fA-F]{16}$"


def get_label_store(services: ServicesDep) -> LabelStore:
    """The label store on the service's database."""
    return label_store(services.db)


LabelStoreDep = Annotated[LabelStore, Depends(get_label_store)]


class LabelNameIn(BaseModel):
    type: Literal["bool", "ordinal", "float", "category"]
    levels: list[str | int | float] | None = Field(
        default=None, description="The levels, in order: ordinal and category only."
    )


class LabelNameOut(BaseModel):
    name: str
    type: str
    levels: list[Any] | None
    created_at: datetime

    @classmethod
    def of(cls, n: LabelName) -> LabelNameOut:
        return cls(name=n.name, type=n.type, levels=n.levels, created_at=n.created_at)


class RowTarget(BaseModel):
    run: str = Field(description="The run's id.", max_length=40)
    row: int = Field(ge=0, le=MAX_ROW, description="The row's index in the run (0-based).")


class SpanTarget(BaseModel):
    trace_id: str = Field(pattern=TRACE_ID, description="The span's trace id (32 hex digits).")
    span_id: str = Field(pattern=SPAN_ID, description="The span's id (16 hex digits).")


Target = RowTarget | SpanTarget


class LabelIn(BaseModel):
    target: Target = Field(
        description='A run\'s row `{"run", "row"}` or a received span `{"trace_id", "span_id"}`.'
    )
    name: str = Field(pattern=NAME_PATTERN, examples=["helpful"])
    value: Any = Field(description="Checked against the name's declared type.")
    annotator: str | None = Field(
        default=None,
        max_length=200,
        description="Who gave the label; defaults to the API key's id.",
    )
    comment: str | None = Field(default=None, max_length=10_000)


class LabelsIn(BaseModel):
    labels: list[LabelIn] = Field(max_length=MAX_LABELS_PER_REQUEST)


class LabelOut(BaseModel):
    id: str
    target: Target
    name: str
    value: Any
    annotator: str
    comment: str | None
    created_at: datetime

    @classmethod
    def of(cls, label: Label) -> LabelOut:
        return cls(
            id=label.id,
            target=SpanTarget(**label.target) if label.kind == SPAN else RowTarget(**label.target),
            name=label.name,
            value=label.value,
            annotator=label.annotator,
            comment=label.comment,
            created_at=label.created_at,
        )


class LabelList(BaseModel):
    labels: list[LabelOut]


class LabelsDeleted(BaseModel):
    deleted: int


@router.put(
    "/label-names/{name}",
    response_model=LabelNameOut,
    status_code=201,
    summary="Declare a label name's type",
    description="Once per tenant: `bool`, `ordinal` with its levels in order, `float`, or "
    "`category` with its levels. The same declaration again is 200; another type is 409 "
    "once labels exist under the name.",
    responses={
        200: {"model": LabelNameOut, "description": "The same declaration again: unchanged."},
        **responses(401, 404, 409, 422),
    },
)
def put_label_name(
    name: Annotated[str, Path(pattern=NAME_PATTERN)],
    body: LabelNameIn,
    principal: PrincipalDep,
    labels: LabelStoreDep,
    response: Response,
) -> LabelNameOut:
    declared, changed = declare_name(labels, principal.tenant_id, name, body.type, body.levels)
    response.status_code = 201 if changed else 200
    return LabelNameOut.of(declared)


@router.get("/label-names", response_model=list[LabelNameOut], summary="List label names")
def list_label_names(principal: PrincipalDep, labels: LabelStoreDep) -> list[LabelNameOut]:
    return [LabelNameOut.of(n) for n in labels.list_names(principal.tenant_id)]


@router.post(
    "/labels",
    response_model=LabelList,
    status_code=201,
    summary="Add labels",
    description="Every label is kept: several annotators (or one, twice) on the same row "
    "or span make several labels, never merged. All are stored, or none (422 names the "
    "label; a run or span that is not the tenant's is 404).",
    responses=responses(401, 404, 422),
)
def post_labels(
    body: LabelsIn, principal: PrincipalDep, store: StoreDep, labels: LabelStoreDep
) -> LabelList:
    default_annotator = f"key:{principal.key_id}" if principal.key_id else "api"
    given = [
        LabelInput(
            name=item.name,
            run=item.target.run if isinstance(item.target, RowTarget) else None,
            row=item.target.row if isinstance(item.target, RowTarget) else None,
            value=item.value,
            annotator=item.annotator or default_annotator,
            comment=item.comment,
            trace_id=item.target.trace_id if isinstance(item.target, SpanTarget) else None,
            span_id=item.target.span_id if isinstance(item.target, SpanTarget) else None,
        )
        for item in body.labels
    ]
    stored = add_labels(store, labels, principal.tenant_id, given)
    return LabelList(labels=[LabelOut.of(label) for label in stored])


@router.get("/labels", response_model=LabelList, summary="List labels", responses=responses(401))
def get_labels(
    principal: PrincipalDep,
    labels: LabelStoreDep,
    name: Annotated[str | None, Query(max_length=100)] = None,
    run: Annotated[str | None, Query(max_length=40)] = None,
    row: Annotated[int | None, Query(ge=0, le=MAX_ROW)] = None,
    annotator: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1000,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    trace_id: Annotated[
        str | None, Query(pattern=TRACE_ID, description="Only this trace's spans")
    ] = None,
    span_id: Annotated[str | None, Query(pattern=SPAN_ID, description="Only this span")] = None,
    kind: Annotated[
        Literal["row", "span"] | None, Query(description="Only labels on rows, or on spans")
    ] = None,
) -> LabelList:
    found = labels.list_labels(
        principal.tenant_id,
        name=name,
        run_id=run,
        row=row,
        annotator=annotator,
        limit=limit,
        offset=offset,
        kind=kind,
        trace_id=trace_id,
        span_id=span_id,
    )
    return LabelList(labels=[LabelOut.of(label) for label in found])


@router.delete(
    "/labels/{label_id}",
    response_model=LabelsDeleted,
    summary="Delete one label",
    responses=responses(401, 404),
)
def delete_label(
    label_id: Annotated[str, Path(max_length=40)], principal: PrincipalDep, labels: LabelStoreDep
) -> LabelsDeleted:
    labels.delete_label(principal.tenant_id, label_id)
    return LabelsDeleted(deleted=1)


@router.delete(
    "/labels",
    response_model=LabelsDeleted,
    summary="Delete a label name's labels",
    description="All of the name's labels, or those of one run, one trace or one annotator.",
    responses=responses(401),
)
def delete_labels(
    principal: PrincipalDep,
    labels: LabelStoreDep,
    name: Annotated[str, Query(max_length=100)],
    run: Annotated[str | None, Query(max_length=40)] = None,
    annotator: Annotated[str | None, Query(max_length=200)] = None,
    trace_id: Annotated[str | None, Query(pattern=TRACE_ID)] = None,
) -> LabelsDeleted:
    count = labels.delete_labels(
        principal.tenant_id, name=name, run_id=run, annotator=annotator, trace_id=trace_id
    )
    return LabelsDeleted(deleted=count)
