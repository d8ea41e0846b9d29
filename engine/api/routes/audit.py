"""``GET /v1/audit``: a tenant's own audit records, in order, paged like run results."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from engine.audit.records import AuditRecord, valid_action
from engine.http.deps import AuditDep, PrincipalDep
from engine.http.problems import responses

router = APIRouter(prefix="/v1", tags=["audit"])

TAG_DESCRIPTION = "Who changed what, and when: your tenant's audit log."


class ActorOut(BaseModel):
    kind: str = Field(description="`tenant` (one of its keys) or `operator`.")
    key_id: str | None = Field(description="The tenant's key that made the change.")
    via: str = Field(description="`api`, `v0`, `ui`, `admin-api` or `cli`.")


class AuditRecordOut(BaseModel):
    seq: int = Field(description="Position in the log (increasing).")
    at: datetime
    action: str = Field(examples=["check.pushed"])
    actor: ActorOut
    target: str = Field(examples=["is_polite@3"])
    detail: dict[str, Any]

    @classmethod
    def of(cls, record: AuditRecord) -> AuditRecordOut:
        return cls(
            seq=record.seq,
            at=record.at,
            action=record.action,
            actor=ActorOut(kind=record.actor_kind, key_id=record.actor_key_id, via=record.via),
            target=record.target,
            detail=record.detail,
        )


class AuditPage(BaseModel):
    records: list[AuditRecordOut]
    next_offset: int | None = Field(
        description="Pass as `offset` for the next page; null at the end."
    )


@router.get(
    "/audit",
    response_model=AuditPage,
    summary="Your tenant's audit log",
    description="Every change made to your tenant (checks pushed or deleted, runs started or "
    "cancelled, keys created or revoked, quotas changed), oldest first, with who made it. "
    "Pages with `offset`/`limit`.",
    responses=responses(401, 422),
)
def list_audit(
    principal: PrincipalDep,
    audit: AuditDep,
    # past a 32-bit offset the databases overflow (a 500): no log has that many records
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    action: Annotated[str | None, Query(description="Only this action.")] = None,
) -> AuditPage:
    records = audit.page(principal.tenant_id, offset, limit, valid_action(action))
    next_offset = offset + len(records) if len(records) == limit else None
    return AuditPage(records=[AuditRecordOut.of(r) for r in records], next_offset=next_offset)
