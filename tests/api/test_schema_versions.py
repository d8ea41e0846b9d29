"""Safe upgrades: migrations one node at a time, and no node serving a schema it was not
written for (docs/operating/upgrading.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from engine.app import create_app
from engine.errors import StorageError
from engine.storage.database import (
    MIGRATION_LOCK_KEY,
    create_db_engine,
    current_revision,
    head_revision,
    upgrade,
)
from tests.api.conftest import _postgres_database, api_settings

ROOT = Path(__file__).resolve().parents[2]
HEAD = head_revision()


def _set_revision(url: str, revision: str) -> None:
    db = create_db_engine(url)
    with db.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    db.dispose()


def test_a_node_refuses_to_start_on_an_older_schema(database_url: str, tmp_path: Any) -> None:
    db = create_db_engine(database_url)
    upgrade(db, "0009")
    db.dispose()
    app = create_app(api_settings(database_url, tmp_path, migrate_on_start=False))
    with pytest.raises(StorageError) as caught, TestClient(app):
        pass
    assert str(caught.value) == (
        f"refusing to start: database schema is at 0009, this code needs {HEAD}: "
        "run `scorebox db upgrade`"
    )


def test_readyz_says_why_when_the_schema_moves_under_a_running_node(
    database_url: str, tmp_path: Any
) -> None:
    app = create_app(api_settings(database_url, tmp_path))
    with TestClient(app) as client:
        assert client.get("/readyz").json()["checks"]["database"] == {"ok": True, "detail": "ok"}
        _set_revision(database_url, "0009")
        answer = client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"]["database"] == {
            "ok": False,
            "detail": f"database schema is at 0009, this code needs {HEAD}: "
            "run `scorebox db upgrade`",
        }
        _set_revision(database_url, "9999")  # a newer scorebox migrated it
        answer = client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"]["database"]["detail"] == (
            f"database schema is at 9999, newer than this code ({HEAD}): "
            "upgrade scorebox on this node"
        )


def _db_upgrade(url: str) -> subprocess.Popen[str]:
    """``scorebox db upgrade`` in a process of its own, as a node's start would run it."""
    return subprocess.Popen(
        [sys.executable, "-c", "from engine.cli import main; main()", "db", "upgrade"],
        cwd=ROOT,
        env={**os.environ, "SCOREBOX_DATABASE_URL": url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.postgres
def test_two_nodes_starting_together_migrate_one_at_a_time() -> None:
    """Both wait while the migration lock is held; then one migrates, the other finds the
    schema current; neither fails (before the lock, one crashed on a duplicate table)."""
    for url in _postgres_database():
        holder = create_engine(url, isolation_level="AUTOCOMMIT")
        nodes: list[subprocess.Popen[str]] = []
        try:
            with holder.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
                nodes += [_db_upgrade(url), _db_upgrade(url)]
                time.sleep(4)  # long enough for both to have created their tables, unlocked
                assert [n.poll() for n in nodes] == [None, None], "a node did not wait"
                assert current_revision(holder) is None
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
            outputs = [n.communicate(timeout=120) for n in nodes]
            for node, (out, err) in zip(nodes, outputs, strict=True):
                assert node.returncode == 0, err
                assert out.strip() == f"database at revision {HEAD}"
            assert current_revision(holder) == HEAD
        finally:
            holder.dispose()
            for node in nodes:
                if node.poll() is None:
                    node.kill()
