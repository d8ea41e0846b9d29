"""Where a tenant's scores may be sent: the endpoint's rules and its address (no I/O but DNS).

A tenant names the URL and scorebox's server makes the request, so the endpoint is
checked like any address a tenant hands a server: ``http`` or ``https``, no credentials
in the URL (they go in the headers, which are kept secret), and an address on the public
internet. Loopback, private, link-local and other non-global addresses (the metadata
service, the database, Redis, the Docker API) are refused unless the operator allows the
host in ``SCOREBOX_OTLP_EXPORT_ALLOW_HOSTS`` (host names, or networks such as
``10.0.0.0/8``). The name is resolved on every send and the request goes to the address
that was checked, so a DNS answer that changes between the check and the connection
cannot move it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from engine.errors import InvalidRequestError

__all__ = ["Endpoint", "ExportTargetError", "check_headers", "parse_endpoint", "resolve"]

LOGS_PATH = "/v1/logs"
MAX_HEADERS = 20
MAX_HEADER_CHARS = 4096
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
#: headers scorebox sets itself: a tenant cannot replace them
_RESERVED = {"host", "content-type", "content-length", "content-encoding", "transfer-encoding"}

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ExportTargetError(InvalidRequestError):
    """The endpoint or its headers cannot be used; the message says what to change."""


@dataclass(frozen=True)
class Endpoint:
    """A checked endpoint: where the logs request goes."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"

    def url_for(self, address: IpAddress) -> str:
        """The URL with the checked address in place of the name."""
        host = f"[{address}]" if address.version == 6 else str(address)
        return f"{self.scheme}://{host}:{self.port}{self.path}"


def parse_endpoint(text: str) -> Endpoint:
    """The endpoint of ``text``: an OTLP/HTTP base URL (``/v1/logs`` is appended, as
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` has it) or the full logs URL."""
    if len(text) > 2000:
        raise ExportTargetError("endpoint: longer than 2,000 characters")
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise ExportTargetError(f"endpoint: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ExportTargetError(
            "endpoint: use an http:// or https:// URL, e.g. https://collector.example.com:4318"
        )
    if not parts.hostname:
        raise ExportTargetError("endpoint: the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise ExportTargetError(
            'endpoint: put credentials in `headers` (e.g. {"authorization": "Bearer …"}),'
            " not in the URL"
        )
    if parts.query or parts.fragment:
        raise ExportTargetError("endpoint: a query or fragment is not allowed")
    path = parts.path.rstrip("/")
    if not path.endswith(LOGS_PATH):
        path += LOGS_PATH
    default = 443 if parts.scheme == "https" else 80
    return Endpoint(parts.scheme, parts.hostname.lower(), port or default, path)


def check_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers to send, checked: names are HTTP tokens, values one line each."""
    if len(headers) > MAX_HEADERS:
        raise ExportTargetError(f"headers: at most {MAX_HEADERS}")
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not _TOKEN.match(name):
            raise ExportTargetError(f"headers: {name[:100]!r} is not a header name")
        if name.lower() in _RESERVED:
            raise ExportTargetError(f"headers: {name} is set by scorebox")
        if not isinstance(value, str) or len(value) > MAX_HEADER_CHARS:
            raise ExportTargetError(f"headers: {name}'s value must be text, at most 4,096 chars")
        if any(c in value for c in "\r\n\x00"):
            raise ExportTargetError(f"headers: {name}'s value must be one line")
        out[name.lower()] = value
    return out


def _allowed(host: str, address: IpAddress, allow: Sequence[str]) -> bool:
    for raw in allow:
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == host:
            return True
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def resolve(endpoint: Endpoint, allow: Sequence[str]) -> IpAddress:
    """The address to connect to: the first one the name resolves to, when every one of
    them is public or allowed by the operator; :class:`ExportTargetError` otherwise."""
    try:
        infos = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ExportTargetError(f"endpoint: {endpoint.host} does not resolve ({exc})") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not address.is_global and not _allowed(endpoint.host, address, allow):
            raise ExportTargetError(
                f"endpoint: {endpoint.host} is a non-public address; scores are sent to"
                " public addresses only, unless the operator allows this host in"
                " SCOREBOX_OTLP_EXPORT_ALLOW_HOSTS"
            )
        addresses.append(address)
    if not addresses:
        raise ExportTargetError(f"endpoint: {endpoint.host} does not resolve")
    return addresses[0]
