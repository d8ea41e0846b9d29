"""Storage: schema, migrations runner and the repository behind :class:`Store`."""

from __future__ import annotations

from engine.storage.database import create_db_engine, ping, upgrade
from engine.storage.protocols import CheckStore, RunStore, Store, TenantStore
from engine.storage.records import (
    ApiKey,
    CheckVersion,
    Run,
    RunCheck,
    RunStatus,
    ScoreStats,
    StoredResult,
    Tenant,
    new_id,
    utcnow,
)
from engine.storage.repository import SqlStore

__all__ = [
    "ApiKey",
    "CheckStore",
    "CheckVersion",
    "Run",
    "RunCheck",
    "RunStatus",
    "RunStore",
    "ScoreStats",
    "SqlStore",
    "Store",
    "StoredResult",
    "Tenant",
    "TenantStore",
    "create_db_engine",
    "new_id",
    "open_store",
    "ping",
    "upgrade",
    "utcnow",
]


def open_store(url: str, *, migrate: bool = True) -> SqlStore:
    """A store on ``url``, its schema upgraded to the newest revision unless ``migrate=False``."""
    engine = create_db_engine(url)
    if migrate:
        upgrade(engine)
    return SqlStore(engine)
