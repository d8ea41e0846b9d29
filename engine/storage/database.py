"""Database engine creation, sessions and migrations.

SQLite gets WAL, foreign keys and a busy timeout on every connection;
PostgreSQL is used as it is. The schema is created and upgraded by Alembic,
programmatically (``upgrade``) at start-up and by ``scorebox db upgrade``. On PostgreSQL
an upgrade holds an advisory lock (``MIGRATION_LOCK_KEY``): nodes starting together
migrate one at a time, the later ones finding the schema current. ``schema_problem``
says when the database's schema and this code's differ (a node refuses to serve then).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    IntegrityError,
    InterfaceError,
    InvalidatePoolError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.selectable import TypedReturnsRows

from engine.errors import (
    ConfigurationError,
    InvalidRequestError,
    NotFoundError,
    ScoreboxError,
    StorageError,
)
from engine.logs import Repeated

log = logging.getLogger("scorebox.storage")
#: a database that does not answer, logged once per SCOREBOX_LOG_REPEAT_SECONDS
_unreachable = Repeated(log, "a database call")
T = TypeVar("T")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

#: The session-level advisory lock every schema upgrade holds on PostgreSQL; the
#: dispatcher's transaction-level lock (engine.distributed.ledger) uses another key.
MIGRATION_LOCK_KEY = int.from_bytes(b"sbx-migr", "big")


def param_mark(conn: Connection) -> str:
    """The driver's parameter mark for SQL written by hand: ``?`` (sqlite3) or ``%s``
    (psycopg)."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


def _lower(value: Any) -> Any:
    """``lower()`` for SQLite: its own folds ASCII letters only, PostgreSQL's folds them all
    (the dashboard's text search ignores case the same way on both)."""
    return value.lower() if isinstance(value, str) else value


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.create_function("lower", 1, _lower, deterministic=True)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


#: A pooled PostgreSQL connection idle this long is pinged before it is handed out; one
#: given back more recently is not (see :func:`_ping_when_idle`).
PING_IDLE_SECONDS = 0.5
#: Where a pooled connection's record keeps when it was last given back (or made).
_LAST_USED = "scorebox_last_used"


def _ping_when_idle(engine: Engine) -> None:
    """Pessimistic disconnect handling, as ``pool_pre_ping`` does it, for connections that
    sat idle in the pool: one checked out again within ``PING_IDLE_SECONDS`` of its last
    use is not pinged (HikariCP's ``aliveBypassWindowMs``, 500 ms by default, is the same
    rule).

    ``pool_pre_ping`` pings at every checkout, a round trip to the server each time, and a
    busy node checks connections out several times a chunk, moments apart. A connection
    the server dropped while it idled still fails its ping, and the pool is invalidated and
    connects afresh, as with ``pool_pre_ping``. One dropped within the window fails its
    next statement, like a statement in flight when the server went away: the caller gets
    ``StorageError`` (and retries where it retries), and the pool is invalidated with it.
    """
    dialect = engine.dialect

    def stamp(_dbapi_connection: Any, record: Any) -> None:
        record.info[_LAST_USED] = time.monotonic()

    def taken(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        last = record.info.get(_LAST_USED)
        if last is not None and time.monotonic() - last < PING_IDLE_SECONDS:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            # the server dropped it (or more): every pooled connection older than this one is
            # replaced, and the pool connects afresh for this checkout
            raise InvalidatePoolError(f"a pooled connection failed its ping: {exc}") from exc

    event.listen(engine, "connect", stamp)  # a new connection needs no ping
    event.listen(engine, "checkin", stamp)
    event.listen(engine, "checkout", taken)


def create_db_engine(url: str) -> Engine:
    """A SQLAlchemy engine for ``url``; for SQLite, the parent directory is created."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigurationError(
            f"SCOREBOX_DATABASE_URL is not a database URL ({exc}): use "
            "sqlite:///path/to/scorebox.db or postgresql+psycopg://user:pw@host/db"
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=10,
            max_overflow=20,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    engine = create_engine(parsed, pool_size=10, max_overflow=20)
    _ping_when_idle(engine)
    return engine


def alembic_config(engine: Engine) -> Any:
    """An Alembic config pointing at the packaged migrations and ``engine``."""
    # Alembic is imported where migrations are read or run, not with the storage layer:
    # every process that opens a store (the CLI, test collection) would pay it otherwise.
    from alembic.config import Config  # noqa: PLC0415 (lazy)

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    config.attributes["engine"] = engine
    return config


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the migration advisory lock for the block (PostgreSQL; nothing on SQLite, whose
    writers are serialised by the database file's own lock). Waits for another holder."""
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as conn:
        got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        if not got.scalar():
            log.info("another node is upgrading the database schema; waiting for it")
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        conn.commit()  # the lock is the session's: no transaction is held open meanwhile
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
            conn.commit()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (idempotent), one node at a time."""
    try:
        from alembic import command  # noqa: PLC0415 (lazy)

        with migration_lock(engine):
            command.upgrade(alembic_config(engine), revision)
    except SQLAlchemyError as exc:
        raise StorageError(f"database migration failed at {engine.url!r}: {exc}") from exc


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext  # noqa: PLC0415 (lazy)

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    """The newest revision the packaged migrations know."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415 (lazy)

    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def schema_problem(engine: Engine) -> str | None:
    """None when the database's schema is the one this code needs; else what differs and
    the fix. Raises :class:`StorageError` when the database does not answer."""
    try:
        found = current_revision(engine)
    except SQLAlchemyError as exc:
        raise StorageError(
            f"database not reachable: {exc.__class__.__name__} (check SCOREBOX_DATABASE_URL)"
        ) from exc
    needed = head_revision()
    if found == needed:
        return None
    if found is None:
        return (
            f"the database has no scorebox schema, this code needs {needed}: "
            "run `scorebox db upgrade`"
        )
    from alembic.script import ScriptDirectory  # noqa: PLC0415 (lazy)

    known = {rev.revision for rev in ScriptDirectory(str(MIGRATIONS_DIR)).walk_revisions()}
    if found not in known:
        return (
            f"database schema is at {found}, newer than this code ({needed}): "
            "upgrade scorebox on this node"
        )
    return f"database schema is at {found}, this code needs {needed}: run `scorebox db upgrade`"


def check_schema_at_start(engine: Engine) -> None:
    """A node's start: raise :class:`StorageError` naming the fix when the schema differs.

    A database that does not answer yet is not refused here (``/readyz`` reports it, and
    the schema is checked again there): only a reachable database of another schema is.
    """
    try:
        problem = schema_problem(engine)
    except StorageError as exc:
        log.warning("schema not checked at start: %s", exc)
        return
    if problem is not None:
        raise StorageError(f"refusing to start: {problem}")


def ping(engine: Engine) -> None:
    """Raise :class:`StorageError` when the database does not answer."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        raise StorageError(
            f"database not reachable at {engine.url!r}: {exc.__class__.__name__}: "
            f"{str(exc).splitlines()[0]} (check SCOREBOX_DATABASE_URL)"
        ) from exc


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to ``engine`` that keep loaded values after commit."""
    return sessionmaker(engine, expire_on_commit=False)


#: How a full disk reads in SQLite's and PostgreSQL's errors.
_DISK_FULL = ("database or disk is full", "no space left on device", "could not extend file")


#: How a lost or refused connection reads in psycopg's and SQLite's errors.
_AWAY = (
    "connection",
    "could not connect",
    "server closed",
    "terminating",
    "the database system is",
    "timeout",
    "unable to open database file",
)


def _server_away(exc: SQLAlchemyError) -> bool:
    """Whether ``exc`` says the database is unreachable, not that a statement was wrong.

    Both are ``OperationalError``s (SQLite's "no such table" is one too): only the first
    is a condition that repeats on every call until the server is back.
    """
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    if exc.connection_invalidated:
        return True
    text_of_cause = str(getattr(exc, "orig", None) or exc).lower()
    return any(sign in text_of_cause for sign in _AWAY)


def database_error(exc: SQLAlchemyError) -> ScoreboxError:
    """The error a caller sees for ``exc``: never its SQL or bound parameters (logged here).

    A NUL character PostgreSQL refused is the caller's input: an InvalidRequestError (422).
    """
    cause = getattr(exc, "orig", None) or exc
    if "NUL" in str(cause) and "0x00" in str(cause):
        return InvalidRequestError(
            "a value holds a NUL character (\\u0000), which the database cannot store: remove it"
        )
    if _server_away(exc):
        # the server is away (restarting, unreachable): every call fails alike until it is
        # back, so one warning per interval, not one error per call
        _unreachable.failed(exc)
    else:
        log.error("database error: %s", exc)
    text_of_cause = str(cause).lower()
    if any(sign in text_of_cause for sign in _DISK_FULL):
        return StorageError(
            "the database's disk is full: nothing was written; free space where the database "
            "lives (SCOREBOX_DATA_DIR for SQLite, or the PostgreSQL server's disk) and retry. "
            "Runs in progress wait and resume on their own"
        )
    return StorageError(
        f"database error ({exc.__class__.__name__}): the details are in the server's log; retry, "
        "and if it persists check the database"
    )


@contextmanager
def transaction(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """One session, committed when the block ends and rolled back when it raises.

    An ``IntegrityError`` passes through (a store turns it into the conflict it means);
    any other database error becomes :class:`StorageError`.
    """
    session = sessions()
    try:
        yield session
        session.commit()
    except IntegrityError:
        session.rollback()
        raise
    except SQLAlchemyError as exc:
        session.rollback()
        raise database_error(exc) from exc
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def one_or_404(session: Session, query: TypedReturnsRows[T], missing: str) -> T:
    """The one row ``query`` selects, or :class:`NotFoundError` saying ``missing``."""
    row = session.scalar(query)
    if row is None:
        raise NotFoundError(missing)
    return row


S = TypeVar("S", bound="SqlSessions")


def once_per_engine(make: Callable[[Engine], S]) -> Callable[[Engine], S]:
    """``make`` as a function that builds one store per engine and hands it out again
    (the API, the dashboard and background threads share it; gone with its engine)."""
    made: weakref.WeakKeyDictionary[Engine, S] = weakref.WeakKeyDictionary()

    def store(engine: Engine) -> S:
        found = made.get(engine)
        if found is None:
            found = made[engine] = make(engine)
        return found

    return store


class SqlSessions:
    """What every SQL store holds: its engine and transactions on it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = session_factory(engine)
        self._dialect = engine.dialect.name

    def _session(self) -> AbstractContextManager[Session]:
        return transaction(self._sessions)
