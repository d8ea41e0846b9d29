"""Secrets reach the service, never the containers, the database in clear, or any endpoint."""

from __future__ import annotations

import sqlite3

from engine.tenancy import auth
from tests.api.conftest import Api, AppFactory

LLM_KEY = "sk-live-do-not-leak-0123456789"
ADMIN_KEY = "admin-do-not-leak-9876543210"


def test_api_keys_are_stored_hashed(make_api: AppFactory) -> None:
    api = make_api()
    headers = api.tenant("hashed")
    secret = headers["Authorization"].removeprefix("Bearer ")
    url = api.store.engine.url
    if url.get_backend_name() != "sqlite":
        rows = [
            str(r) for r in api.store.engine.connect().exec_driver_sql("SELECT * FROM api_keys")
        ]
        assert rows and not any(secret in r for r in rows)
        return
    assert url.database is not None
    with sqlite3.connect(url.database) as conn:
        dump = "\n".join(conn.iterdump())
    assert auth.hash_key(secret) in dump
    assert secret not in dump and secret[len(auth.KEY_PREFIX) :] not in dump


def test_admin_key_comparison() -> None:
    assert auth.is_admin(ADMIN_KEY, f"Bearer {ADMIN_KEY}")
    assert not auth.is_admin(ADMIN_KEY, f"Bearer {ADMIN_KEY[:-1]}")
    assert not auth.is_admin(ADMIN_KEY, f"Basic {ADMIN_KEY}")
    assert not auth.is_admin(None, f"Bearer {ADMIN_KEY}")


def test_no_endpoint_shows_a_secret(make_api: AppFactory) -> None:
    api: Api = make_api(
        llm_base_url="http://127.0.0.1:9/v1", llm_api_key=LLM_KEY, admin_key=ADMIN_KEY
    )
    headers = api.tenant()
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    pages = [
        api.client.get("/openapi.json"),
        api.client.get("/metrics"),
        api.client.get("/readyz"),
        api.client.get("/healthz"),
        api.client.get("/v1/checks", headers=headers),
        api.client.get("/v1/admin/tenants", headers=admin),
        api.client.get("/v1/runs", headers={"Authorization": "Bearer wrong"}),
    ]
    for page in pages:
        assert LLM_KEY not in page.text and ADMIN_KEY not in page.text, page.request.url
