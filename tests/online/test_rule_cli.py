"""``scorebox rule ...`` against a live ``scorebox serve``: create, list, show, disable,
enable, backfill and delete, and the server's refusals as the CLI prints them."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.storage import open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL
from tests.live_server import CLI, serving
from tests.online.otlp_requests import GZIP_PROTOBUF, gz, new_ids, span, traces


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A live server (SQLite, no warm sandbox: built-in checks) and a tenant's CLI env."""
    workdir = tmp_path_factory.mktemp("rule-cli")
    database_url = f"sqlite:///{workdir / 'scorebox.db'}"
    store = open_store(database_url)
    try:
        key = auth.create_tenant(store, "rule-cli").secret
    finally:
        store.engine.dispose()
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(workdir),
        "SCOREBOX_DATABASE_URL": database_url,
        "SCOREBOX_POOL_SIZE": "0",
        "SCOREBOX_CONTAINER_LABELS": json.dumps({TEST_LABEL: "1"}),
    }
    with serving(env, workdir / "serve.log") as url:
        yield {**os.environ, "SCOREBOX_SERVER": url, "SCOREBOX_API_KEY": key}


def cli(env: dict[str, str], *args: str, ok: bool = True) -> str:
    done = subprocess.run(
        [*CLI, "rule", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode == 0) is ok, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_rule_commands_manage_a_rule_and_backfill_it(
    server: dict[str, str], tmp_path: Path
) -> None:
    made = cli(
        server,
        "create",
        "answers",
        "--check",
        "builtin:is_json",
        "--filter",
        '{"service.name": "support-bot"}',
        "--sample-rate",
        "0.5",
        "--disabled",
    )
    assert made.strip() == (
        'answers  v1  disabled  sample 0.5  checks: is_json  filter: {"service.name": '
        '"support-bot"}'
    )
    assert "answers  v1  disabled" in cli(server, "list")
    assert "answers  v1  enabled" in cli(server, "enable", "answers")
    # a span stored while the rule is enabled; sampling decides from its trace id
    trace_id, span_id = new_ids()
    while not int(trace_id[8:].hex(), 16) < 2**63:  # the SDK's rule: kept at rate 0.5
        trace_id, span_id = new_ids()
    reply = httpx.post(
        f"{server['SCOREBOX_SERVER']}/v1/traces",
        content=gz(traces(span(trace_id, span_id))),
        headers={"authorization": f"Bearer {server['SCOREBOX_API_KEY']}", **GZIP_PROTOBUF},
        timeout=30,
    )
    assert reply.status_code == 200
    out = cli(
        server,
        "backfill",
        "answers",
        "--since",
        "2026-11-01T00:00:00Z",
        "--until",
        "2027-01-01T00:00:00Z",
    )
    assert "done: " in out
    shown = cli(server, "show", "answers")
    assert "scores: scored=1" in shown and "backlog: 0" in shown
    assert json.loads(cli(server, "show", "answers", "--json"))["counts"] == {"scored": 1}
    assert "answers  v1  disabled" in cli(server, "disable", "answers")
    # refusals name the fix
    taken = cli(server, "create", "answers", "--check", "builtin:is_json", ok=False)
    assert "HTTP 409: rule 'answers' exists: change it with PATCH /v1/rules/answers" in taken
    bad = cli(server, "create", "x", "--check", "builtin:is_json", "--filter", "{", ok=False)
    assert "--filter: not JSON" in bad
    assert "deleted rule answers" in cli(server, "delete", "answers", "--yes")
    missing = cli(server, "show", "answers", ok=False)
    assert "HTTP 404: no rule 'answers': GET /v1/rules lists this tenant's rules" in missing
    assert "no rules: scorebox rule create NAME --check CHECK" in cli(server, "list")
