"""scorebox model gateway, container side: an HTTP endpoint on the container's loopback.

Stdlib only; used by the harness parent (PID 1), never by a check's own process.

A check's model client (``OpenAI()``, ``cohere.Client()``, ``genai.Client()``, configured by
the image's environment) sends plain HTTP to ``127.0.0.1:PORT``. The parent accepts the
connection in its own select loop, reads one bounded request (no chunked bodies) and
turns it into an ``llm`` record on the job's result channel, framed with the job's nonce
like every other record. The host answers on the container's stdin with a reply frame
(``r<length>\\n<json>``), which the parent writes back as the HTTP response. Nothing
else leaves the container: the request's headers (and the placeholder key in them) are
dropped, only method, path and body travel.

At most ``max_inflight`` requests wait on the host at once, enforced where they come in:
while that many connections have a request open, no new connection is accepted (they wait
in the listen backlog), and a request that arrives on an open keep-alive connection past
the bound is held here, unsent, until a reply frees a slot. A request whose client hung up
still counts until the host's reply to it comes (the host counts it too). HTTP/1.1
keep-alive is honoured (one request at a time, no pipelining), so a client's second call
needs no new connection. Between jobs every open connection is closed, and those still in
the listen backlog too, so a check cannot leave a request behind for the next job.

Reply frames are taken whole: one over :data:`MAX_REPLY_BYTES` (the host never sends one)
is skipped to its last byte, so the frames after it are read as frames.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections import deque
from typing import Any

#: The loopback port the image's client environment points at (Dockerfile ``ENV``).
PORT = 8642
#: Request line and headers of one request.
MAX_HEADER_BYTES = 16 * 1024
#: A reply frame from the host larger than this is refused (the host caps replies too).
MAX_REPLY_BYTES = 1 << 20
DEFAULT_MAX_INFLIGHT = 4
#: Open connections (a client's keep-alive pool holds some idle between calls).
MAX_CONNECTIONS = 64
#: What :func:`read_reply` returns for a frame it skipped (too large, or not JSON).
SKIPPED = object()
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def error_body(status: int, message: str) -> bytes:
    """A JSON error body every client SDK shows (OpenAI's ``{"error": {"message"}}`` shape)."""
    return json.dumps(
        {
            "error": {"message": message, "type": "scorebox_gateway", "code": status},
            "message": message,
        }
    ).encode()


def http_response(
    status: int, body: bytes, content_type: str = "application/json", *, keep: bool = False
) -> bytes:
    """An HTTP/1.1 response, closing the connection unless ``keep``."""
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def header_map(lines: list[str]) -> dict[str, str]:
    """Header lines to a map of lower-cased names to stripped values (the last one wins)."""
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


class Conn:
    """One accepted connection: reading its request, then waiting for the host's reply."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.head: tuple[str, str, int] | None = None  # method, path, content length
        self.body_at = 0
        self.id: int | None = None  # set once forwarded to the host
        self.keep = False  # HTTP/1.1 keep-alive: the next request may follow on this connection
        #: Accepted, or its next request begun, and not answered yet: it takes a slot.
        self.busy = True
        self.held = False  # complete, waiting here for a slot (not yet sent to the host)

    def idle(self) -> bool:
        """Between requests (nothing read of the next one)."""
        return self.id is None and self.head is None and not self.buffer and not self.held


class Gateway:
    """The listener and its connections, driven by the parent's select loop."""

    def __init__(self) -> None:
        self.listener: socket.socket | None = None
        self.conns: dict[int, Conn] = {}  # by file descriptor
        #: Requests sent to the host and not answered, by id (None: its client hung up).
        self.waiting: dict[int, Conn | None] = {}
        #: Complete requests waiting here for one of the ``max_inflight`` slots, in order.
        self.held: deque[tuple[Conn, dict[str, Any]]] = deque()
        self.next_id = 0
        self.max_request_bytes = 64 * 1024
        self.max_inflight = DEFAULT_MAX_INFLIGHT

    def listen(self, port: int = PORT) -> None:
        """Bind the loopback listener (before any check runs, so no check can take the port)."""
        with contextlib.suppress(OSError):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
            listener.setblocking(False)
            self.listener = listener

    def begin(self, job: dict[str, Any]) -> None:
        """A new job: its bounds (request ids go on counting, so a stale reply never matches)."""
        self.max_request_bytes = int(job.get("max_request_bytes") or 64 * 1024)
        self.max_inflight = max(1, int(job.get("gateway_concurrency") or DEFAULT_MAX_INFLIGHT))

    def busy(self) -> int:
        """Requests open: accepted or begun, and not answered (held ones included), plus
        those sent whose client hung up."""
        gone = sum(1 for conn in self.waiting.values() if conn is None)
        return gone + sum(1 for conn in self.conns.values() if conn.busy)

    def fds(self) -> list[int]:
        """Descriptors the parent should wait on for reading."""
        out = [fd for fd, conn in self.conns.items() if conn.id is None and not conn.held]
        if (
            self.listener is not None
            and self.busy() < self.max_inflight
            and len(self.conns) < MAX_CONNECTIONS
        ):
            out.append(self.listener.fileno())
        return out

    def owns(self, fd: int) -> bool:
        """Whether ``fd`` is the listener or one of its connections."""
        return fd in self.conns or (self.listener is not None and fd == self.listener.fileno())

    def close_in_child(self) -> None:
        """In a forked check process: drop every gateway descriptor (the parent keeps them)."""
        for fd in [*self.conns, *([self.listener.fileno()] if self.listener else [])]:
            with contextlib.suppress(OSError):
                os.close(fd)

    def on_ready(self, fd: int) -> list[dict[str, Any]]:
        """Handle a readable descriptor; the requests now complete, as records for the host."""
        if self.listener is not None and fd == self.listener.fileno():
            # Only as many as may have a request open: the rest wait in the backlog.
            with contextlib.suppress(OSError):
                while len(self.conns) < MAX_CONNECTIONS and self.busy() < self.max_inflight:
                    sock, _ = self.listener.accept()
                    sock.setblocking(False)
                    self.conns[sock.fileno()] = Conn(sock)
            return []
        conn = self.conns.get(fd)
        if conn is None:
            return []
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            self.drop(conn)
            return []
        conn.buffer += data
        conn.busy = True
        return self.parse(conn)

    def parse(self, conn: Conn) -> list[dict[str, Any]]:
        """Read what ``conn`` has of its request; once whole, hold it for a slot (records
        for the host that go at once), or refuse it with an HTTP error."""
        head = conn.head or self.read_head(conn)
        if head is None:
            return []
        method, path, length = head
        if len(conn.buffer) - conn.body_at < length:
            return []
        record = self.take_body(conn, method, path, length)
        if record is None:
            return []
        conn.held = True
        self.held.append((conn, record))
        return self.release()

    def read_head(self, conn: Conn) -> tuple[str, str, int] | None:
        """The request line and headers, once whole, into ``conn.head`` (and returned):
        None while more is to come, or when refused (too large, malformed, no usable
        length)."""
        end = conn.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(conn.buffer) > MAX_HEADER_BYTES:
                self.refuse(conn, 413, "request headers too large")
            return None
        if end > MAX_HEADER_BYTES:
            self.refuse(conn, 413, "request headers too large")
            return None
        lines = bytes(conn.buffer[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            self.refuse(conn, 400, "malformed request line")
            return None
        headers = header_map(lines[1:])
        length = self.body_length(conn, headers)
        if length is None:
            return None
        conn.head = (parts[0], parts[1], length)
        conn.body_at = end + 4
        conn.keep = parts[2] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return conn.head

    def body_length(self, conn: Conn, headers: dict[str, str]) -> int | None:
        """The request body's length from its Content-Length, or None (refused) when it is
        chunked, unreadable or over the gateway's limit."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.refuse(conn, 411, "send the request with a Content-Length, not chunked")
            return None
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            self.refuse(conn, 400, "bad Content-Length")
            return None
        if length < 0 or length > self.max_request_bytes:
            self.refuse(
                conn,
                413,
                f"a model request of {length} bytes is over the gateway's limit of "
                f"{self.max_request_bytes} bytes (the operator's max_record_bytes)",
            )
            return None
        return length

    def take_body(self, conn: Conn, method: str, path: str, length: int) -> dict[str, Any] | None:
        """The whole body taken from the buffer into an ``llm`` record (its id set when it
        is sent), or None (refused) when it is not UTF-8 or the record is over the limit."""
        body = bytes(conn.buffer[conn.body_at : conn.body_at + length])
        if len(conn.buffer) > conn.body_at + length:
            conn.keep = False  # no pipelining: the rest is dropped with the connection
        conn.buffer.clear()
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            self.refuse(conn, 400, "the request body is not UTF-8")
            return None
        record = {"t": "llm", "id": self.next_id + 1, "method": method[:16], "path": path[:512]}
        record["body"] = text
        if len(json.dumps(record, ensure_ascii=False).encode()) > self.max_request_bytes:
            self.refuse(
                conn,
                413,
                f"a model request over the gateway's limit of {self.max_request_bytes} bytes "
                "(the operator's max_record_bytes)",
            )
            return None
        return record

    def release(self) -> list[dict[str, Any]]:
        """Held requests sent on, oldest first, while slots are free: records for the host."""
        out: list[dict[str, Any]] = []
        while self.held and len(self.waiting) < self.max_inflight:
            conn, record = self.held.popleft()
            conn.held = False
            if conn.sock.fileno() < 0:
                continue  # its client hung up while it was held
            self.next_id += 1
            conn.id = record["id"] = self.next_id
            self.waiting[conn.id] = conn
            out.append(record)
        return out

    def answer(self, reply: Any) -> list[dict[str, Any]]:
        """The host's reply to one request: write it back (and keep the connection open for
        the client's next request when it asked for keep-alive); the held requests its
        slot lets go, as records for the host."""
        if not isinstance(reply, dict) or type(reply.get("id")) is not int:
            return []
        if reply["id"] not in self.waiting:
            return []  # a reply from an earlier job
        conn = self.waiting.pop(reply["id"])
        if conn is not None:  # else: its client hung up; the slot is free all the same
            status = reply.get("status")
            body = reply.get("body")
            if type(status) is not int or not isinstance(body, str):
                self.send(conn, http_response(502, error_body(502, "malformed gateway reply")))
            else:
                content_type = reply.get("type") if isinstance(reply.get("type"), str) else None
                response = http_response(
                    status, body.encode(), content_type or "application/json", keep=conn.keep
                )
                self.send(conn, response, keep=conn.keep)
        return self.release()

    def refuse(self, conn: Conn, status: int, message: str) -> None:
        """Answer with an error the client SDKs show, and close the connection."""
        self.send(conn, http_response(status, error_body(status, message)))

    def send(self, conn: Conn, data: bytes, *, keep: bool = False) -> None:
        """Write a response (the check's end is local and reading), then close the
        connection or, with ``keep``, wait for its next request."""
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(2.0)
            conn.sock.sendall(data)
        except OSError:
            keep = False
        if not keep:
            self.drop(conn)
            return
        if conn.id is not None:
            self.waiting.pop(conn.id, None)
        conn.id, conn.head, conn.body_at, conn.busy = None, None, 0, False
        conn.sock.setblocking(False)

    def drop(self, conn: Conn) -> None:
        """Close a connection (a request it sent still counts until the host answers)."""
        if conn.id is not None and conn.id in self.waiting:
            self.waiting[conn.id] = None  # the host still counts it until its reply
        conn.id, conn.busy = None, False
        self.conns.pop(conn.sock.fileno(), None)
        with contextlib.suppress(OSError):
            conn.sock.close()

    def end(self) -> None:
        """The job is over: every request still open is answered 503; every connection closed."""
        for conn in list(self.conns.values()):
            if conn.idle():
                self.drop(conn)
            else:
                self.refuse(conn, 503, "the check's job ended before the model answered")
        self.conns.clear()
        self.waiting.clear()
        self.held.clear()
        # Connections still in the listen backlog were made during this job: closed unread,
        # so the next job never serves a request the last one left behind.
        if self.listener is not None:
            with contextlib.suppress(OSError):
                while True:
                    sock, _ = self.listener.accept()
                    sock.close()

    @property
    def inflight(self) -> int:
        """Requests sent to the host and not answered yet."""
        return len(self.waiting)


def read_reply(stdin: Any) -> Any:
    """One reply frame (``r<len>\\n<json>``) at the front of ``stdin``'s buffer, else None;
    :data:`SKIPPED` for a frame taken and thrown away (over :data:`MAX_REPLY_BYTES`, whose
    bytes are dropped as they come, counted in ``stdin.discard``; or not JSON).

    ``stdin`` is the harness's ``Reader``; a frame not yet complete stays in its buffer.
    Raises ValueError for a header that is not one (the framing itself is lost).
    """
    buffer = stdin.buffer
    if stdin.discard:
        taken = min(stdin.discard, len(buffer))
        del buffer[:taken]
        stdin.discard -= taken
        if stdin.discard:
            return None
    if not buffer.startswith(b"r"):
        return None
    newline = buffer.find(b"\n")
    if newline < 0:
        if len(buffer) > 32:
            raise ValueError("bad reply header")
        return None
    size = int(buffer[1:newline])
    if size < 0:
        raise ValueError(f"a reply of {size} bytes")
    if size > MAX_REPLY_BYTES:
        del buffer[: newline + 1]
        taken = min(size, len(buffer))
        del buffer[:taken]
        stdin.discard = size - taken
        return SKIPPED
    if len(buffer) < newline + 1 + size:
        return None
    body = bytes(buffer[newline + 1 : newline + 1 + size])
    del buffer[: newline + 1 + size]
    try:
        return json.loads(body)
    except ValueError:
        return SKIPPED
