"""The API node's caches of key -> tenant and check name -> version (engine/storage/cached.py).

A change made through the node (the admin API's revocation, a push, a delete) is seen by
the very next request; a change made elsewhere (another process's store: another node,
``scorebox tenant revoke-key``) within ``key_cache_seconds`` / ``check_cache_seconds``.
The scoring tests run on the fake sandbox (no Docker): its answer says which source ran.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from typing import Any

import pytest

from engine.sandbox.fake import fake_runner_factory
from engine.sandbox.protocol import Job, JobRow
from engine.storage import new_id
from engine.storage.cached import CachedStore
from engine.tenancy.auth import hash_key
from tests.api.conftest import Api, AppFactory

ADMIN = secrets.token_urlsafe(24)
V1 = "def evaluate(model_output: str) -> float:\n    return 1.0\n"
V2 = "def evaluate(model_output: str) -> float:\n    return 2.0\n"
ROW = {"model_output": "yes"}


def _source_score(job: Job, row: JobRow) -> float:
    """The fake sandbox's answer: which of V1 / V2 it was given."""
    return 2.0 if "return 2.0" in job.source else 1.0


def _score(api: Api, headers: dict[str, str], check: str) -> Any:
    return api.client.post("/v1/score", headers=headers, json={"checks": [check], "rows": [ROW]})


def _key_id(api: Api, headers: dict[str, str]) -> str:
    found = api.store.find_key(hash_key(headers["Authorization"].removeprefix("Bearer ")))
    assert found is not None
    return found[0].id


def _tenant_id(api: Api, headers: dict[str, str]) -> str:
    found = api.store.find_key(hash_key(headers["Authorization"].removeprefix("Bearer ")))
    assert found is not None
    return found[1].id


def test_the_app_caches_keys_and_checks(api: Api) -> None:
    store = api.client.app.state.services.store  # type: ignore[attr-defined]
    assert isinstance(store, CachedStore)
    h = api.tenant()
    assert api.client.get("/v1/checks", headers=h).status_code == 200
    assert len(store.keys) == 1


def test_a_key_revoked_through_the_node_is_401_at_once(make_api: AppFactory) -> None:
    api = make_api(admin_key=ADMIN, key_cache_seconds=3600)
    h = api.tenant()
    assert api.client.get("/v1/checks", headers=h).status_code == 200  # now cached
    assert api.client.get("/v1/checks", headers=h).status_code == 200
    admin = {"Authorization": f"Bearer {ADMIN}"}
    reply = api.client.delete(f"/v1/admin/keys/{_key_id(api, h)}", headers=admin)
    assert reply.status_code == 200, reply.text
    reply = api.client.get("/v1/checks", headers=h)
    assert reply.status_code == 401
    assert "revoked" in reply.json()["detail"]
    body = {"checks": ["is_json"], "rows": [ROW]}
    assert api.client.post("/v1/score", headers=h, json=body).status_code == 401


def test_a_key_revoked_elsewhere_is_401_within_the_cache_bound(make_api: AppFactory) -> None:
    api = make_api(key_cache_seconds=0.5)
    h = api.tenant()
    assert api.client.get("/v1/checks", headers=h).status_code == 200  # now cached
    api.store.revoke_key(_key_id(api, h))  # another process: the node is not told
    deadline = time.monotonic() + 0.5 + 5  # the bound, and slack for a slow machine
    while api.client.get("/v1/checks", headers=h).status_code != 401:
        assert time.monotonic() < deadline, "the revoked key still works past the bound"
        time.sleep(0.05)


def test_key_cache_off_reads_every_revocation_at_once(make_api: AppFactory) -> None:
    api = make_api(key_cache_seconds=0)
    h = api.tenant()
    assert api.client.get("/v1/checks", headers=h).status_code == 200
    api.store.revoke_key(_key_id(api, h))
    assert api.client.get("/v1/checks", headers=h).status_code == 401


def test_a_new_key_works_at_once(api: Api) -> None:
    """Unknown keys are not cached: a key issued elsewhere works on its first request."""
    assert (
        api.client.get("/v1/checks", headers={"Authorization": "Bearer sbx_x"}).status_code == 401
    )
    assert api.client.get("/v1/checks", headers=api.tenant()).status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_quotas_changed_through_the_node_reach_the_principal(make_api: AppFactory) -> None:
    api = make_api(admin_key=ADMIN, key_cache_seconds=3600)
    h = api.tenant("q")
    assert api.client.get("/v1/checks", headers=h).status_code == 200
    admin = {"Authorization": f"Bearer {ADMIN}"}
    reply = api.client.patch(
        "/v1/admin/tenants/q/quotas", headers=admin, json={"concurrent_jobs": 3}
    )
    assert reply.status_code == 200, reply.text
    store = api.client.app.state.services.store  # type: ignore[attr-defined]
    found = store.find_key(hash_key(h["Authorization"].removeprefix("Bearer ")))
    assert found is not None
    assert found[1].quotas["concurrent_jobs"] == 3


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_new_check_version_is_used_by_the_next_score(make_api: AppFactory) -> None:
    api = make_api(
        runner_factory=fake_runner_factory(_source_score), pool_size=0, check_cache_seconds=3600
    )
    h = api.tenant()
    api.push(h, "c", V1)
    first = _score(api, h, "c")
    assert first.status_code == 200, first.text
    assert (first.json()["results"][0]["version"], first.json()["results"][0]["score"]) == (1, 1.0)
    assert _score(api, h, "c").json()["results"][0]["version"] == 1  # cached
    api.push(h, "c", V2)
    second = _score(api, h, "c").json()["results"][0]
    assert (second["version"], second["score"]) == (2, 2.0)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_deleted_checks_and_versions_are_not_scored_after_the_delete(
    make_api: AppFactory,
) -> None:
    api = make_api(
        runner_factory=fake_runner_factory(_source_score), pool_size=0, check_cache_seconds=3600
    )
    h = api.tenant()
    api.push(h, "c", V1)
    api.push(h, "c", V2)
    assert _score(api, h, "c").json()["results"][0]["version"] == 2
    assert _score(api, h, "c@1").json()["results"][0]["version"] == 1
    assert api.client.delete("/v1/checks/c", headers=h, params={"version": 2}).status_code == 200
    assert _score(api, h, "c").json()["results"][0]["version"] == 1
    assert api.client.delete("/v1/checks/c", headers=h).status_code == 200
    assert _score(api, h, "c").status_code == 404
    assert _score(api, h, "c@1").status_code == 404


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_name_first_unknown_then_pushed_is_found_at_once(make_api: AppFactory) -> None:
    api = make_api(
        runner_factory=fake_runner_factory(_source_score), pool_size=0, check_cache_seconds=3600
    )
    h = api.tenant()
    assert _score(api, h, "later").status_code == 404  # the miss is cached
    api.push(h, "later", V2)
    reply = _score(api, h, "later")
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["score"] == 2.0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_version_pushed_elsewhere_is_used_within_the_cache_bound(
    make_api: AppFactory,
) -> None:
    api = make_api(
        runner_factory=fake_runner_factory(_source_score), pool_size=0, check_cache_seconds=0.5
    )
    h = api.tenant()
    first = api.push(h, "c", V1)
    assert _score(api, h, "c").json()["results"][0]["version"] == 1
    # another node stores version 2 (this node's store is not told)
    stored = api.store.get_check_by_id(_tenant_id(api, h), first["id"])
    api.store.insert_check(replace(stored, id=new_id("chk"), version=2, source=V2, sha256="0" * 64))
    deadline = time.monotonic() + 0.5 + 5
    while _score(api, h, "c").json()["results"][0]["version"] != 2:
        assert time.monotonic() < deadline, "the new version is still not used past the bound"
        time.sleep(0.05)
