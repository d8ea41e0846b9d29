"""Refuse to start distributed mode on SQLite or without a reachable broker, naming the fix."""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy.engine import make_url

from engine.errors import ConfigurationError
from engine.settings import Settings


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")).geturl()


def check_config(settings: Settings) -> None:
    """Settings-only checks (no I/O): a Redis broker URL and a PostgreSQL database."""
    url = settings.broker_url
    if not url:
        return
    if urlsplit(url).scheme not in ("redis", "rediss"):
        raise ConfigurationError(
            f"SCOREBOX_BROKER_URL={masked_url(url)} is not a Redis URL: distributed mode runs "
            "Celery on Redis, e.g. SCOREBOX_BROKER_URL=redis://127.0.0.1:6379/0"
        )
    backend = make_url(settings.effective_database_url).get_backend_name()
    if backend != "postgresql":
        raise ConfigurationError(
            "distributed mode (SCOREBOX_BROKER_URL is set) needs PostgreSQL, the one store "
            f"every node shares, but the database is {backend}: set "
            "SCOREBOX_DATABASE_URL=postgresql+psycopg://USER:PASSWORD@HOST/DB, or unset "
            "SCOREBOX_BROKER_URL for the embedded mode"
        )


def check_broker(url: str, timeout_seconds: float = 3.0) -> None:
    """Raise :class:`ConfigurationError` when Redis at ``url`` does not answer PING."""
    import redis  # noqa: PLC0415 (lazy: redis is the optional [distributed] extra; serve and doctor import this module without it)

    client = redis.Redis.from_url(
        url, socket_connect_timeout=timeout_seconds, socket_timeout=timeout_seconds
    )
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise ConfigurationError(
            f"the broker at {masked_url(url)} is not reachable ({exc}): start Redis "
            "(`systemctl start redis-server`, or `scripts/redis.sh start` for a throwaway one) "
            "or fix SCOREBOX_BROKER_URL; unset it for the embedded mode"
        ) from exc
    finally:
        client.close()


def check_distributed(settings: Settings) -> None:
    """Everything distributed mode needs before it starts (a no-op when no broker is set)."""
    if not settings.broker_url:
        return
    check_config(settings)
    check_broker(settings.broker_url)
