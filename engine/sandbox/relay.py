"""The model-call relay: a job's gateway requests answered back into its channel.

The harness relays a check's model calls as ``llm`` records; the host answers each with a
reply frame on the harness's stdin through the job's gateway session, and remembers per row
which model served it and whether the upstream failed. The session is given, never looked
up: whoever composes the job (:func:`engine.sandbox.jobstream.execute_on`) passes it in.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from engine.contract import Status
from engine.gateway.service import (
    MAX_REPLY_BYTES,
    GatewaySession,
    cancelled_reply,
    no_gateway_reply,
    oversized_reply,
    too_many_reply,
)
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.protocol import LLMRequestRecord, RowRecord, encode_reply

log = logging.getLogger(__name__)


class GatewayLink:
    """One job's model calls: replies written back to the container while the job lasts,
    and what the host learned per row (the model that served it, an upstream failure).

    At most the session's ``container_concurrency`` requests are in flight (the harness
    holds the rest; one past the bound is answered 429 here); a reply frame over
    :data:`~engine.gateway.service.MAX_REPLY_BYTES` is never sent (the call gets an
    error instead, and the channel stays whole); when the job ends its queued requests
    are dropped (:meth:`close`). ``send`` writes bytes to the harness's stdin."""

    def __init__(self, send: Callable[[bytes], None], session: GatewaySession | None) -> None:
        self.send = send
        self.session = session
        self.lock = threading.Lock()
        self.open = True
        self.inflight = 0
        self.failures: dict[int, str] = {}
        self.models: dict[int, set[str]] = {}

    def request(self, record: LLMRequestRecord, row: int) -> None:
        """Answer ``record`` (made while ``row`` was in flight) off the caller's thread."""
        session = self.session
        if session is None:
            reply = no_gateway_reply(record.path)
            self.deliver(record.id, row, reply.status, reply.body, None, None, counted=False)
            return
        with self.lock:
            over = self.inflight >= session.container_concurrency
            if not over:
                self.inflight += 1
        if over:
            reply = too_many_reply(record.path, session.container_concurrency)
            self.deliver(record.id, row, reply.status, reply.body, None, None, counted=False)
            return

        def answer() -> None:
            try:
                reply = session.answer(record.method, record.path, record.body)
            except Exception as exc:  # a bug here must still answer the check
                log.exception("the model gateway failed")
                self.deliver(record.id, row, 500, '{"message": "gateway error"}', None, str(exc))
                return
            self.deliver(
                record.id, row, reply.status, reply.body, reply.served_by, reply.upstream_error
            )

        def cancelled(reason: str) -> None:
            reply = cancelled_reply(record.path, reason)
            self.deliver(record.id, row, reply.status, reply.body, None, None)

        session.submit(answer, owner=self, cancelled=cancelled)

    def deliver(
        self,
        request_id: int,
        row: int,
        status: int,
        body: str,
        served_by: str | None,
        failure: str | None,
        *,
        counted: bool = True,
    ) -> None:
        """Send one reply frame (unless the job is over) and note what it says of ``row``."""
        frame = encode_reply(request_id, status, body)
        if len(frame) - frame.index(b"\n") - 1 > MAX_REPLY_BYTES:
            # The harness could not take it whole: that call gets an error, the row and
            # the job's channel carry on.
            log.warning("a model reply of %d bytes was over the gateway's limit", len(frame))
            reply = oversized_reply(len(body.encode()))
            frame = encode_reply(request_id, reply.status, reply.body)
        with self.lock:
            if counted:
                self.inflight = max(0, self.inflight - 1)
            if failure is not None:
                self.failures.setdefault(row, failure)
            if served_by:
                self.models.setdefault(row, set()).add(served_by)
            if not self.open:
                return  # the job is over: the container (or its next job) never sees it
            with contextlib.suppress(OSError):
                self.send(frame)

    def outcome(self, record: RowRecord) -> RowRecord:
        """``record`` with the host's knowledge: the model that served it (a container's
        own ``served_by`` is always replaced) and ``judge_error`` when the upstream failed."""
        with self.lock:
            failure = self.failures.pop(record.i, None)
            models = self.models.pop(record.i, None)
        update: dict[str, Any] = {"served_by": ", ".join(sorted(models)) if models else None}
        if failure is not None:
            update.update(
                status=Status.JUDGE_ERROR,
                score=None,
                output_type=None,
                explanation=None,
                error=short_error(failure, record.error),
            )
        return record.model_copy(update=update)

    def outcome_block(self, record: BlockRecord) -> None:
        """:meth:`outcome` for the rows of a block, in place."""
        block = record.block
        with self.lock:
            rows = range(record.i, record.i + record.n)
            failures = {i: self.failures.pop(i) for i in list(self.failures) if i in rows}
            models = {i: self.models.pop(i) for i in list(self.models) if i in rows}
        for i, served in models.items():
            block.served_by[i - record.i] = ", ".join(sorted(served))
        for i, failure in failures.items():
            k = i - record.i
            extra = block.extras.get(k)
            block.set_status(
                k, Status.JUDGE_ERROR, short_error(failure, extra.error if extra else None)
            )

    def close(self) -> None:
        """The job ended: no reply reaches the container any more, and its requests still
        queued for a slot are dropped (those running upstream are not waited for)."""
        with self.lock:
            self.open = False
        if self.session is not None:
            self.session.cancel(self)


def short_error(failure: str, check_error: str | None) -> str:
    """An upstream failure as a row's error, with the check's own error after it, bounded."""
    text = failure if check_error is None else f"{failure} (the check: {check_error})"
    return text if len(text) <= 4000 else text[:3997] + "..."
