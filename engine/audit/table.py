"""The ``audit_events`` table (migration 0007, with the triggers that keep it append-only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from engine.storage.tables import Base


class AuditEventRow(Base):
    """One recorded change. Never updated, never deleted."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_tenant_seq", "tenant_id", "seq"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    tenant_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    actor_kind: Mapped[str] = mapped_column(String(16))
    actor_key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    via: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(40))
    target: Mapped[str] = mapped_column(Text)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
