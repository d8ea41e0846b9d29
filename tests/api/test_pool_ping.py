"""PostgreSQL connections are pinged at checkout only after sitting idle in the pool.

A busy node checks connections out several times a chunk; a ping each time (SQLAlchemy's
``pool_pre_ping``) is a round trip to the server each time. ``create_db_engine`` pings a
connection idle for ``PING_IDLE_SECONDS`` or more, and replaces one the server dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from engine.storage import database
from tests.api.conftest import _postgres_database


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from _postgres_database()


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    made = database.create_db_engine(postgres_url)
    yield made
    made.dispose()


@pytest.fixture
def pings(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pings ``engine`` sends (one entry each)."""
    sent: list[int] = []
    real = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        sent.append(1)
        return bool(real(dbapi_connection))

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return sent


def backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def terminate(postgres_url: str, pid: int) -> None:
    """Drop one server connection, as a restart or a proxy's failover drops them."""
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        admin.dispose()


def test_a_connection_given_back_moments_ago_is_not_pinged(
    engine: Engine, pings: list[int]
) -> None:
    first = backend_pid(engine)  # a fresh connection: never pinged
    for _ in range(20):
        assert backend_pid(engine) == first  # the same pooled connection, taken again
    assert pings == []


def test_an_idle_connection_is_pinged_and_one_the_server_dropped_is_replaced(
    engine: Engine, pings: list[int], postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dropped = backend_pid(engine)
    terminate(postgres_url, dropped)
    monkeypatch.setattr(database, "PING_IDLE_SECONDS", 0.0)  # every connection counts as idle
    replaced = backend_pid(engine)  # the ping fails, the pool reconnects: no error reaches us
    assert replaced != dropped
    assert pings  # the dropped connection's ping (and, with no window, its successor's)
    before = len(pings)
    assert backend_pid(engine) == replaced
    assert len(pings) == before + 1  # an idle connection is pinged at every checkout


def test_a_connection_dropped_within_the_window_fails_one_statement_then_the_pool_recovers(
    engine: Engine, pings: list[int], postgres_url: str
) -> None:
    """The trade: a connection the server dropped less than ``PING_IDLE_SECONDS`` after it
    was last used fails its next statement (callers map that to ``StorageError`` and
    retry, as for any statement in flight when a server goes away); the pool is
    invalidated with it, so the next checkout connects afresh."""
    dropped = backend_pid(engine)
    terminate(postgres_url, dropped)
    with pytest.raises(OperationalError) as failed, engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    assert failed.value.connection_invalidated
    assert backend_pid(engine) != dropped
    assert pings == []
