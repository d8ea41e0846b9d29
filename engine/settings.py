"""One settings object, read from ``SCOREBOX_*`` variables at the entry point and passed down."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from platformdirs import user_data_dir
from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from engine.models import Limits
from engine.setting_sources import EnvSource, FlatLimitsSource, RenamedSource
from engine.setting_values import RENAMED, renamed_values, settings_error

log = logging.getLogger(__name__)


def _default_data_dir() -> Path:
    return Path(user_data_dir("scorebox", appauthor=False))


class Settings(BaseSettings):
    """Effective configuration. Build it once (``Settings()``) and pass it down.

    A bad ``SCOREBOX_*`` value raises :class:`~engine.setting_values.SettingValueError`,
    one line per variable (what it holds, what it takes, an example), not pydantic's text.
    """

    model_config = SettingsConfigDict(
        env_prefix="SCOREBOX_", extra="ignore", frozen=True, populate_by_name=True
    )

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite in the data directory."
    )

    # Sandbox
    docker_host: str | None = Field(
        default=None, description="Docker engine URL; default: the Docker client's discovery."
    )
    image: str = Field(default="scorebox-sandbox:latest", description="Sandbox image reference.")
    runtime: str | None = Field(default=None, description="OCI runtime, e.g. runsc.")
    backend: Literal["docker", "subprocess"] = Field(
        default="docker",
        description="Where checks run: docker (hardened containers, the only choice for code "
        "you do not trust) or subprocess (plain processes on this host with NO isolation: "
        "development and tests only; a warning is logged).",
    )
    pool_size: int = Field(default=2, ge=0, le=256, description="Warm containers per profile.")
    pool_idle_seconds: float = Field(default=300.0, gt=0)
    pool_max_size: int = Field(
        default=8,
        ge=0,
        le=256,
        description="Cap on warm containers per profile: the pool grows past pool_size on "
        "cold starts (a take that found none ready), up to this, and shrinks as they idle.",
    )
    pool_refills: int = Field(
        default=2, ge=1, le=32, description="Warm containers started at once when refilling."
    )
    max_parallel_jobs: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)
    job_max_rows: int = Field(
        default=500,
        ge=1,
        description="Rows per sandbox job, and per chunk of a run or a /v1/score request (a "
        "chunk is one job; a run yields to other work between chunks).",
    )
    table_job_max_rows: int = Field(
        default=5000,
        ge=1,
        description=(
            "Rows per sandbox job on engine.score_table's path (results come back as "
            "blocks, so a larger job costs no more memory per row), and at most per job "
            "when a fast check's chunks of a run run together (embedded mode's threads "
            "and distributed workers alike)."
        ),
    )
    result_blocks: bool = Field(
        default=True,
        description=(
            "Sandbox results as blocks of columns (a row's own record only where it needs "
            "one); off: one record per row, the older protocol."
        ),
    )
    reuse: Literal["check", "never"] = Field(
        default="check",
        description="`check`: a container that ran a job may serve later jobs of the same "
        "tenant, check version, policy and limits; `never`: one container per job.",
    )
    # A container kept for later jobs of its check (reuse="check"); formerly worker_*
    reuse_max_jobs: int = Field(
        default=1000,
        ge=1,
        description="Jobs a container kept for its check (SCOREBOX_REUSE=check) serves before "
        "it is retired (formerly SCOREBOX_WORKER_MAX_JOBS, still read).",
    )
    reuse_max_age_seconds: float = Field(
        default=900.0,
        gt=0,
        description="Life of a container kept for its check (formerly "
        "SCOREBOX_WORKER_MAX_AGE_SECONDS, still read).",
    )
    reuse_idle_seconds: float = Field(
        default=120.0,
        gt=0,
        description="Idle time after which a container kept for its check is retired "
        "(formerly SCOREBOX_WORKER_IDLE_SECONDS, still read).",
    )
    job_retries: int = Field(default=3, ge=0, le=20)
    engine_wait_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How long a batch waits for an unreachable Docker engine (stopped, "
        "restarting) to answer again before its rows get sandbox_error.",
    )
    limits: Limits = Field(default_factory=Limits)
    container_labels: dict[str, str] = Field(
        default_factory=dict, description="Extra labels on every sandbox container."
    )

    # LLM
    llm_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("SCOREBOX_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SCOREBOX_LLM_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str = Field(default="gpt-4o-mini")
    llm_timeout_seconds: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=4, ge=0, le=20)
    llm_concurrency: int = Field(default=8, ge=1)

    # Check generator
    generator_model: str | None = Field(
        default=None, description="Model the check generator uses; default: llm_model."
    )
    generator_temperature: float = Field(default=0.2, ge=0, le=2)
    generator_max_attempts: int = Field(default=4, ge=1, le=20)

    # Service
    admin_key: SecretStr | None = Field(default=None, description="Operator key for /v1/admin.")
    host: str = Field(default="127.0.0.1", description="Address `scorebox serve` binds.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port `scorebox serve` binds.")
    migrate_on_start: bool = Field(
        default=True,
        description="Upgrade the schema at start-up (one node at a time, under a lock); "
        "set false on distributed nodes and run `scorebox db upgrade` once per version.",
    )
    run_threads: int | None = Field(
        default=None,
        ge=1,
        description="Threads of this process scoring run chunks; default: max_parallel_jobs "
        "(formerly SCOREBOX_RUN_WORKERS, still read).",
    )
    run_chunk_rows: int | None = Field(
        default=None,
        ge=1,
        description="Deprecated: a chunk is one sandbox job, of job_max_rows rows; set "
        "SCOREBOX_JOB_MAX_ROWS instead. Still read: when set, it caps the chunk (the smaller "
        "of the two), as it did before.",
    )
    storage_retry_seconds: float = Field(
        default=600.0,
        ge=0,
        description="How long a run's chunks keep retrying while the database is unavailable "
        "(restarting, disk full) before the run fails.",
    )
    score_max_rows: int = Field(default=1000, ge=1, description="Row cap of POST /v1/score.")
    score_wait_seconds: float = Field(
        default=30.0, gt=0, description="How long /v1/score waits for a slot before 429."
    )
    score_queue_per_tenant: int = Field(
        default=8,
        ge=1,
        description="Synchronous scoring requests (/v1/score, the generator's self-tests) one "
        "tenant may have admitted at once, running or waiting for a slot; past it, 429 at once.",
    )
    key_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        description="How long an API node remembers an API key's lookup (key hash to tenant). "
        "A key revoked through this node stops working at once; revoked elsewhere (another "
        "node, the CLI), within this many seconds. 0: every request reads the database.",
    )
    check_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        description="How long an API node remembers which version a check name means. A "
        "version pushed or deleted through this node is used at once; through another node, "
        "within this many seconds. 0: every request reads the database.",
    )
    # Per-tenant quotas (defaults; a tenant's own values override them)
    quota_concurrent_jobs: int = Field(default=4, ge=1, description="Sandbox jobs at once.")
    quota_rows_per_run: int = Field(default=1_000_000, ge=1)
    quota_source_bytes: int = Field(default=256 * 1024, ge=1)
    quota_queued_runs: int = Field(default=20, ge=1, description="Runs queued or running.")
    quota_evaluations_per_run: int = Field(
        default=5_000_000, ge=1, description="Rows x check references in one run."
    )
    max_checks_per_request: int = Field(
        default=50, ge=1, description="Check references in one /v1/score or run."
    )
    score_max_evaluations: int = Field(
        default=5000, ge=1, description="Rows x check references of one POST /v1/score."
    )
    # Distributed mode: Celery on Redis, PostgreSQL as the one store (docs/deploy.md)
    broker_url: str | None = Field(
        default=None,
        description="Celery broker (redis://host:6379/0); set: distributed mode, unset: embedded.",
    )
    chunk_lease_seconds: float = Field(
        default=30.0, gt=0, description="A running chunk is re-queued this long after its worker."
    )
    queue_lease_seconds: float = Field(
        default=120.0, gt=0, description="A queued chunk not started by then is sent again."
    )
    dispatch_interval_seconds: float = Field(
        default=0.5, gt=0, description="How often API nodes feed the broker and re-queue."
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines on every node: `text` (time, level, logger, req=, tenant=, "
        "run=, message) or `json` (one object a line with the same fields).",
    )
    log_repeat_seconds: float = Field(
        default=60.0,
        gt=0,
        description="A failure repeating on every tick (a dispatch pass while the database "
        "is down) is logged once per this many seconds, with a count and no traceback.",
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="Finished runs older than this many days, with their rows and results, "
        "are what `scorebox db prune` removes when given no --older-than (unset: keep all).",
    )
    # Online scoring's OTLP score export (engine/online/exporter.py)
    otlp_export_allow_hosts: list[str] = Field(
        default_factory=list,
        description="Host names or networks (e.g. 10.0.0.0/8) a tenant's OTLP score export "
        "may reach although they are not public addresses; empty: public addresses only.",
    )
    otlp_export_interval_seconds: float = Field(
        default=1.0, gt=0, description="How often the OTLP score export looks for new scores."
    )
    otlp_export_timeout_seconds: float = Field(
        default=10.0, gt=0, description="One OTLP score export request's timeout."
    )
    otlp_export_max_backoff_seconds: float = Field(
        default=300.0,
        gt=0,
        description="The longest wait between tries when a tenant's OTLP endpoint is down.",
    )
    span_retention_days: float | None = Field(
        default=None,
        gt=0,
        description="Spans received over OTLP that started longer ago than this many days "
        "are pruned with their content log records, by the service and by `scorebox db "
        "prune`; their scores are kept (unset: keep all).",
    )
    span_prune_interval_seconds: float = Field(
        default=600.0,
        gt=0,
        description="How often the service prunes spans past SCOREBOX_SPAN_RETENTION_DAYS.",
    )
    # Online scoring: rules score received spans (engine/online/scorer.py)
    online_tick_seconds: float = Field(
        default=0.2,
        gt=0,
        description="Longest pause of the online scorer with no run open: spans queued by "
        "another API node are seen within it (a span queued here wakes the scorer at once).",
    )
    online_batch_spans: int = Field(
        default=500, ge=1, description="Most spans of one rule version in one run."
    )
    online_backlog_max: int = Field(
        default=100_000,
        ge=1,
        description="Span scores a tenant may have waiting; past it new matches are "
        "`backlog` (scored by a backfill later).",
    )
    broker_visibility_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="Unused: Redis keeps no unacknowledged tasks (the chunk ledger's leases "
        "send a lost chunk again); still read, so a configuration that sets it loads.",
    )
    # Declared dependencies: PEP 723 blocks built into cached environments (engine/environments)
    packages_allow: list[str] = Field(
        default_factory=list,
        description="Glob patterns of distributions a check may declare; empty: any not denied.",
    )
    packages_deny: list[str] = Field(
        default_factory=list, description="Glob patterns of distributions a check may not declare."
    )
    packages_wheelhouse: Path | None = Field(
        default=None, description="A directory of wheels every environment build also uses."
    )
    package_index_url: str | None = Field(
        default=None, description="Index for environment downloads; default: pip's own config."
    )
    packages_offline: bool = Field(
        default=False, description="Build no environment; use only those built in advance."
    )
    env_max_mb: int = Field(default=512, ge=1, description="Size cap of one built environment.")
    env_build_timeout_seconds: float = Field(
        default=600.0, gt=0, description="Download plus install time of one environment."
    )
    env_wait_seconds: float = Field(
        default=900.0, gt=0, description="How long scoring waits for an environment's build."
    )
    env_retry_seconds: float = Field(
        default=30.0,
        ge=0,
        description="After a build failed because the package index was unreachable or slow, "
        "the next use waits this long before it tries again (other failures: 300 s).",
    )
    quota_environments: int = Field(
        default=20,
        ge=1,
        description="Distinct environments one tenant's checks may declare, counting its "
        "builds in flight: a push past it is refused (429).",
    )
    env_max_concurrent_builds: int = Field(
        default=2,
        ge=1,
        description="Environment builds at once in one process; more wait, served in turn "
        "across tenants.",
    )
    env_prune_unused_days: float = Field(
        default=30.0,
        ge=0,
        description="An environment no job used for this many days is removed (after each "
        "build and by `scorebox env prune`); 0: never by age.",
    )
    env_max_total_mb: int = Field(
        default=20480,
        ge=0,
        description="Total size of the built environments; past it the least recently used "
        "are removed (after each build and by `scorebox env prune`); 0: no cap.",
    )

    # --- request bodies, LLM call deadline ---
    max_body_mb: float = Field(
        default=32.0,
        gt=0,
        description="Largest JSON or form body a route takes, in MB (413 above it).",
    )
    max_upload_mb: float = Field(
        default=256.0,
        gt=0,
        description="Largest multipart upload (POST /v1/runs/upload, /v1/checks/upload, "
        "/v0/scenario_sets_upload), in MB (413 above it).",
    )
    body_deadline_seconds: float = Field(
        default=120.0,
        gt=0,
        description="Total time a request body may take to arrive (408 after it).",
    )
    body_inflight_mb_per_key: float = Field(
        default=128.0,
        gt=0,
        description="Request bodies one API key (or dashboard session) may have arriving "
        "or being handled at once, in MB (429 with Retry-After above it; a body alone is "
        "bounded by SCOREBOX_MAX_BODY_MB / SCOREBOX_MAX_UPLOAD_MB only).",
    )
    body_inflight_mb: float = Field(
        default=512.0,
        gt=0,
        description="Request bodies the whole API process holds at once, in MB (429 with "
        "Retry-After above it).",
    )
    llm_call_deadline_seconds: float = Field(
        default=300.0,
        gt=0,
        description="Total time one LLM call may take, retries included (a reply that "
        "trickles in is cut off).",
    )

    # Model gateway: checks that call the operator's model from the sandbox
    quota_llm_tokens_per_run: int = Field(
        default=200_000,
        ge=0,
        description="Model tokens a run's (or a /v1/score call's) checks may spend through "
        "the gateway; 0 turns the gateway off.",
    )
    # Online scoring: what one tenant may send over OTLP (engine/online/span_quota.py)
    quota_spans_per_minute: int = Field(
        default=0,
        ge=0,
        description="Spans a tenant may send per minute to one API process; past it "
        "POST /v1/traces answers 429 with Retry-After (0: no limit).",
    )
    quota_stored_spans: int = Field(
        default=0,
        ge=0,
        description="Spans a tenant may have stored; spans past it are refused in the "
        "answer's partial_success until retention prunes older ones (0: no limit).",
    )
    llm_model_map: dict[str, str] = Field(
        default_factory=dict,
        description='JSON {"model a check asks for": "model that serves it"}; "*" matches any '
        "other; unmapped names are served by llm_model.",
    )
    gateway_row_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="Wall clock of a row whose check called the model (CPU stays bounded).",
    )
    gateway_container_concurrency: int = Field(
        default=4, ge=1, le=64, description="Model calls one container may have in flight."
    )
    gateway_tenant_concurrency: int = Field(
        default=4,
        ge=1,
        description="Model calls one tenant's checks may have in flight in this process "
        "(keep it below llm_concurrency so other tenants' judges always get a slot).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments first, then the flat limit variables, then ``SCOREBOX_*``."""
        flat = FlatLimitsSource(settings_cls)
        env = EnvSource(settings_cls)
        renamed = RenamedSource(settings_cls)
        return init_settings, flat, env, renamed, dotenv_settings, file_secret_settings

    def __init__(self, *args: Any, **values: Any) -> None:
        if any(name in values for name in RENAMED):
            moved, notes = renamed_values(values)
            for note in notes:
                log.warning("Settings(%s", note.replace(" is", ") is", 1))
            values = {k: v for k, v in values.items() if k not in RENAMED} | moved
        try:
            super().__init__(*args, **values)
        except ValidationError as exc:
            error = settings_error(exc, type(self).model_fields, {"limits": Limits}, values)
            if error is None:  # a keyword argument's mistake: the caller's bug, as it is
                raise
            raise error from None

    @property
    def chunk_rows(self) -> int:
        """Rows per chunk of a run or a ``/v1/score`` request, each chunk one sandbox job:
        ``job_max_rows``, capped by the deprecated ``run_chunk_rows`` where it is set."""
        return min(self.job_max_rows, self.run_chunk_rows or self.job_max_rows)

    @property
    def effective_database_url(self) -> str:
        """The database URL, defaulting to SQLite in the data directory."""
        return self.database_url or f"sqlite:///{self.data_dir / 'scorebox.db'}"

    def masked(self) -> dict[str, Any]:
        """Effective values with secrets masked (for ``scorebox doctor``)."""
        out = self.model_dump(mode="json")
        for key in ("llm_api_key", "admin_key"):
            out[key] = "****" if getattr(self, key) is not None else None
        from sqlalchemy.engine import make_url  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        out["database_url"] = make_url(self.effective_database_url).render_as_string(
            hide_password=True
        )
        if self.broker_url:
            parts = urlsplit(self.broker_url)
            if parts.password:
                netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
                out["broker_url"] = parts._replace(netloc=netloc).geturl()
        return out
