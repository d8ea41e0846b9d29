"""What the routes use, built once per app at start-up."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine as SAEngine

from engine.audit.environments import audit_environment_builds
from engine.audit.store import AuditLog
from engine.llm.client import LLMClient
from engine.runs.executors import RunnerHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import Store


@dataclass
class Services:
    """The app's parts. ``store`` is typed by its Protocol; ``db`` is the SQLAlchemy engine
    that stores with tables of their own (the audit log; the Okareo edge's) open on. ``llm`` is
    the LLM client, None when no endpoint is configured (``get_llm`` then builds one from
    the settings on first use, which names the missing setting)."""

    settings: Settings
    store: Store
    runs: RunService
    runners: RunnerHolder
    metrics: Metrics
    db: SAEngine
    llm: LLMClient | None = None
    audit: AuditLog = field(init=False)

    def __post_init__(self) -> None:
        self.audit = AuditLog(self.db)
        audit_builds = audit_environment_builds(self.audit)
        self.runners.on_start.append(audit_builds)
        if self.runners.started:  # made before the app: attach now
            audit_builds(self.runners.get())
