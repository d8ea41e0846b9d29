"""The tables of online scoring (migration 0014): rules, their versions, span scores, the
runs a rule started and its backfills. Beside ``tables.py`` on the same ``Base``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from engine.storage.tables import Base

__all__ = ["RuleBackfillRow", "RuleRow", "RuleRunRow", "RuleVersionRow", "SpanScoreRow"]


class RuleRow(Base):
    """A tenant's rule by name; ``version`` is its current version's number."""

    __tablename__ = "rules"
    __table_args__ = (Index("uq_rules_tenant_name", "tenant_id", "name", unique=True),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    enabled: Mapped[bool] = mapped_column(Boolean)
    version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RuleVersionRow(Base):
    """One version of a rule: pinned checks (``RunCheck`` JSON), filter, sampling, budget."""

    __tablename__ = "rule_versions"
    __table_args__ = (Index("uq_rule_versions_rule_version", "rule_id", "version", unique=True),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    rule_id: Mapped[str] = mapped_column(ForeignKey("rules.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    checks: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    filter: Mapped[dict[str, Any]] = mapped_column(JSON)
    sample_rate: Mapped[float] = mapped_column(Float)
    daily_token_budget: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SpanScoreRow(Base):
    """One span's work and outcome for one rule version and one of its pinned checks."""

    __tablename__ = "span_scores"
    __table_args__ = (
        Index(
            "uq_span_scores_version_check_span",
            "rule_version_id",
            "check_key",
            "trace_id",
            "span_id",
            unique=True,
        ),
        Index("ix_span_scores_tenant_trace", "tenant_id", "trace_id"),
        Index("ix_span_scores_tenant_status", "tenant_id", "status"),
        Index("ix_span_scores_rule_start", "rule_id", "span_start_unix_nano"),
        Index("ix_span_scores_run", "run_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    rule_id: Mapped[str] = mapped_column(ForeignKey("rules.id", ondelete="CASCADE"))
    rule_version_id: Mapped[str] = mapped_column(ForeignKey("rule_versions.id", ondelete="CASCADE"))
    rule_version: Mapped[int] = mapped_column(Integer)
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    span_start_unix_nano: Mapped[int] = mapped_column(BigInteger)
    check_index: Mapped[int] = mapped_column(Integer)
    check_name: Mapped[str] = mapped_column(String(200))
    check_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    check_key: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    explanation: Mapped[str | None] = mapped_column(Text, nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    row_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    origin: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    scored_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class RuleRunRow(Base):
    """A durable run a rule started; ``linked_at`` is set once its results are on the spans."""

    __tablename__ = "rule_runs"
    __table_args__ = (
        Index("ix_rule_runs_rule_created", "rule_id", "created_at"),
        Index("ix_rule_runs_linked", "linked_at"),
    )

    run_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    rule_id: Mapped[str] = mapped_column(ForeignKey("rules.id", ondelete="CASCADE"))
    rule_version_id: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    linked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class RuleBackfillRow(Base):
    """A backfill of a rule version over a window of stored spans, resumable by its cursor."""

    __tablename__ = "rule_backfills"
    __table_args__ = (Index("ix_rule_backfills_status", "status"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    rule_id: Mapped[str] = mapped_column(ForeignKey("rules.id", ondelete="CASCADE"))
    rule_version_id: Mapped[str] = mapped_column(String(40))
    since_unix_nano: Mapped[int] = mapped_column(BigInteger)
    until_unix_nano: Mapped[int] = mapped_column(BigInteger)
    row_cap: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    cursor_unix_nano: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cursor_span_pk: Mapped[str | None] = mapped_column(String(40), nullable=True)
    counts: Mapped[dict[str, int]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
