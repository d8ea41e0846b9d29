"""The metered model gateway: checks in the sandbox call the operator's model.

:mod:`engine.gateway.providers` is the pure half (each client's HTTP shape <-> one chat
request, one module per provider); :mod:`engine.gateway.service` the host half (quota,
cache, meter, model map, per-tenant slots). The container half is
:mod:`engine.harness.gateway`.
"""

from __future__ import annotations

from engine.gateway.providers import ChatRequest, GatewayRequestError, Provider, parse_request
from engine.gateway.service import (
    GatewayReply,
    GatewaySession,
    ModelGateway,
    current_session,
    gateway_session,
    resolve_model,
)

__all__ = [
    "ChatRequest",
    "GatewayReply",
    "GatewayRequestError",
    "GatewaySession",
    "ModelGateway",
    "Provider",
    "current_session",
    "gateway_session",
    "parse_request",
    "resolve_model",
]
