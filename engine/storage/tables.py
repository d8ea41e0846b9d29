"""The database schema (SQLAlchemy 2). Alembic migrations in ``engine/migrations`` create it.

Every table that holds tenant data carries ``tenant_id`` and every query the
repository makes filters on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with a constraint naming convention (stable migrations)."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class TenantRow(Base):
    """A tenant: owns keys, checks and runs. ``quotas`` overrides the settings' defaults."""

    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    quotas: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: Set when an operator disables the tenant: its keys stop working (migration 0010).
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ApiKeyRow(Base):
    """An API key, stored as the sha256 of the secret with a short visible prefix."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(String(32))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CheckVersionRow(Base):
    """One immutable version of a named check; ``deleted_at`` soft-deletes it.

    A version number is unique among the name's live rows only (migration 0009): a name
    deleted whole starts again at version 1, and its deleted rows stay readable by id.
    """

    __tablename__ = "check_versions"
    __table_args__ = (
        Index(
            "uq_check_versions_live",
            "tenant_id",
            "name",
            "version",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    description: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    source: Mapped[str | None] = mapped_column(Text)
    prompt_template: Mapped[str | None] = mapped_column(Text)
    check_type: Mapped[str | None] = mapped_column(String(16))
    policy: Mapped[str] = mapped_column(String(16))
    output_data_type: Mapped[str | None] = mapped_column(String(8))
    requires_scenario_input: Mapped[bool] = mapped_column(Boolean, default=False)
    requires_scenario_result: Mapped[bool] = mapped_column(Boolean, default=False)
    limits: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: The entry function named at upload (scorer formats; None: found in the file).
    entry: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: The version's configuration (promptfoo's context["config"], scorer keyword params).
    config: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: ``pushed`` or ``generated`` (migration 0017; versions stored before are ``pushed``).
    origin: Mapped[str] = mapped_column(String(16), default="pushed", server_default="pushed")
    sha256: Mapped[str] = mapped_column(String(64))
    author_key_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RunRow(Base):
    """An asynchronous run: resolved check versions applied to stored rows."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_tenant_status", "tenant_id", "status"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    checks: Mapped[list[Any]] = mapped_column(JSON)
    limits: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    row_count: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    author_key_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    llm_usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: Results stored so far, kept by every write of results (migration 0006).
    results_done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: A finished run's summary (``engine.runs.summary.RunSummary``), valid while its
    #: ``done`` equals ``results_done``.
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class RunRowBlock(Base):
    """A block of a run's input rows, stored at submission (migration 0019): ``rows`` is
    the JSON array of rows ``row_start`` to ``row_stop - 1`` (``engine/storage/run_blocks.py``).
    Rows are read back by index only."""

    __tablename__ = "run_row_blocks"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    row_start: Mapped[int] = mapped_column(Integer, primary_key=True)
    row_stop: Mapped[int] = mapped_column(Integer)
    rows: Mapped[str] = mapped_column(Text)


class ResultBlockRow(Base):
    """A block of one check's results on a run (migration 0020): ``data`` holds results of
    rows ``row_start`` to ``row_stop - 1``, ``rows`` of them, encoded by
    ``engine/storage/result_blocks.py``; ``rows == row_stop - row_start`` when the block holds
    every row of its range. A (run, check, row) has at most one result across the run's
    blocks (``engine/storage/run_writes.py`` keeps it): blocks of one check may interleave
    in range, never hold a row twice. No block spans more than ``MAX_SPAN`` rows
    (``engine/storage/result_ranges.py``): the blocks that meet a range of rows are found
    on the primary key."""

    __tablename__ = "run_result_blocks"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    check_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: The block's first row index.
    row_start: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: Its last row index + 1.
    row_stop: Mapped[int] = mapped_column(Integer)
    rows: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class LLMCacheRow(Base):
    """A cached LLM reply keyed by the sha256 of (model, messages, parameters)."""

    __tablename__ = "llm_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(200))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


Index("ix_check_versions_tenant_name", CheckVersionRow.tenant_id, CheckVersionRow.name)


class RunChunkRow(Base):
    """Distributed mode: one chunk of a run and where it is (pending, queued, running, done).

    PostgreSQL is the truth; the broker only carries chunks that are ``queued``.
    ``epoch`` changes at each dispatch, so a stale broker message cannot claim
    the chunk; ``lease_until`` lets any API node re-queue a chunk whose worker
    or broker message was lost.
    """

    __tablename__ = "run_chunks"
    __table_args__ = (
        Index("ix_run_chunks_state_tenant", "state", "tenant_id"),
        Index("ix_run_chunks_run_state", "run_id", "state"),
    )

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    check_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    chunk_no: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(40))
    row_start: Mapped[int] = mapped_column(Integer)
    row_stop: Mapped[int] = mapped_column(Integer)
    limits: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16))
    epoch: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    dispatched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    worker: Mapped[str | None] = mapped_column(String(200))


class LabelNameRow(Base):
    """A label name's type, declared once per tenant (migration 0011): the question people
    answer (``helpful``) and what an answer may be (bool, ordinal levels, float, categories)."""

    __tablename__ = "label_names"
    __table_args__ = (Index("uq_label_names_tenant_name", "tenant_id", "name", unique=True),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    type: Mapped[str] = mapped_column(String(16))
    levels: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LabelRow(Base):
    """One person's label on one target (migration 0011). Never merged on write: several
    annotators, or one annotator twice, make several rows. The target is a run's row
    (``target_kind = "row"``) or a received span (``"span"``, its ids: migration 0016)."""

    __tablename__ = "labels"
    __table_args__ = (
        Index("ix_labels_tenant_name_run_row", "tenant_id", "name", "run_id", "row_index"),
        Index("ix_labels_tenant_name_trace_span", "tenant_id", "name", "trace_id", "span_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    target_kind: Mapped[str] = mapped_column(String(8))
    run_id: Mapped[str | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), nullable=True
    )
    row_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    trace_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    span_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
    annotator: Mapped[str] = mapped_column(String(200))
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AgreementRequirementRow(Base):
    """The agreement a check version must reach with human labels (migration 0011), as
    ``LABELS:FIGURE=MIN[,...]``; runs that name the version are refused below it."""

    __tablename__ = "agreement_requirements"
    __table_args__ = (
        Index("uq_agreement_requirements_check", "tenant_id", "check_id", unique=True),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    check_id: Mapped[str] = mapped_column(ForeignKey("check_versions.id", ondelete="CASCADE"))
    requirement: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SpanRow(Base):
    """One span received over OTLP (migration 0013), stored once per ``(tenant, trace id,
    span id)``: an exporter's retry changes nothing. ``row`` is the span as a scorebox row
    (``engine.online.mapping``); ``attributes`` and ``events`` are the span's own, bounded."""

    __tablename__ = "spans"
    __table_args__ = (
        Index("uq_spans_tenant_trace_span", "tenant_id", "trace_id", "span_id", unique=True),
        Index("ix_spans_tenant_start", "tenant_id", "start_unix_nano"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    parent_span_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    name: Mapped[str] = mapped_column(String(500))
    kind: Mapped[int] = mapped_column(Integer, default=0)
    service: Mapped[str | None] = mapped_column(String(500), nullable=True)
    model: Mapped[str | None] = mapped_column(String(500), nullable=True)
    start_unix_nano: Mapped[int] = mapped_column(BigInteger)
    end_unix_nano: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(8))
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON)
    events: Mapped[list[Any]] = mapped_column(JSON)
    row: Mapped[dict[str, Any]] = mapped_column(JSON)
    search_text: Mapped[str] = mapped_column(Text, default="")
    is_llm: Mapped[bool] = mapped_column(Boolean, default=False)
    no_content: Mapped[bool] = mapped_column(Boolean, default=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SpanLogRow(Base):
    """A GenAI content log record (``/v1/logs``, migration 0013) kept for the span it names,
    which may arrive before or after it. ``id`` is a digest of the record: a retry of the
    same record is stored once."""

    __tablename__ = "span_logs"
    __table_args__ = (Index("ix_span_logs_tenant_trace_span", "tenant_id", "trace_id", "span_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    event_name: Mapped[str] = mapped_column(String(200))
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON)
    body: Mapped[Any] = mapped_column(JSON, nullable=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
