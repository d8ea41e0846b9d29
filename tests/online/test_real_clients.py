"""Real instrumented apps export to a live ``scorebox serve``: the ``openai`` client calling
the tests' scripted model server, instrumented by OpenInference, OpenLLMetry and the
official openai-v2 (content on the span, and content in log records only), exporting with
``opentelemetry-exporter-otlp-proto-http``. The stored rows are what the app sent and got,
and a rule scores each LLM span (its score is read back on the span).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.storage import open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL
from tests.fake_llm import FakeLLM
from tests.live_server import serving
from tests.online.otlp_requests import new_ids, otlp_json, span, traces

APP = Path(__file__).with_name("instrumented_app.py")
SYSTEM = "You are a geography tutor."
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
# the scripted server's usage: characters / 4 of the messages sent and of the reply
INPUT_TOKENS = (len(SYSTEM) + len(QUESTION)) // 4
OUTPUT_TOKENS = len(ANSWER) // 4


@dataclass
class Live:
    url: str
    key: str
    other_key: str
    llm: FakeLLM


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """``scorebox serve`` (SQLite, no warm sandbox: the receiver needs none) and the
    scripted model server."""
    workdir = tmp_path_factory.mktemp("otel-serve")
    database_url = f"sqlite:///{workdir / 'scorebox.db'}"
    store = open_store(database_url)
    try:
        key = auth.create_tenant(store, "otel-a").secret
        other_key = auth.create_tenant(store, "otel-b").secret
    finally:
        store.engine.dispose()
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(workdir),
        "SCOREBOX_DATABASE_URL": database_url,
        "SCOREBOX_POOL_SIZE": "0",
        "SCOREBOX_CONTAINER_LABELS": json.dumps({TEST_LABEL: "1"}),
    }
    llm = FakeLLM().start()
    try:
        with serving(env, workdir / "serve.log") as url:
            # every LLM call of the app is scored (the app's own request span is not)
            made = httpx.post(
                f"{url}/v1/rules",
                headers={"authorization": f"Bearer {key}"},
                json={
                    "name": "llm-calls",
                    "checks": ["builtin:is_json"],
                    "filter": {"service.name": "support-bot", "provider": "openai"},
                },
                timeout=30,
            )
            assert made.status_code == 201, made.text
            yield Live(url, key, other_key, llm)
    finally:
        llm.stop()


def _run_app(
    python: str, live: Live, instrumentation: str, key: str | None = None, **env: str
) -> str:
    live.llm.reply(ANSWER)
    proc = subprocess.run(
        [python, str(APP), instrumentation],
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LLM_BASE_URL": live.llm.base_url,
            "OTEL_EXPORTER_OTLP_ENDPOINT": live.url,
            "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {key or live.key}",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"{instrumentation} app failed:\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["answer"] == ANSWER
    return str(out["trace_id"])


def _scored(live: Live, trace_id: str, timeout: float = 60) -> dict[str, Any]:
    """The trace's LLM span once the rule's score of it is written back."""
    deadline = time.monotonic() + timeout
    while True:
        span = _llm_span(live, trace_id)
        if [s["status"] for s in span["scores"]] == ["scored"] or time.monotonic() > deadline:
            return span
        time.sleep(0.2)


def _llm_span(live: Live, trace_id: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {live.key}"}
    reply = httpx.get(f"{live.url}/v1/traces/{trace_id}", headers=headers, timeout=30)
    assert reply.status_code == 200, reply.text
    spans = reply.json()["spans"]
    # the app's own request span is stored beside the LLM span, for context
    assert "POST /ask" in [s["name"] for s in spans]
    (llm,) = [s for s in spans if s["llm"]]
    parent = next(s for s in spans if s["name"] == "POST /ask")
    assert llm["parent_span_id"] == parent["span_id"]
    assert parent["no_content"] is True and parent["llm"] is False
    return dict(llm)


OPENAI_V2 = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
}
CASES = [
    ("openinference", {}, "ChatCompletion", "llm.input_messages"),
    ("openllmetry", {}, "openai.chat", "gen_ai.input.messages"),
    (
        "openai-v2",
        {**OPENAI_V2, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
        "chat gpt-4o-mini",
        "gen_ai.input.messages",
    ),
    (
        "openai-v2",
        {**OPENAI_V2, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only"},
        "chat gpt-4o-mini",
        "gen_ai.input.messages",
    ),
]


@pytest.mark.parametrize(
    ("instrumentation", "env", "span_name", "source"),
    CASES,
    ids=["openinference", "openllmetry", "openai-v2-span_only", "openai-v2-event_only"],
)
def test_a_real_instrumented_app_is_stored_as_rows(
    otel_python: str,
    live: Live,
    instrumentation: str,
    env: dict[str, str],
    span_name: str,
    source: str,
) -> None:
    trace_id = _run_app(otel_python, live, instrumentation, **env)
    span = _llm_span(live, trace_id)
    assert span["name"] == span_name
    assert span["service"] == "support-bot"
    assert span["no_content"] is False
    row = span["row"]
    assert [(m["role"], m["content"]) for m in row["messages"]] == [
        ("system", SYSTEM),
        ("user", QUESTION),
        ("assistant", ANSWER),
    ]
    assert row["model_output"] == ANSWER
    assert row["scenario_input"] == QUESTION
    meta = row["metadata"]
    assert meta["content_source"]["input"] == source
    assert meta["trace_id"] == trace_id
    assert meta["environment"] == "ci"
    assert meta["provider"] == "openai"
    assert meta["response_model"] == "gpt-4o-mini"  # the scripted server echoes the model
    assert meta["usage"]["input_tokens"] == INPUT_TOKENS
    assert meta["usage"]["output_tokens"] == OUTPUT_TOKENS
    # the rule scored the LLM span, and only it: the app's request span matched no filter
    (score,) = _scored(live, trace_id)["scores"]
    assert score == {
        "rule": "llm-calls",
        "rule_version": 1,
        "check": "is_json",
        "check_version": None,
        "status": "scored",
        "score": 0.0,
        "passed": False,
        "explanation": score["explanation"],
    }
    headers = {"authorization": f"Bearer {live.key}"}
    parent = httpx.get(f"{live.url}/v1/traces/{trace_id}", headers=headers, timeout=30)
    assert [s["scores"] for s in parent.json()["spans"] if not s["llm"]] == [[]]
    if (
        instrumentation == "openai-v2"
        and env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") == "event_only"
    ):
        # the span itself carried no content: it came through /v1/logs
        assert not any(k.endswith(".messages") for k in span["attributes"])


def test_a_wrong_key_stores_nothing(otel_python: str, live: Live) -> None:
    trace_id = _run_app(otel_python, live, "openinference", key="sbx_wrong")
    headers = {"authorization": f"Bearer {live.key}"}
    reply = httpx.get(f"{live.url}/v1/traces/{trace_id}", headers=headers, timeout=30)
    assert reply.status_code == 404


def test_another_tenant_cannot_read_the_trace(otel_python: str, live: Live) -> None:
    trace_id = _run_app(otel_python, live, "openllmetry")
    other = {"authorization": f"Bearer {live.other_key}"}
    reply = httpx.get(f"{live.url}/v1/traces/{trace_id}", headers=other, timeout=30)
    assert reply.status_code == 404
    assert httpx.get(f"{live.url}/v1/spans", headers=other, timeout=30).json()["spans"] == []


def test_otlp_json_with_hex_ids_and_a_gzip_bomb_on_the_live_server(live: Live) -> None:
    headers = {"authorization": f"Bearer {live.key}"}
    trace_id, span_id = new_ids()
    document = otlp_json(traces(span(trace_id, span_id)))
    reply = httpx.post(
        f"{live.url}/v1/traces",
        content=json.dumps(document),
        headers={**headers, "content-type": "application/json"},
        timeout=30,
    )
    assert (reply.status_code, reply.json()) == (200, {})
    stored = httpx.get(f"{live.url}/v1/traces/{trace_id.hex()}", headers=headers, timeout=30)
    assert stored.json()["spans"][0]["span_id"] == span_id.hex()
    # 200 MB of zeros in about 200 KB: refused once past the 32 MB limit, never inflated
    bomb = gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=1)
    reply = httpx.post(
        f"{live.url}/v1/traces",
        content=bomb,
        headers={
            **headers,
            "content-type": "application/x-protobuf",
            "content-encoding": "gzip",
        },
        timeout=60,
    )
    assert reply.status_code == 413
    assert b"once decompressed" in reply.content
