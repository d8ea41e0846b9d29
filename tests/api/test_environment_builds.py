"""Declared dependencies through the API with a real Docker engine: a push returns as soon
as the check is stored, its environment builds in the background, GET .../environment
shows the state, scoring uses it; a failed build gives every row a sandbox_error naming
the build and log."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from engine.audit import ENVIRONMENT_BUILT
from engine.audit.store import AuditLog
from engine.environments import environment_key, read_block
from engine.sandbox.docker.environments import docker_environments
from engine.settings import Settings
from engine.tenancy.auth import authenticate
from tests.api.conftest import Api, AppFactory

pytestmark = pytest.mark.docker

SLUG = '# /// script\n# dependencies = ["python-slugify==8.0.2"]\n# ///\n' + (
    "import slugify\n\ndef evaluate(model_output) -> bool:\n"
    "    return slugify.slugify(model_output) == 'hello-world'\n"
)
LANGDETECT = '# /// script\n# dependencies = ["langdetect==1.0.8"]\n# ///\n' + (
    "import langdetect\n\ndef evaluate(model_output) -> bool:\n    return True\n"
)


def _wait_state(api: Api, h: dict[str, str], name: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while True:
        body = api.client.get(f"/v1/checks/{name}/environment", headers=h).json()
        if body["state"] in states:
            return dict(body)
        assert time.monotonic() < deadline, body
        time.sleep(0.5)


def test_push_returns_at_once_then_the_environment_builds_and_scores(
    docker_settings: Settings, docker_api: Api, tmp_path: Path
) -> None:
    api = docker_api
    for source in (SLUG, LANGDETECT):
        key = environment_key(read_block(source).requirements, docker_settings.image)
        docker_environments(docker_settings).installer.remove_environment(key)
    h = api.tenant()
    started = time.monotonic()
    pushed = api.client.post("/v1/checks", headers=h, json={"name": "slug", "source": SLUG})
    assert pushed.status_code == 201, pushed.text
    assert time.monotonic() - started < 5  # a build takes longer: the push did not wait
    first = api.client.get("/v1/checks/slug/environment", headers=h).json()
    assert first["state"] in ("missing", "building", "ready")
    assert first["requirements"] == ["python-slugify==8.0.2"]
    ready = _wait_state(api, h, "slug", "ready", "failed")
    assert ready["state"] == "ready", ready
    assert ready["resolved"]["python_slugify"] == "8.0.2" and ready["size_bytes"] > 0

    rows = [{"model_output": "Hello, World!"}, {"model_output": "other"}]
    scored = api.client.post("/v1/score", headers=h, json={"checks": ["slug"], "rows": rows})
    assert scored.status_code == 200, scored.text
    assert [(r["status"], r["score"]) for r in scored.json()["results"]] == [
        ("ok", True),
        ("ok", False),
    ]

    pushed = api.client.post("/v1/checks", headers=h, json={"name": "ld", "source": LANGDETECT})
    assert pushed.status_code == 201, pushed.text
    failed = _wait_state(api, h, "ld", "failed", "ready")
    assert failed["state"] == "failed", failed
    assert "no wheel of `langdetect==1.0.8`" in failed["error"]
    assert failed["log"] == f"`scorebox env show {failed['key']}` on the server"
    assert str(tmp_path) not in str(failed)  # no host path reaches a tenant
    assert (tmp_path / "environments" / "logs" / f"{failed['key']}.log").is_file()
    scored = api.client.post("/v1/score", headers=h, json={"checks": ["ld"], "rows": rows})
    assert scored.status_code == 200, scored.text
    results = scored.json()["results"]
    assert {r["status"] for r in results} == {"sandbox_error"}
    assert all("failed to build" in r["error"] and "build log:" in r["error"] for r in results)
    assert all(str(tmp_path) not in r["error"] for r in results)

    plain = api.client.post(
        "/v1/checks",
        headers=h,
        json={"name": "plain", "source": "def evaluate(model_output) -> bool:\n    return True\n"},
    )
    assert plain.status_code == 201
    assert api.client.get("/v1/checks/plain/environment", headers=h).json()["state"] == "none"


def test_an_index_token_never_reaches_the_tenant(
    docker_settings: Settings, make_api: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing private index: its URL (with its token) is in no API answer, no row and
    not in the build log; the tenant reads "the package index"."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # only the index named here
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_RETRIES", "1")  # pip says why only when it retries
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "idx-token-91b0c4"
    api = make_api(pool_size=0, package_index_url=f"https://ci:{token}@127.0.0.1:{port}/simple")
    h = api.tenant()
    # a name nothing builds: the index is down, so it fails however it is spelled
    source = '# /// script\n# dependencies = ["scorebox-never-built==1.0"]\n# ///\n' + (
        "def evaluate(model_output) -> bool:\n    return True\n"
    )
    pushed = api.client.post("/v1/checks", headers=h, json={"name": "tok", "source": source})
    assert pushed.status_code == 201, pushed.text
    failed = _wait_state(api, h, "tok", "failed", "ready")
    assert failed["state"] == "failed" and failed["retryable"], failed
    assert "could not reach the package index" in failed["error"]
    rows = [{"model_output": "x"}]
    scored = api.client.post("/v1/score", headers=h, json={"checks": ["tok"], "rows": rows})
    assert scored.status_code == 200, scored.text
    errors = [r["error"] for r in scored.json()["results"]]
    assert errors and all("the package index" in e for e in errors), errors
    for secret in (token, "127.0.0.1", str(tmp_path)):
        assert secret not in json.dumps(failed) and secret not in scored.text, secret
    build_log = (tmp_path / "environments" / "logs" / f"{failed['key']}.log").read_text()
    assert "https://***@127.0.0.1" in build_log and token not in build_log
    # the build is audited: the tenant, the environment's key, how it ended
    tenant_id = authenticate(api.store, h["Authorization"]).tenant_id
    [built] = AuditLog(api.store.engine).page(tenant_id, action=ENVIRONMENT_BUILT)
    assert (built.target, built.detail["outcome"]) == (failed["key"], "failed")
    assert built.detail["requirements"] == ["scorebox-never-built==1"]  # canonical
    assert token not in json.dumps(built.detail)
