"""Talking to a scorebox server from the CLI: options, an HTTP client, problem rendering."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    import httpx

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_SERVER = "http://127.0.0.1:8000"


def server_options(func: F) -> F:
    """``--server`` and ``--api-key`` (also from SCOREBOX_SERVER / SCOREBOX_API_KEY)."""
    func = click.option(
        "--api-key",
        envvar="SCOREBOX_API_KEY",
        help="API key (env SCOREBOX_API_KEY).",
    )(func)
    func = click.option(
        "--server",
        envvar="SCOREBOX_SERVER",
        help=f"Server URL (env SCOREBOX_SERVER; default {DEFAULT_SERVER}).",
    )(func)
    return func


class Remote:
    """A thin client of the HTTP API; errors become :class:`click.ClickException`."""

    def __init__(self, server: str | None, api_key: str | None, timeout: float = 120.0) -> None:
        if not api_key:
            raise click.UsageError(
                "no API key: pass --api-key or set SCOREBOX_API_KEY "
                "(an operator creates one with `scorebox tenant create NAME`)"
            )
        import httpx  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        self.server = (server or DEFAULT_SERVER).rstrip("/")
        self.client = httpx.Client(
            base_url=self.server,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
        )

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise click.ClickException(
                f"cannot reach the scorebox server at {self.server}: {exc} "
                "(start it with `scorebox serve`, or pass --server)"
            ) from exc
        if response.status_code >= 400:
            raise click.ClickException(describe_problem(response))
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()


def describe_problem(response: httpx.Response) -> str:
    """A problem+json reply as readable text."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code}: {body.get('detail') or body.get('title')}"]
    for error in body.get("errors") or []:
        where = f"line {error['line']}:{error.get('col')} " if error.get("line") else ""
        lines.append(f"  {where}[{error.get('code')}] {error.get('message')}")
    if response.headers.get("Retry-After"):
        lines.append(f"  retry after {response.headers['Retry-After']}s")
    return "\n".join(lines)


def with_remote(func: F) -> F:
    """Pass a :class:`Remote` built from ``--server``/``--api-key`` as ``remote``."""

    @server_options
    @functools.wraps(func)
    def wrapper(*args: Any, server: str | None, api_key: str | None, **kwargs: Any) -> Any:
        return func(*args, remote=Remote(server, api_key), **kwargs)

    return wrapper  # type: ignore[return-value]
