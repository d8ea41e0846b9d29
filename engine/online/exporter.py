"""The OTLP score export: a thread that sends each tenant's new scores to the tenant's
endpoint as ``gen_ai.evaluation.result`` log records, from the durable outbox.

The outbox is the span scores themselves: a score is sent until its delivery is marked
(``engine.storage.export_sql``), so an endpoint that is down for an hour gets every score
when it is back, in order. A failed send backs off exponentially (or as ``Retry-After``
says, up to :attr:`~engine.settings.Settings.otlp_export_max_backoff_seconds`); a 400 or
413 (the OTLP/HTTP specification's "do not retry") marks the batch refused, counted
and kept in ``last_error``. One API node at a time sends a tenant's scores (a lease in the
database). Delivery is at least once: a node that dies between the send and the mark
sends that batch again, and each record carries ``scorebox.score_id``.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from typing import TYPE_CHECKING

import httpx
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

from engine.errors import StorageError
from engine.logs import Repeated
from engine.online.export_records import export_request
from engine.online.export_target import ExportTargetError, parse_endpoint, resolve
from engine.storage.export_sql import ExportStore, export_store
from engine.storage.records import utcnow

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from engine.settings import Settings

__all__ = ["ScoreExporter"]

log = logging.getLogger(__name__)

BATCH = 512
LEASE_SECONDS = 60.0
#: refusals the OTLP/HTTP specification says are not to be retried
FINAL = {400, 413}


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class ScoreExporter:
    """Sends every tenant's new scores to its OTLP endpoint, one pass per interval."""

    def __init__(self, settings: Settings, db: Engine) -> None:
        self._settings = settings
        self._store: ExportStore = export_store(db)
        self._owner = f"{socket.gethostname()[:40]}-{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failures = Repeated(log, "OTLP score export pass")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="otlp-export", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._settings.otlp_export_timeout_seconds + 5)

    def _loop(self) -> None:
        while not self._stop.wait(self._settings.otlp_export_interval_seconds):
            try:
                self.run_once()
            except StorageError:
                pass  # the database is away: the storage layer says so once per interval
            except Exception as exc:  # a bug must not end the export for every tenant
                self._failures.failed(exc)
            else:
                self._failures.ok()

    def run_once(self) -> int:
        """One pass over the tenants whose export is due; the records delivered."""
        delivered = 0
        for tenant_id in self._store.due(utcnow()):
            if self._stop.is_set():
                break
            if not self._store.claim(tenant_id, self._owner, LEASE_SECONDS):
                continue  # another node sends this tenant's scores
            try:
                delivered += self._tenant(tenant_id)
            finally:
                self._store.release(tenant_id, self._owner)
        return delivered

    def _tenant(self, tenant_id: str) -> int:
        export = self._store.get(tenant_id)
        delivered = 0
        while not self._stop.is_set():
            batch = self._store.batch(tenant_id, export.since, BATCH)
            if not batch:
                return delivered
            ids = [s.score_id for s in batch]
            try:
                status, body, retry_after = self._send(
                    export.endpoint, export.headers, export_request(batch).SerializeToString()
                )
            except (ExportTargetError, httpx.HTTPError, OSError) as exc:
                self._failed(tenant_id, f"{type(exc).__name__}: {exc}", None)
                return delivered
            if 200 <= status < 300:
                rejected, note = self._partial(body, len(batch))
                self._store.delivered(tenant_id, ids, "sent", rejected, note)
                delivered += len(batch) - rejected
            elif status in FINAL:
                note = f"HTTP {status}: the endpoint refused {len(batch)} records for good"
                self._store.delivered(tenant_id, ids, "rejected", len(batch), note)
            else:
                self._failed(tenant_id, f"HTTP {status} from the endpoint", retry_after)
                return delivered
            if len(batch) < BATCH:
                return delivered
        return delivered

    def _failed(self, tenant_id: str, error: str, retry_after: float | None) -> None:
        log.info("OTLP score export for tenant %s will retry: %s", tenant_id, error)
        cap = self._settings.otlp_export_max_backoff_seconds
        self._store.failed(tenant_id, error, retry_after, cap)

    @staticmethod
    def _partial(body: bytes, sent: int) -> tuple[int, str | None]:
        """Records the endpoint refused in a 200 (``partial_success``), and its message."""
        answer = ExportLogsServiceResponse()
        try:
            answer.ParseFromString(body)
        except DecodeError:  # a 200 whose body is not the response: every record taken
            return 0, None
        rejected = min(int(answer.partial_success.rejected_log_records), sent)
        if not rejected and not answer.partial_success.error_message:
            return 0, None
        return rejected, f"partial success: {answer.partial_success.error_message}"[:2000]

    def _send(
        self, endpoint_text: str, headers: dict[str, str], payload: bytes
    ) -> tuple[int, bytes, float | None]:
        """POST the records to the address the endpoint's name resolves to, checked."""
        endpoint = parse_endpoint(endpoint_text)
        address = resolve(endpoint, self._settings.otlp_export_allow_hosts)
        host = endpoint.host if ":" not in endpoint.host else f"[{endpoint.host}]"
        default_port = 443 if endpoint.scheme == "https" else 80
        sent_headers = {
            **headers,
            "host": host if endpoint.port == default_port else f"{host}:{endpoint.port}",
            "content-type": "application/x-protobuf",
        }
        extensions = {"sni_hostname": endpoint.host} if endpoint.scheme == "https" else {}
        with httpx.Client(
            timeout=self._settings.otlp_export_timeout_seconds, follow_redirects=False
        ) as client:
            reply = client.post(
                endpoint.url_for(address),
                content=payload,
                headers=sent_headers,
                extensions=extensions,
            )
        return reply.status_code, reply.content, _retry_after(reply.headers.get("retry-after"))
