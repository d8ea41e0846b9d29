"""``/v1/otlp-export``: where a tenant's online scores go as OTLP log records.

Every score a rule writes is sent, as a ``gen_ai.evaluation.result`` log record that
carries the scored span's trace and span ids, to the OTLP/HTTP endpoint set here (a
collector, Jaeger, Tempo, Phoenix, Langfuse), from a durable outbox
(``engine.online.exporter``). The headers hold secrets: they are stored and sent, and
only their names are ever shown back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from engine.http.deps import PrincipalDep, ServicesDep, SettingsDep
from engine.http.problems import responses
from engine.online.export_target import check_headers, parse_endpoint, resolve
from engine.storage.export_sql import ExportSettings, ExportStore, export_store

router = APIRouter(prefix="/v1", tags=["traces"])


def get_export_store(services: ServicesDep) -> ExportStore:
    return export_store(services.db)


ExportStoreDep = Annotated[ExportStore, Depends(get_export_store)]


class ExportIn(BaseModel):
    endpoint: str = Field(
        max_length=2000,
        description="An OTLP/HTTP base URL (`/v1/logs` is appended, as "
        "`OTEL_EXPORTER_OTLP_ENDPOINT` has it) or the full logs URL. Public addresses only, "
        "unless the operator allows the host (`SCOREBOX_OTLP_EXPORT_ALLOW_HOSTS`).",
        examples=["https://collector.example.com:4318"],
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Sent with every request (e.g. `authorization`); stored, never shown back.",
    )
    enabled: bool = True


class ExportOut(BaseModel):
    endpoint: str
    header_names: list[str] = Field(description="The headers' names; their values are secret.")
    enabled: bool
    since: datetime = Field(description="Scores made from this moment on are sent.")
    pending: int = Field(description="Scores waiting to be sent.")
    sent: int
    rejected: int = Field(description="Records the endpoint refused for good (400, 413).")
    failures: int = Field(description="Failed sends in a row; 0 once one succeeds.")
    next_attempt_at: datetime | None = Field(description="While backing off: the next try.")
    last_error: str | None
    last_sent_at: datetime | None

    @classmethod
    def of(cls, e: ExportSettings, pending: int) -> ExportOut:
        return cls(
            endpoint=e.endpoint,
            header_names=sorted(e.headers),
            enabled=e.enabled,
            since=e.since,
            pending=pending,
            sent=e.sent,
            rejected=e.rejected,
            failures=e.failures,
            next_attempt_at=e.next_attempt_at,
            last_error=e.last_error,
            last_sent_at=e.last_sent_at,
        )


def _view(store: ExportStore, tenant_id: str) -> ExportOut:
    export = store.get(tenant_id)
    return ExportOut.of(export, store.pending(tenant_id, export.since))


@router.put(
    "/otlp-export",
    summary="Send this tenant's scores to an OTLP endpoint",
    responses=responses(401, 422),
)
def put_export(
    body: ExportIn, principal: PrincipalDep, store: ExportStoreDep, settings: SettingsDep
) -> ExportOut:
    endpoint = parse_endpoint(body.endpoint)
    resolve(endpoint, settings.otlp_export_allow_hosts)  # refused now, not at the first send
    store.put(principal.tenant_id, endpoint.url, check_headers(body.headers), body.enabled)
    return _view(store, principal.tenant_id)


@router.get(
    "/otlp-export",
    summary="This tenant's OTLP score export and its delivery state",
    responses=responses(401, 404),
)
def get_export(principal: PrincipalDep, store: ExportStoreDep) -> ExportOut:
    return _view(store, principal.tenant_id)


@router.delete(
    "/otlp-export",
    status_code=204,
    summary="Stop sending this tenant's scores",
    responses=responses(401, 404),
)
def delete_export(principal: PrincipalDep, store: ExportStoreDep) -> Response:
    store.delete(principal.tenant_id)
    return Response(status_code=204)
