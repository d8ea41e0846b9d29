"""``scorebox serve``: the HTTP API with in-process workers (the embedded default)."""

from __future__ import annotations

import click

from engine.settings import Settings


@click.command()
@click.option("--host", default=None, help="Address to bind (default: SCOREBOX_HOST or 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default: SCOREBOX_PORT or 8000).")
@click.option("--log-level", default="info", show_default=True)
def serve(host: str | None, port: int | None, log_level: str) -> None:
    """Run the scorebox service (API, durable runs, warm sandbox pool)."""
    import uvicorn

    from engine.api import create_app

    settings = Settings()
    updates = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    if updates:
        settings = settings.model_copy(update=updates)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=log_level)
