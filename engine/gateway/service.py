"""The model gateway's host half: answers a container's model requests for one run.

The sandbox backend reads ``llm`` records from a container (see
:mod:`engine.sandbox.protocol`) and hands each to the :class:`GatewaySession` of the job's
context (:func:`current_session`), which queues it in the process's
:class:`~engine.gateway.dispatch.FairDispatcher`: a request waits in its tenant's queue,
holding no thread, and runs once its tenant has one of its ``gateway_tenant_concurrency``
slots free, the tenants with work taking turns, so one check's flood waits on its own
tenant's slots and never delays another tenant's call. When the job ends its queued
requests are dropped (see :meth:`GatewaySession.cancel`).

A session belongs to one run (or one ``/v1/score`` batch) of one tenant and answers
through the process's one :class:`~engine.llm.LLMClient` (the openai SDK's retries, the
tenant-scoped response cache, the :class:`~engine.llm.usage.UsageMeter` of the run),
within the tenant's ``llm_tokens_per_run`` quota: each call reserves its tokens in the
:class:`~engine.gateway.ledger.TokenLedger` before it goes upstream (its ``max_tokens``
clamped to what is left) and settles what it really used after.
"""

from __future__ import annotations

import contextvars
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from engine.errors import LLMError
from engine.gateway.dispatch import Call, FairDispatcher
from engine.gateway.ledger import (
    Ledger,
    Refusal,
    Reservation,
    TokenLedger,
    estimate_prompt_tokens,
)
from engine.gateway.providers import (
    ChatRequest,
    GatewayRequestError,
    ReplyMismatch,
    conform,
    parse_request,
    provider_of,
    render,
    render_error,
)
from engine.llm import Completion, LLMClient
from engine.llm.cache import cache_scope
from engine.llm.usage import UsageMeter, current_meter, metering
from engine.settings import Settings

#: HTTP status for a failing upstream: not one the clients' SDKs retry (the host already did).
UPSTREAM_FAILED = 424
#: HTTP status for a request the job's end (or the process's) cancelled before it ran.
CANCELLED_STATUS = 503
#: A reply frame's JSON document at most: the container's gateway takes no larger frame
#: (``MAX_REPLY_BYTES`` of ``engine/harness/gateway.py``); a larger reply is refused.
MAX_REPLY_BYTES = 1 << 20
#: The labels whose value keys a quota, first found wins: a run's id, a ``/v1/score`` batch's.
QUOTA_LABELS = ("scorebox.run", "scorebox.batch")


def gateway_total(llm_concurrency: int) -> int:
    """The checks' calls at once in a process: the LLM client's ``SCOREBOX_LLM_CONCURRENCY``
    slots less a quarter (at least one) kept for the judges, which share them."""
    return max(1, llm_concurrency - max(1, llm_concurrency // 4))


def quota_key(labels: Mapping[str, str]) -> str:
    """The ledger key of the work labelled ``labels``: its run, or its ``/v1/score`` batch
    (every check and chunk of a batch share it); a key of its own when neither is set."""
    for label in QUOTA_LABELS:
        if labels.get(label):
            return labels[label]
    return f"score-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class GatewayReply:
    """What the container's client gets, and what the host learns for the row."""

    status: int
    body: str
    served_by: str | None = None
    #: The upstream failed (down, unparseable): the row in flight becomes ``judge_error``.
    upstream_error: str | None = None


def resolve_model(requested: str | None, model_map: Mapping[str, str], default: str) -> str:
    """The operator's model serving a request for ``requested``."""
    if requested is not None and requested in model_map:
        return model_map[requested]
    return model_map.get("*", default)


class ModelGateway:
    """One per process: the LLM client, the model map, the fair dispatcher, per-run spend."""

    def __init__(
        self,
        llm: LLMClient,
        settings: Settings,
        quota_of: Callable[[str], int] | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.llm = llm
        self.settings = settings
        self.quota_of = quota_of or (lambda _tenant: settings.quota_llm_tokens_per_run)
        #: Per-run spend: this process's (default), or one shared by the workers.
        self.ledger: Ledger = ledger if ledger is not None else TokenLedger()
        self._lock = threading.Lock()
        # Threads run calls that hold a tenant's slot, never calls waiting for one: enough
        # for every container of the process at its bound, twice over for calls a finished
        # job left running upstream.
        self.dispatcher = FairDispatcher(
            threads=max(8, 2 * settings.max_parallel_jobs * settings.gateway_container_concurrency),
            per_tenant=settings.gateway_tenant_concurrency,
            total=gateway_total(settings.llm_concurrency),
        )
        self._ids = 0

    def close(self) -> None:
        self.dispatcher.close()

    def spent(self, run: str) -> int:
        """Tokens ``run`` has spent (settled calls)."""
        return self.ledger.spent(run)

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def session(self, tenant: str, run: str, meter: UsageMeter | None = None) -> GatewaySession:
        """A session for ``run`` of ``tenant``; its spend goes to ``meter`` (default: the
        enclosing :func:`~engine.llm.usage.metering` block's, so a run's ``llm_usage``
        includes what its checks spent)."""
        return GatewaySession(self, tenant, run, self.quota_of(tenant), meter or current_meter())


class GatewaySession:
    """One run's (or one ``/v1/score`` call's) use of the gateway."""

    def __init__(
        self, gateway: ModelGateway, tenant: str, run: str, quota: int, meter: UsageMeter | None
    ) -> None:
        self.gateway = gateway
        self.tenant = tenant
        self.run = run
        self.quota = quota
        self.meter = meter
        self.row_timeout_seconds = gateway.settings.gateway_row_timeout_seconds
        self.container_concurrency = gateway.settings.gateway_container_concurrency

    def submit(
        self, run: Callable[[], None], *, owner: object, cancelled: Callable[[str], None]
    ) -> None:
        """Run ``run`` (a call of :meth:`answer` and the reply's delivery) off the read loop,
        in this tenant's turn; ``cancelled`` answers it instead if ``owner`` is cancelled
        (:meth:`cancel`) before it ran."""
        self.gateway.dispatcher.submit(Call(self.tenant, owner, run, cancelled))

    def cancel(self, owner: object) -> int:
        """``owner``'s job ended: its queued requests are answered at once and never run;
        those already running finish upstream, unwaited for. How many were dropped."""
        return self.gateway.dispatcher.cancel(owner)

    def answer(self, method: str, path: str, body: str) -> GatewayReply:
        """The reply to one request from a check; never raises for anything the check sent."""
        try:
            request = parse_request(method, path, body)
        except GatewayRequestError as exc:
            return _error(None, exc.status, str(exc))
        if self.quota <= 0:
            return _error(
                request,
                403,
                "the model gateway is off for this tenant (its quota llm_tokens_per_run is 0): "
                "an operator turns it on with `scorebox tenant set-quota TENANT "
                "llm_tokens_per_run=N`",
            )
        held = self.gateway.ledger.reserve(
            self.run, self.quota, estimate_prompt_tokens(request.messages), request.max_tokens
        )
        if isinstance(held, Refusal):
            return _error(request, held.status, held.message)
        model = resolve_model(
            request.model, self.gateway.settings.llm_model_map, self.gateway.settings.llm_model
        )
        used = 0
        try:
            completion = self._complete(request, model, held)
            if not completion.cached:
                used = completion.usage.prompt_tokens + completion.usage.completion_tokens
        except LLMError as exc:
            return _error(
                request,
                UPSTREAM_FAILED,
                f"the model gateway's upstream failed: {exc}",
                upstream=True,
            )
        finally:
            self.gateway.ledger.settle(held, used)
        served_by = completion.model or model
        try:
            text = conform(request.expect, completion.text)
        except ReplyMismatch as exc:
            return _error(request, 422, str(exc), served_by=served_by)
        document = render(
            request, completion, text, served_by, int(time.time()), self.gateway.next_id()
        )
        return GatewayReply(200, json.dumps(document, ensure_ascii=False), served_by)

    def _complete(self, request: ChatRequest, model: str, held: Reservation) -> Completion:
        meter = self.meter if self.meter is not None else UsageMeter()
        with metering(meter), cache_scope(self.tenant):
            # The wrapped client records into the meter of this context: the run's.
            return self.gateway.llm.complete(
                request.messages,
                model=model,
                temperature=request.temperature,
                max_tokens=held.max_tokens,  # the check's, clamped to the quota's room
                response_format=request.response_format,
            )


def _error(
    request: ChatRequest | None,
    status: int,
    message: str,
    *,
    upstream: bool = False,
    served_by: str | None = None,
) -> GatewayReply:
    body = render_error(request.provider if request else None, status, message)
    return GatewayReply(status, json.dumps(body), served_by, message if upstream else None)


_SESSION: contextvars.ContextVar[GatewaySession | None] = contextvars.ContextVar(
    "scorebox_gateway_session", default=None
)


@contextmanager
def gateway_session(session: GatewaySession | None) -> Iterator[GatewaySession | None]:
    """Sandbox jobs started in this context answer their checks' model calls with ``session``."""
    token = _SESSION.set(session)
    try:
        yield session
    finally:
        _SESSION.reset(token)


def current_session() -> GatewaySession | None:
    """The session of the enclosing :func:`gateway_session`, if any."""
    return _SESSION.get()


def cancelled_reply(path: str, reason: str) -> GatewayReply:
    """The reply to a request dropped unrun: ``reason`` (its job ended)."""
    body = render_error(provider_of(path), CANCELLED_STATUS, reason)
    return GatewayReply(CANCELLED_STATUS, json.dumps(body))


def too_many_reply(path: str, bound: int) -> GatewayReply:
    """The reply to a request past the container's bound on requests in flight."""
    message = (
        f"more than {bound} model calls at once from one container (the operator's "
        "SCOREBOX_GATEWAY_CONTAINER_CONCURRENCY): wait for one to finish"
    )
    return GatewayReply(429, json.dumps(render_error(provider_of(path), 429, message)))


def oversized_reply(size: int) -> GatewayReply:
    """The reply to a call whose model reply is too large to relay (any client's shape)."""
    message = (
        f"the model's reply ({size} bytes) is over the gateway's limit of {MAX_REPLY_BYTES} "
        "bytes for one reply: ask for a shorter one (max_tokens)"
    )
    body = {
        "error": {"message": message, "type": "scorebox_gateway", "code": UPSTREAM_FAILED},
        "message": message,
    }
    return GatewayReply(UPSTREAM_FAILED, json.dumps(body))


def no_gateway_reply(path: str) -> GatewayReply:
    """The reply when the host has no model configured for checks."""
    message = (
        "this scorebox has no model for checks: an operator configures one with "
        "SCOREBOX_LLM_BASE_URL / SCOREBOX_LLM_API_KEY (the checks' gateway then serves it)"
    )
    body = render_error(provider_of(path), 403, message)
    return GatewayReply(403, json.dumps(body))
