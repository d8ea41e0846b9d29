"""The dashboard's traces: the list of LLM spans and a trace drawn as a tree with its
durations and the LLM call's messages, on SQLite and PostgreSQL; another tenant's trace
is a 404 page."""

from __future__ import annotations

import re
import secrets

from engine.storage.span_reads import StoredSpan
from engine.web.traces import span_tree
from tests.api.conftest import Api
from tests.online.otlp_requests import PROTOBUF, new_ids, span, traces

MS = 1_000_000
T0 = 1_795_677_253_000_000_000


def _sign_in(api: Api, headers: dict[str, str]) -> None:
    key = headers["Authorization"].removeprefix("Bearer ")
    reply = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert reply.status_code == 303


def _agent_trace(api: Api, headers: dict[str, str]) -> tuple[bytes, bytes, bytes, bytes]:
    """A root span (an agent step) with a tool span and an LLM call under it."""
    trace_id, root = new_ids()
    tool, llm = secrets.token_bytes(8), secrets.token_bytes(8)
    spans = [
        span(trace_id, root, name="agent step", attributes={"step": 1}, start=T0),
        span(trace_id, tool, name="search tool", attributes={}, start=T0 + 10 * MS, parent=root),
        span(trace_id, llm, start=T0 + 20 * MS, parent=root),  # an LLM call: 250 ms
    ]
    reply = api.client.post(
        "/v1/traces", content=traces(*spans).SerializeToString(), headers={**headers, **PROTOBUF}
    )
    assert reply.status_code == 200, reply.text
    return trace_id, root, tool, llm


def test_the_trace_page_draws_the_tree_with_durations_and_the_llm_call(api: Api) -> None:
    h = api.tenant()
    trace_id, root, tool, llm = _agent_trace(api, h)
    _sign_in(api, h)
    page = api.client.get(f"/ui/traces/{trace_id.hex()}")
    assert page.status_code == 200
    order = re.findall(r'data-span="([0-9a-f]{16})" data-depth="(\d)"', page.text)
    # the parent first, then its children by start time, one level down
    assert order == [(root.hex(), "0"), (tool.hex(), "1"), (llm.hex(), "1")]
    # every test span lasts 250 ms; the trace runs from 0 to 270 ms
    assert page.text.count('data-field="duration">250.0 ms') == 3
    assert "3 spans over 270.0 ms" in page.text
    call = page.text[page.text.index(f'id="llm-{llm.hex()}"') :]
    assert "What is the capital of France?" in call
    assert "Paris is the capital of France." in call
    # only the LLM call gets a section of messages
    assert f'id="llm-{tool.hex()}"' not in page.text


def test_the_traces_list_shows_llm_spans_and_filters_by_text(api: Api) -> None:
    h = api.tenant()
    trace_id, _root, _tool, llm = _agent_trace(api, h)
    _sign_in(api, h)
    page = api.client.get("/ui/traces")
    assert page.status_code == 200
    assert f"/ui/traces/{trace_id.hex()}#span-{llm.hex()}" in page.text
    assert "agent step" not in page.text  # LLM calls only
    assert "gpt-4o-mini-2026-01-01" in page.text
    assert 'href="/ui/traces">Traces</a>' in page.text  # in the main navigation
    missed = api.client.get("/ui/traces", params={"q": "no such words anywhere"})
    assert "No LLM spans yet." in missed.text
    hit = api.client.get("/ui/traces", params={"q": "capital of france"})
    assert trace_id.hex() in hit.text
    junk = api.client.get("/ui/traces", params={"cursor": "not-a-cursor"})
    assert junk.status_code == 200 and trace_id.hex() in junk.text  # the first page


def test_another_tenants_trace_is_a_404_page(api: Api) -> None:
    owner, other = api.tenant(), api.tenant()
    trace_id, *_ = _agent_trace(api, owner)
    _sign_in(api, other)
    page = api.client.get(f"/ui/traces/{trace_id.hex()}")
    assert page.status_code == 404
    assert "capital of France" not in page.text
    assert trace_id.hex() not in api.client.get("/ui/traces").text
    assert api.client.get("/ui/traces/not-a-trace-id").status_code == 404


def test_a_span_whose_parent_never_arrived_is_a_root_and_a_cycle_is_drawn_once() -> None:
    def stored(span_id: str, parent: str | None, start: int) -> StoredSpan:
        return StoredSpan(
            trace_id="ab" * 16,
            span_id=span_id,
            parent_span_id=parent,
            name=span_id,
            kind=1,
            service=None,
            model=None,
            start_unix_nano=start,
            end_unix_nano=start + 10,
            status="ok",
            attributes={},
            events=[],
            row={},
            is_llm=False,
            no_content=True,
            received_at=None,  # type: ignore[arg-type]
        )

    tree = span_tree(
        [stored("b", "a", 5), stored("orphan", "gone", 0), stored("x", "y", 1), stored("y", "x", 2)]
    )
    assert [(t.span.span_id, t.depth) for t in tree] == [
        ("orphan", 0),
        ("b", 0),
        ("x", 0),
        ("y", 0),
    ]
    assert tree[0].offset_pct == 0.0 and tree[1].offset_pct == 33.33  # 5 ns into 15
