"""The audit log on the service's database: append and read, nothing else."""

from __future__ import annotations

from sqlalchemy import select

from engine.audit.records import AuditEvent, AuditRecord
from engine.audit.table import AuditEventRow
from engine.nul import without_nul, without_nul_json
from engine.storage.database import SqlSessions
from engine.storage.records import aware, utcnow

#: Longest target kept (a check name, a run id, a key prefix: never long).
MAX_TARGET_CHARS = 300


def _record(row: AuditEventRow) -> AuditRecord:
    return AuditRecord(
        seq=row.seq,
        at=aware(row.at) or utcnow(),
        action=row.action,
        tenant_id=row.tenant_id,
        actor_kind=row.actor_kind,
        actor_key_id=row.actor_key_id,
        via=row.via,
        target=row.target,
        detail=dict(row.detail or {}),
    )


class AuditLog(SqlSessions):
    """Append-only: :meth:`record` adds one event, :meth:`page` reads them in order."""

    def record(self, event: AuditEvent) -> AuditRecord:
        """Append ``event``, stamped now; returns the stored record."""
        row = AuditEventRow(
            at=utcnow(),
            tenant_id=event.tenant_id,
            actor_kind=event.actor.kind,
            actor_key_id=event.actor.key_id,
            via=event.actor.via,
            action=event.action,
            target=without_nul(event.target)[:MAX_TARGET_CHARS],
            detail=without_nul_json(dict(event.detail)),
        )
        with self._session() as s:
            s.add(row)
            s.flush()
            return _record(row)

    def page(
        self,
        tenant_id: str | None,
        offset: int = 0,
        limit: int = 100,
        action: str | None = None,
    ) -> list[AuditRecord]:
        """Records in the order they were made; ``tenant_id`` None reads every tenant's."""
        query = select(AuditEventRow)
        if tenant_id is not None:
            query = query.where(AuditEventRow.tenant_id == tenant_id)
        if action is not None:
            query = query.where(AuditEventRow.action == action)
        query = query.order_by(AuditEventRow.seq).offset(offset).limit(limit)
        with self._session() as s:
            return [_record(r) for r in s.scalars(query)]
