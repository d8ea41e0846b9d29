"""A local OpenAI-compatible server with scripted replies, for tests and the bench self-test.

Real HTTP on 127.0.0.1 (a free port), in a thread: ``POST /v1/chat/completions``
answers from a queue of scripted replies (text, status codes with headers,
delays, hangs) and ``GET /v1/models`` lists one model. Every request body is
recorded so tests can assert on what was sent (e.g. the generator's feedback).

    def test_x(fake_llm):
        fake_llm.reply("hello")
        fake_llm.error(429, retry_after="0")
        settings = fake_llm.settings()          # SCOREBOX_LLM_* pointing here
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from engine.settings import Settings

MODEL = "fake-model"


@dataclass
class Reply:
    """One scripted answer."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    hang: bool = False  # never answer (until the server stops)
    refusal: str | None = None
    finish_reason: str = "stop"
    raw: bytes | None = None  # send these bytes as the body instead
    trickle_seconds: float = 0.0  # send the body one byte at a time, this far apart


class FakeLLM:
    """The server's state: scripted replies in, recorded requests out."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        #: Answers when the queue is empty; default: a 500 naming the problem.
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- scripting ----------------------------------------------------------------------

    def reply(self, text: str, **kwargs: Any) -> FakeLLM:
        """Queue a successful reply with ``text`` as the assistant message."""
        self.replies.append(Reply(text=text, **kwargs))
        return self

    def error(self, status: int, *, retry_after: str | None = None, message: str = "") -> FakeLLM:
        """Queue an error reply (OpenAI's JSON error shape)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.replies.append(
            Reply(status=status, headers=headers, text=message or f"scripted {status}")
        )
        return self

    def hang(self) -> FakeLLM:
        """Queue a request that is never answered (the client must time out)."""
        self.replies.append(Reply(hang=True))
        return self

    # -- inspection ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def user_messages(self, index: int = -1) -> list[str]:
        """The contents of every message of request ``index`` (all roles)."""
        return [m["content"] for m in self.requests[index]["messages"]]

    def last_message(self, index: int = -1) -> str:
        """The last message's content of request ``index``."""
        return str(self.requests[index]["messages"][-1]["content"])

    def settings(self, base: Settings | None = None, **overrides: Any) -> Settings:
        """Settings whose LLM endpoint is this server (fast retries, short timeout)."""
        values: dict[str, Any] = {
            "llm_base_url": self.base_url,
            "llm_api_key": "test-key",
            "llm_model": MODEL,
            "llm_timeout_seconds": 5.0,
            "llm_max_retries": 2,
        }
        values.update(overrides)
        if base is not None:
            if isinstance(values.get("llm_api_key"), str):
                values["llm_api_key"] = SecretStr(values["llm_api_key"])
            return base.model_copy(update=values)
        return Settings(**values)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Reply(status=500, text="fake_llm: no scripted reply left")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are separate writes: without TCP_NODELAY each reply waited
            # for the client's delayed ACK (~40 ms), which swamped latency measurements.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str], trickle: float = 0.0
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if trickle:
                    for i in range(len(payload)):
                        if fake._stopping.wait(trickle):
                            return
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                    return
                self.wfile.write(payload)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
                    self._send(200, json.dumps(body).encode(), {})
                else:
                    self._send(404, b'{"error": {"message": "not found"}}', {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}', {})
                    return
                body = json.loads(raw or b"{}")
                reply = fake._next_reply(body)
                if reply.hang:
                    fake._stopping.wait(120)
                    return
                if reply.delay_seconds:
                    time.sleep(reply.delay_seconds)
                if reply.raw is not None:
                    self._send(reply.status, reply.raw, reply.headers, reply.trickle_seconds)
                elif reply.status >= 400:
                    error = {"error": {"message": reply.text, "type": "scripted", "code": None}}
                    self._send(reply.status, json.dumps(error).encode(), reply.headers)
                else:
                    payload = json.dumps(_completion(body, reply)).encode()
                    self._send(200, payload, reply.headers, reply.trickle_seconds)

        return Handler


def _completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    text = reply.text or ""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": reply.refusal},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": sum(len(str(m.get("content", ""))) for m in request["messages"]) // 4,
            "completion_tokens": len(text) // 4,
            "total_tokens": 0,
        },
    }


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running :class:`FakeLLM`; stopped after the test."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
