"""``scorebox serve``: the HTTP API with in-process workers (the embedded default)."""

from __future__ import annotations

import gc

import click

from engine.errors import ConfigurationError, RuntimeUnavailableError
from engine.logs import configure_logging
from engine.settings import Settings


@click.command()
@click.option("--host", default=None, help="Address to bind (default: SCOREBOX_HOST or 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default: SCOREBOX_PORT or 8000).")
@click.option("--log-level", default="info", show_default=True)
def serve(host: str | None, port: int | None, log_level: str) -> None:
    """Run the scorebox service (API, durable runs, warm sandbox pool).

    With SCOREBOX_BROKER_URL set it is a stateless API node: runs go to `scorebox worker`
    hosts through the broker and it needs no Docker engine.
    """
    import uvicorn  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    from engine.app import create_app  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    updates = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    if updates:
        settings = settings.model_copy(update=updates)
    if settings.broker_url:
        from engine.distributed.preflight import check_distributed  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        try:
            check_distributed(settings)
        except ConfigurationError as exc:
            raise click.ClickException(str(exc)) from exc
    else:
        _check_runtime(settings)
    configure_logging(log_level, settings.log_format, settings.log_repeat_seconds)
    app = create_app(settings)
    # What start-up allocated (modules, the app, its routes) lives as long as the process:
    # moved out of the collector's generations, a full collection no longer walks it on
    # every busy minute of ingestion or scoring.
    gc.freeze()
    # log_config=None: uvicorn's lines go through engine.logs' format like every other
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        log_config=None,
    )


def _check_runtime(settings: Settings) -> None:
    """Refuse to start when SCOREBOX_RUNTIME names a runtime the Docker engine lacks."""
    from engine.sandbox.docker.containers import check_runtime  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        check_runtime(settings)
    except RuntimeUnavailableError as exc:
        raise click.ClickException(str(exc)) from exc
