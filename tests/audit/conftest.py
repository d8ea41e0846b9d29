"""The API fixtures (app factory on SQLite and PostgreSQL) for the audit log tests."""

from __future__ import annotations

from tests.api.conftest import api, database_url, docker_api, make_api

__all__ = ["api", "database_url", "docker_api", "make_api"]
