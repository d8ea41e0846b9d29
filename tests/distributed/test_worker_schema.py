"""A worker refuses to start on a database of another schema revision, naming the fix
(before, it started happily on an un-migrated database)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.settings import Settings
from engine.storage.database import create_db_engine, head_revision, upgrade

pytestmark = [pytest.mark.postgres, pytest.mark.docker]


def test_a_worker_refuses_an_older_schema(
    pg_url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch, docker_settings: Settings
) -> None:
    db = create_db_engine(pg_url)
    upgrade(db, "0009")
    db.dispose()
    monkeypatch.setenv("SCOREBOX_DATABASE_URL", pg_url)
    monkeypatch.setenv("SCOREBOX_BROKER_URL", redis_url)
    result = CliRunner().invoke(main, ["worker"])
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: refusing to start: database schema is at 0009, this code needs "
        f"{head_revision()}: run `scorebox db upgrade`"
    )
