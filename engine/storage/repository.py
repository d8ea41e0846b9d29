"""The repository: every read and write the service makes, behind :class:`Store`.

Every method that touches tenant data takes the tenant id and filters on it,
so a caller cannot reach another tenant's rows by mistake. One module a part:
tenants and keys (:mod:`~engine.storage.tenant_sql`), check versions
(:mod:`~engine.storage.check_sql`), runs and results (:mod:`~engine.storage.run_sql`);
their Protocols are in :mod:`~engine.storage.protocols`.
"""

from __future__ import annotations

from engine.storage.check_sql import SqlChecks
from engine.storage.database import ping
from engine.storage.protocols import CheckStore, RunStore, Store, TenantStore
from engine.storage.records import new_id, utcnow
from engine.storage.run_sql import BULK_CHUNK, SqlRuns
from engine.storage.tenant_sql import SqlTenants

__all__ = [
    "BULK_CHUNK",
    "CheckStore",
    "RunStore",
    "SqlStore",
    "Store",
    "TenantStore",
    "new_id",
    "utcnow",
]


class SqlStore(SqlTenants, SqlChecks, SqlRuns):
    """:class:`Store` on a SQLAlchemy engine (SQLite or PostgreSQL)."""

    def ping(self) -> None:
        ping(self.engine)
