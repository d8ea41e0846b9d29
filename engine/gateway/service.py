"""The model gateway's host half: answers a container's model requests for one run.

The sandbox backend reads ``llm`` records from a container (see
:mod:`engine.sandbox.protocol`) and hands each to the :class:`GatewaySession` of the job's
context (:func:`current_session`), on a worker thread so the container's other records keep
flowing. A session belongs to one run (or one ``/v1/score`` call) of one tenant and answers
through the process's one :class:`~engine.llm.LLMClient` (the openai SDK's retries, the
tenant-scoped response cache, the :class:`~engine.llm.usage.UsageMeter` of the run),
within the tenant's ``llm_tokens_per_run`` quota and at most
``gateway_tenant_concurrency`` calls per tenant at once, so one check's flood waits on its
own tenant's slots and never takes the slots other tenants' judges use.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from engine.errors import LLMError
from engine.gateway.translate import (
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
#: Runs whose spend is remembered in this process (oldest forgotten first).
MAX_LEDGER_RUNS = 4096


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
    """One per process: the LLM client, the model map, per-tenant slots, per-run spend."""

    def __init__(
        self,
        llm: LLMClient,
        settings: Settings,
        quota_of: Callable[[str], int] | None = None,
    ) -> None:
        self.llm = llm
        self.settings = settings
        self.quota_of = quota_of or (lambda _tenant: settings.quota_llm_tokens_per_run)
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._spent: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        # Every request the containers of this process may have in flight at once gets a
        # thread (twice over, for calls a finished job left behind), so a request never waits
        # for a thread behind another tenant's: it waits only for its own tenant's slot.
        self._pool = ThreadPoolExecutor(
            max_workers=max(
                8, 2 * settings.max_parallel_jobs * settings.gateway_container_concurrency
            ),
            thread_name_prefix="scorebox-gateway",
        )
        self._ids = 0

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def submit(self, fn: Callable[[], None]) -> None:
        self._pool.submit(fn)

    def tenant_slots(self, tenant: str) -> threading.BoundedSemaphore:
        with self._lock:
            slots = self._slots.get(tenant)
            if slots is None:
                slots = self._slots[tenant] = threading.BoundedSemaphore(
                    self.settings.gateway_tenant_concurrency
                )
            return slots

    def spent(self, run: str) -> int:
        with self._lock:
            return self._spent.get(run, 0)

    def spend(self, run: str, tokens: int) -> None:
        with self._lock:
            self._spent[run] = self._spent.get(run, 0) + tokens
            self._spent.move_to_end(run)
            while len(self._spent) > MAX_LEDGER_RUNS:
                self._spent.popitem(last=False)

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

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` (a call of :meth:`answer` and the reply's delivery) off the read loop."""
        self.gateway.submit(fn)

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
        spent = self.gateway.spent(self.run)
        if spent >= self.quota:
            return _error(
                request,
                403,
                f"this run has spent its quota llm_tokens_per_run of {self.quota} model tokens "
                f"({spent} used): an operator raises it with `scorebox tenant set-quota TENANT "
                "llm_tokens_per_run=N`",
            )
        model = resolve_model(
            request.model, self.gateway.settings.llm_model_map, self.gateway.settings.llm_model
        )
        try:
            completion = self._complete(request, model)
        except LLMError as exc:
            return _error(
                request,
                UPSTREAM_FAILED,
                f"the model gateway's upstream failed: {exc}",
                upstream=True,
            )
        if not completion.cached:
            self.gateway.spend(
                self.run, completion.usage.prompt_tokens + completion.usage.completion_tokens
            )
        served_by = completion.model or model
        try:
            text = conform(request.expect, completion.text)
        except ReplyMismatch as exc:
            return _error(request, 422, str(exc), served_by=served_by)
        document = render(
            request, completion, text, served_by, int(time.time()), self.gateway.next_id()
        )
        return GatewayReply(200, json.dumps(document, ensure_ascii=False), served_by)

    def _complete(self, request: ChatRequest, model: str) -> Completion:
        meter = self.meter if self.meter is not None else UsageMeter()
        with self.gateway.tenant_slots(self.tenant), metering(meter), cache_scope(self.tenant):
            # The wrapped client records into the meter of this context: the run's.
            return self.gateway.llm.complete(
                request.messages,
                model=model,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
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


def no_gateway_reply(path: str) -> GatewayReply:
    """The reply when the host has no model configured for checks."""
    message = (
        "this scorebox has no model for checks: an operator configures one with "
        "SCOREBOX_LLM_BASE_URL / SCOREBOX_LLM_API_KEY (the checks' gateway then serves it)"
    )
    body = render_error(provider_of(path), 403, message)
    return GatewayReply(403, json.dumps(body))
