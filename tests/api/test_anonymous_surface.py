"""What a caller without a key can reach (docs/operating/hardening.md lists it), that no
anonymous answer shows an infrastructure address, and that a weak admin key is refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, make_url, text

from engine.app import create_app
from engine.errors import ConfigurationError
from tests.api.conftest import Api, _postgres_database, api_settings

#: docs/operating/hardening.md, "The anonymous surface": answered without a key
ANONYMOUS = {"/", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/ui/signin"}


def test_the_anonymous_surface_is_the_documented_one(api: Api) -> None:
    client = api.client
    for path in ANONYMOUS:
        assert client.get(path, follow_redirects=False).status_code == 200, path
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200
    # every other operation of the API wants a key (or is not found without one)
    document = client.get("/openapi.json").json()
    opened = []
    for path, item in document["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        for method in item:
            if path in ANONYMOUS:
                continue
            answer = client.request(method.upper(), concrete, follow_redirects=False)
            if answer.status_code not in (401, 403, 404, 405):
                opened.append(f"{method.upper()} {path}: {answer.status_code}")
    assert opened == []
    # the dashboard's other pages send an anonymous caller to the sign-in page
    for page in ("/ui/runs", "/ui/checks", "/ui/health", "/ui/compare"):
        answer = client.get(page, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/signin")


@pytest.mark.postgres
def test_anonymous_readyz_names_no_address_when_postgres_is_gone(tmp_path: Any) -> None:
    for database_url in _postgres_database():
        url = make_url(database_url)
        app = create_app(api_settings(database_url, tmp_path))
        with TestClient(app) as client:
            assert client.get("/readyz").status_code == 200
            admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:  # the database vanishes under the running node
                conn.execute(text(f'DROP DATABASE "{url.database}" WITH (FORCE)'))
            admin.dispose()
            answer = client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"]["database"] == {
            "ok": False,
            "detail": "database not reachable: check SCOREBOX_DATABASE_URL "
            "(the cause is in this node's log)",
        }
        for secret in (str(url.host), str(url.port), str(url.database), str(url.username)):
            assert secret not in answer.text


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "x",
            "SCOREBOX_ADMIN_KEY is too short (1 characters, at least 24): anyone who guesses "
            "it manages every tenant. Make one with "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        ),
        (
            "ab" * 20,
            "SCOREBOX_ADMIN_KEY repeats too few characters (2 distinct, at least 8): it is "
            "guessable. Make one with "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        ),
    ],
)
def test_a_weak_admin_key_is_refused_at_start(key: str, message: str, tmp_path: Any) -> None:
    settings = api_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path, admin_key=key)
    with pytest.raises(ConfigurationError) as caught:
        create_app(settings)
    assert str(caught.value) == message


def test_a_strong_admin_key_is_taken(tmp_path: Any) -> None:
    key = "N3v9-qLx_7RtYb2WcZpK4mHs"
    settings = api_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path, admin_key=key)
    with TestClient(create_app(settings)) as client:
        answer = client.get("/v1/admin/tenants", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200
