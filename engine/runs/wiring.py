"""One wiring: the parts that score, built the same way in every process that scores.

``scorebox serve`` (:func:`engine.app.create_app`), ``scorebox worker``
(:class:`engine.distributed.worker.WorkerRuntime`) and local runs
(:func:`engine.suites.local.run_local`) build their sandbox runner, LLM client,
built-ins and executors here, so a change to how checks are scored is made once.
See docs/architecture.md, "Rooms".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.builtins import Builtins, build_builtins
from engine.errors import ScoreboxError
from engine.gateway import ModelGateway
from engine.llm.client import LLMClient, ResponseCache
from engine.runs.executors import CodeExecutor, Executors, ModelExecutor, RunnerHolder
from engine.runs.metrics import Metrics
from engine.settings import Settings
from engine.tenancy.quotas import effective_quotas

if TYPE_CHECKING:
    from sqlalchemy import Engine as SAEngine

    from engine.sandbox.runner import SandboxRunner
    from engine.storage import Store

log = logging.getLogger("scorebox.wiring")

RunnerFactory = Callable[[Settings], "SandboxRunner"]


def llm_configured(settings: Settings) -> bool:
    """Whether an LLM endpoint is configured (a base URL or a key)."""
    return settings.llm_base_url is not None or settings.llm_api_key is not None


def build_llm_client(
    settings: Settings,
    *,
    db: SAEngine | None = None,
    cache_dir: Path | None = None,
) -> LLMClient | None:
    """The one LLM client of a process (judges, pairwise, generator), metered.

    Replies are cached per tenant in the database when ``db`` is given (a service or
    worker), in files under ``cache_dir`` otherwise (local runs), or not at all. None when
    no endpoint is configured, or when it cannot be built (logged): judges then answer
    ``judge_error`` saying so.
    """
    if not llm_configured(settings):
        return None
    from engine.llm.openai_client import create_llm_client  # noqa: PLC0415 (lazy: openai loads only where a model is configured)
    from engine.llm.usage import MeteredClient  # noqa: PLC0415 (lazy, with the client)

    cache: ResponseCache | None = None
    if db is not None:
        from engine.llm.cache import SqlResponseCache, TenantResponseCache  # noqa: PLC0415 (lazy: SQLAlchemy tables only with a database)

        cache = TenantResponseCache(SqlResponseCache(db))  # one tenant never reads another's
    elif cache_dir is not None:
        from engine.llm.disk_cache import DiskResponseCache  # noqa: PLC0415 (lazy, as above)

        cache = DiskResponseCache(cache_dir)
    try:
        return MeteredClient(create_llm_client(settings, cache=cache))
    except ScoreboxError as exc:
        log.warning("LLM judges unavailable: %s", exc)
        return None


def build_gateway(
    settings: Settings, llm: LLMClient | None, store: Store | None = None
) -> ModelGateway | None:
    """The checks' model gateway over the one LLM client (None without a model); each
    tenant's ``llm_tokens_per_run`` quota is read from ``store`` when there is one."""
    if llm is None:
        return None
    ledger = None
    if settings.broker_url:  # distributed mode: one quota per run across the workers
        from engine.gateway.shared_ledger import RedisTokenLedger  # noqa: PLC0415 (lazy: redis)

        ledger = RedisTokenLedger.from_url(settings.broker_url)
    if store is None:
        return ModelGateway(llm, settings, ledger=ledger)

    def quota_of(tenant_id: str) -> int:
        try:
            overrides = store.get_tenant(tenant_id).quotas
        except ScoreboxError:
            overrides = None
        return effective_quotas(settings, overrides).llm_tokens_per_run

    return ModelGateway(llm, settings, quota_of, ledger)


@dataclass
class Scoring:
    """What scores rows in one process: the sandbox runner (started on first use), the LLM
    client, the model gateway that answers the checks' own model calls, the built-ins and
    the executor for each kind of check."""

    settings: Settings
    runners: RunnerHolder
    llm: LLMClient | None
    gateway: ModelGateway | None
    builtins: Builtins
    executors: Executors
    metrics: Metrics = field(default_factory=Metrics)

    def close(self) -> None:
        """Drain the sandbox runner and close the LLM client."""
        self.runners.close()
        inner = getattr(self.llm, "inner", self.llm)  # the metering wrapper holds no connection
        close = getattr(inner, "close", None)
        if callable(close):
            close()


def build_scoring(
    settings: Settings,
    *,
    db: SAEngine | None = None,
    store: Store | None = None,
    cache_dir: Path | None = None,
    runner_factory: RunnerFactory | None = None,
) -> Scoring:
    """Build a process's :class:`Scoring` (the sandbox itself starts on first use)."""
    runners = RunnerHolder(settings, runner_factory)
    llm = build_llm_client(settings, db=db, cache_dir=cache_dir)
    gateway = build_gateway(settings, llm, store)
    builtins = build_builtins(llm)
    executors = Executors(
        CodeExecutor(runners, gateway),
        model=ModelExecutor(llm, settings.llm_concurrency),
    )
    return Scoring(settings, runners, llm, gateway, builtins, executors)
