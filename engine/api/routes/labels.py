"""``/v1/label-names`` and ``/v1/labels``: human labels on run rows, one row per annotator."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, Field

from engine import agreement
from engine.http.deps import PrincipalDep, ServicesDep, StoreDep
from engine.http.problems import responses
from engine.storage.label_sql import MAX_PAGE, Label, LabelName, LabelStore, label_store

router = APIRouter(prefix="/v1", tags=["labels"])

TAG_DESCRIPTION = "Human labels on run rows, and a check's agreement with them."

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
MAX_LABELS_PER_REQUEST = 10_000
#: Bounds that keep numbers in the database's integer range.
MAX_ROW = 2**31 - 1
MAX_OFFSET = 10**9


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


class LabelIn(BaseModel):
    target: RowTarget
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
    target: RowTarget
    name: str
    value: Any
    annotator: str
    comment: str | None
    created_at: datetime

    @classmethod
    def of(cls, label: Label) -> LabelOut:
        return cls(
            id=label.id,
            target=RowTarget(run=label.run_id, row=label.row),
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
    responses=responses(401, 404, 409, 422),
)
def put_label_name(
    name: Annotated[str, Path(pattern=NAME_PATTERN)],
    body: LabelNameIn,
    principal: PrincipalDep,
    labels: LabelStoreDep,
    response: Response,
) -> LabelNameOut:
    declared, changed = agreement.declare_name(
        labels, principal.tenant_id, name, body.type, body.levels
    )
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
    "make several labels, never merged. All are stored, or none (422 names the label).",
    responses=responses(401, 404, 422),
)
def post_labels(
    body: LabelsIn, principal: PrincipalDep, store: StoreDep, labels: LabelStoreDep
) -> LabelList:
    default_annotator = f"key:{principal.key_id}" if principal.key_id else "api"
    given = [
        agreement.LabelInput(
            name=item.name,
            run=item.target.run,
            row=item.target.row,
            value=item.value,
            annotator=item.annotator or default_annotator,
            comment=item.comment,
        )
        for item in body.labels
    ]
    stored = agreement.add_labels(store, labels, principal.tenant_id, given)
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
) -> LabelList:
    found = labels.list_labels(
        principal.tenant_id,
        name=name,
        run_id=run,
        row=row,
        annotator=annotator,
        limit=limit,
        offset=offset,
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
    description="All of the name's labels, or those of one run or one annotator.",
    responses=responses(401),
)
def delete_labels(
    principal: PrincipalDep,
    labels: LabelStoreDep,
    name: Annotated[str, Query(max_length=100)],
    run: Annotated[str | None, Query(max_length=40)] = None,
    annotator: Annotated[str | None, Query(max_length=200)] = None,
) -> LabelsDeleted:
    count = labels.delete_labels(principal.tenant_id, name=name, run_id=run, annotator=annotator)
    return LabelsDeleted(deleted=count)
