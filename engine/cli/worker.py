"""``scorebox worker``: a Celery worker scoring chunks on this host's sandbox (distributed mode)."""

from __future__ import annotations

import os
import socket

import click

from engine.errors import ConfigurationError, StorageError
from engine.logs import configure_logging
from engine.settings import Settings


@click.command()
@click.option(
    "--concurrency",
    "-c",
    type=int,
    default=None,
    help="Chunks scored at once (default: SCOREBOX_MAX_PARALLEL_JOBS, the host's cores).",
)
@click.option(
    "--queues",
    "-Q",
    default=None,
    help="Comma-separated queues to consume (default: scorebox.score,scorebox.chunks; a runsc "
    "worker also takes the runsc-only tenants' scorebox.score.runsc,scorebox.chunks.runsc).",
)
@click.option("--name", "-n", default=None, help="Worker node name (default: scorebox@HOST-PID).")
@click.option("--log-level", default="info", show_default=True)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve this worker's Prometheus metrics on this port (docs/operating/monitoring.md).",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="Address of --metrics-port (0.0.0.0 for a Prometheus on another host).",
)
def worker(
    concurrency: int | None,
    queues: str | None,
    name: str | None,
    log_level: str,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Score runs and /v1/score requests from the broker on this host's Docker engine.

    Needs SCOREBOX_BROKER_URL and SCOREBOX_DATABASE_URL (PostgreSQL), nothing else from the
    API nodes. It keeps its own warm sandbox pool.
    """
    from engine.distributed.celery_app import create_celery, queues_for, register_tasks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.distributed.preflight import check_distributed  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.distributed.worker import WorkerRuntime  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.sandbox.docker.containers import check_runtime  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.storage.database import check_schema_at_start, create_db_engine  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    if not settings.broker_url:
        raise click.ClickException(
            "scorebox worker needs a broker: set SCOREBOX_BROKER_URL=redis://HOST:6379/0 "
            "(and SCOREBOX_DATABASE_URL to the PostgreSQL the API nodes use)"
        )
    try:
        check_distributed(settings)
        check_runtime(settings)
        # a worker of another version than the schema would write what the API misreads
        check_schema_at_start(create_db_engine(settings.effective_database_url))
    except (ConfigurationError, StorageError) as exc:
        raise click.ClickException(str(exc)) from exc
    configure_logging(log_level, settings.log_format, settings.log_repeat_seconds)
    threads = concurrency or settings.max_parallel_jobs
    app = create_celery(settings)
    # Celery's lines in engine.logs' format too: it neither replaces the root logger's
    # handlers nor turns stderr into a logger (engine.logs writes to stderr)
    app.conf.worker_hijack_root_logger = False
    app.conf.worker_redirect_stdouts = False
    runtime = WorkerRuntime(settings, app)
    runtime.concurrency = threads
    register_tasks(app, runtime.run_chunk, runtime.run_score, runtime.pools)
    runtime.warm()
    if metrics_port is not None:
        runtime.serve_metrics(metrics_host, metrics_port)
    node = name or f"scorebox@{socket.gethostname()}-{os.getpid()}"
    argv = [
        "worker",
        "--pool=threads",
        f"--concurrency={threads}",
        f"--queues={queues or ','.join(queues_for(runtime.runtime))}",
        f"--hostname={node}",
        f"--loglevel={log_level.upper()}",
        "--without-gossip",
        "--without-mingle",
    ]
    try:
        app.worker_main(argv)
    finally:
        runtime.close()
