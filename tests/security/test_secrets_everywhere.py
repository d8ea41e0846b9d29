"""The operator's secrets, all seeded at once, appear nowhere a tenant can read.

Seeded in the settings: the LLM key (``SCOREBOX_LLM_API_KEY``), credentials in the LLM
URL (``SCOREBOX_LLM_BASE_URL=http://user:pass@host/v1``) and a token in the package
index URL (``SCOREBOX_PACKAGE_INDEX_URL=https://user:TOKEN@host/simple``). Then every
path that once leaked one is walked while the upstreams fail: an upstream 400 to a model
check, to the check generator and to a check calling the model gateway; a build whose
index refuses the connection. None of the secrets may appear in an API answer, a
dashboard page, a stored row, an export (CSV, NDJSON), an environment's state,
``/readyz``, a file under the data directory (the database, build logs) or a line of
the server's log.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from engine.environments import environment_key, read_block
from engine.sandbox.docker.environments import docker_environments
from engine.settings import Settings
from tests.api.conftest import Api, AppFactory
from tests.fake_llm import MODEL, FakeLLM, Reply

pytestmark = pytest.mark.docker

LLM_KEY = "sk-live-llm-key-7f3a9c"
LLM_USER = "llmuser-2b8e"
LLM_PASS = "llm-pass-5d1f0a"
INDEX_USER = "idxuser-9c4d"
INDEX_TOKEN = "idx-token-e6a2b7"
ADMIN_KEY = "admin-key-3e9b1c-0d5f7a2c4e6b"
SECRETS = (LLM_KEY, LLM_PASS, INDEX_TOKEN, ADMIN_KEY, f"{LLM_USER}:", f"{INDEX_USER}:")

MODEL_CHECK = {
    "name": "judge",
    "kind": "model",
    "prompt_template": "Is this reply polite? Answer PASS or FAIL.\n\n{model_output}",
}
GATEWAY_CHECK = """
from openai import OpenAI

def evaluate(model_output):
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", temperature=5, messages=[{"role": "user", "content": model_output}]
    )
    return reply.choices[0].message.content.strip() == "yes"
"""
#: A version no other test builds: another pytest worker's successful build of the same
#: environment would be found ready here, where its build must fail.
INDEX_CHECK = '# /// script\n# dependencies = ["text-unidecode==1.1"]\n# ///\n' + (
    "def evaluate(model_output) -> bool:\n    return True\n"
)
ROWS = [{"model_output": "thank you"}, {"model_output": "go away"}]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _upstream_400(body: dict[str, Any]) -> Reply:
    """The operator's endpoint refuses every request (as it refuses ``temperature=5``)."""
    return Reply(status=400, text="temperature: must be at most 2")


def _wait(api: Api, headers: dict[str, str], path: str, done: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while True:
        body = dict(api.client.get(path, headers=headers).json())
        state = body.get("state", body.get("status"))
        if state in done:
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.3)


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_no_secret_reaches_anything_a_tenant_reads(
    docker_settings: Settings,
    make_api: AppFactory,
    fake_llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # only the index named here
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_RETRIES", "1")
    caplog.set_level(logging.DEBUG)
    built = environment_key(read_block(INDEX_CHECK).requirements, docker_settings.image)
    docker_environments(docker_settings).installer.remove_environment(built)  # build it again
    fake_llm.responder = _upstream_400
    llm_url = fake_llm.base_url.replace("http://", f"http://{LLM_USER}:{LLM_PASS}@")
    index_url = f"https://{INDEX_USER}:{INDEX_TOKEN}@127.0.0.1:{_closed_port()}/simple"
    api = make_api(
        pool_size=1,
        llm_base_url=llm_url,
        llm_api_key=LLM_KEY,
        llm_model=MODEL,
        llm_max_retries=0,
        llm_timeout_seconds=5.0,
        package_index_url=index_url,
        admin_key=ADMIN_KEY,
    )
    h = api.tenant("secrets")
    seen: list[tuple[str, str]] = []  # (what, text) of everything the tenant was shown

    def read(what: str, reply: Any) -> Any:  # the test client's response
        seen.append((what, reply.text))
        return reply

    # checks: a model check, a code check calling the gateway, a check needing the index
    for body in (
        MODEL_CHECK,
        {"name": "caller", "source": GATEWAY_CHECK},
        {"name": "needs-index", "source": INDEX_CHECK},
    ):
        pushed = read("push", api.client.post("/v1/checks", headers=h, json=body))
        assert pushed.status_code == 201, pushed.text
    env = _wait(api, h, "/v1/checks/needs-index/environment", {"failed", "ready"})
    seen.append(("environment state", str(env)))
    assert env["state"] == "failed", env

    # the upstream's 400, through every path that calls the operator's model
    generated = read(
        "generate",
        api.client.post(
            "/v1/checks/generate",
            headers=h,
            json={"description": "answers politely", "check_type": "model"},
        ),
    )
    assert generated.status_code >= 400, generated.text
    scored = read(
        "score",
        api.client.post(
            "/v1/score",
            headers=h,
            json={"checks": ["judge", "caller", "needs-index"], "rows": ROWS},
        ),
    )
    assert scored.status_code == 200, scored.text
    statuses = {r["check"]: r["status"] for r in scored.json()["results"]}
    assert statuses["judge"] == "judge_error", scored.text
    assert statuses["caller"] in ("error", "judge_error"), scored.text
    assert statuses["needs-index"] == "sandbox_error", scored.text
    started = read(
        "run",
        api.client.post(
            "/v1/runs", headers=h, json={"checks": ["judge", "caller", "needs-index"], "rows": ROWS}
        ),
    )
    run_id = started.json()["id"]
    run = _wait(api, h, f"/v1/runs/{run_id}", {"succeeded", "failed", "cancelled"})
    seen.append(("run", str(run)))
    for accept in ("application/json", "application/x-ndjson", "text/csv"):
        read(
            f"results {accept}",
            api.client.get(f"/v1/runs/{run_id}/results", headers={**h, "Accept": accept}),
        )
    for path in ("/v1/checks", "/v1/checks/needs-index", "/v1/runs", "/v1/audit"):
        read(path, api.client.get(path, headers=h))
    for path in ("/readyz", "/healthz", "/metrics", "/openapi.json", "/"):
        read(path, api.client.get(path))

    # the dashboard, signed in with the tenant's key
    key = h["Authorization"].removeprefix("Bearer ")
    signed = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert signed.status_code == 303, signed.text
    for path in (
        "/ui/",
        "/ui/health",
        "/ui/runs",
        f"/ui/runs/{run_id}",
        f"/ui/runs/{run_id}/rows",
        f"/ui/runs/{run_id}/rows/0",
        f"/ui/runs/{run_id}/rows/1",
        f"/ui/runs/{run_id}/export.csv",
        f"/ui/runs/{run_id}/export.jsonl",
        "/ui/checks",
        "/ui/checks/judge",
        "/ui/checks/caller",
        "/ui/checks/needs-index",
        "/ui/queue",
    ):
        page = read(path, api.client.get(path))
        assert page.status_code < 500, (path, page.text[:300])

    leaks = {what: _leaks(text) for what, text in seen if _leaks(text)}
    assert not leaks, f"secrets in what the tenant read: {leaks}"
    # rows and builds at rest: the database file, the build logs, anything in the data dir
    at_rest: dict[str, list[str]] = {}
    for stored in Path(api_data_dir(api)).rglob("*"):
        if stored.is_file():
            data = stored.read_bytes().decode("latin-1")
            if found := _leaks(data):
                at_rest[str(stored.relative_to(tmp_path))] = found
    assert not at_rest, f"secrets stored: {at_rest}"
    logged = [f"{r.name}: {r.getMessage()[:300]}" for r in caplog.records if _leaks(r.getMessage())]
    assert not logged, f"secrets in the server's log: {logged}"


def api_data_dir(api: Api) -> str:
    """The app's data directory (the database and build logs live under it)."""
    settings: Settings = api.client.app.state.services.settings  # type: ignore[attr-defined]
    return str(settings.data_dir)
