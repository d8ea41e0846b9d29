"""The Celery app of distributed mode: queues, routing and delivery guarantees.

The only module that imports ``celery``. Tasks are acknowledged late: a slot
takes its next message only when its task returns, so a worker holds no chunk
it cannot start. Redis keeps no copy of a delivered message (no ack emulation):
the chunk ledger (:mod:`engine.distributed.ledger`) sends a chunk lost with its
worker again when its lease runs out, makes a second delivery a no-op once the
chunk is done, and skips rows already scored.
``/v1/score`` requests travel on their own queue, which workers poll first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.worker.control import inspect_command

from engine.settings import Settings

CHUNK_QUEUE = "scorebox.chunks"
SCORE_QUEUE = "scorebox.score"
QUEUES = (SCORE_QUEUE, CHUNK_QUEUE)
#: Queues only runsc workers consume: the work of tenants pinned to gVisor (``runsc_only``).
RUNSC_SUFFIX = ".runsc"
CHUNK_TASK = "scorebox.chunk"
SCORE_TASK = "scorebox.score"


def queues_for(runtime: str) -> tuple[str, ...]:
    """The queues a worker whose sandboxes use ``runtime`` consumes, in polling order."""
    if runtime == "runsc":
        return (SCORE_QUEUE + RUNSC_SUFFIX, SCORE_QUEUE, CHUNK_QUEUE + RUNSC_SUFFIX, CHUNK_QUEUE)
    return QUEUES


def queue_of(queue: str, runsc_only: bool) -> str:
    """``queue``, or its runsc-only twin for a tenant pinned to runsc workers."""
    return queue + RUNSC_SUFFIX if runsc_only else queue


def create_celery(settings: Settings) -> Celery:
    """A Celery app on ``settings.broker_url`` (sending works without the tasks registered)."""
    app = Celery("scorebox", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_default_queue=CHUNK_QUEUE,
        task_routes={CHUNK_TASK: {"queue": CHUNK_QUEUE}, SCORE_TASK: {"queue": SCORE_QUEUE}},
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options={
            # No unacknowledged copy in Redis: writing one on delivery and clearing it on
            # the ack were two round trips between a slot's chunks, for a redelivery after
            # the visibility timeout that found the chunk re-queued by its lease long before
            # (a stale message). A warm shutdown still puts undone messages back.
            "ack_emulation": False,
            # poll queues in the order the worker lists them (scorebox.score first), not
            # round-robin: /v1/score is taken at the next free slot, ahead of chunks
            "queue_order_strategy": "priority",
            "socket_connect_timeout": 5,
        },
    )
    return app


def register_tasks(
    app: Celery,
    run_chunk: Callable[[dict[str, Any]], Any],
    run_score: Callable[[dict[str, Any]], Any],
    pools: Callable[[], dict[str, Any]],
) -> None:
    """Bind the worker's handlers to the task names and the ``scorebox_pools`` inspect command."""
    app.task(name=CHUNK_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)(
        run_chunk
    )
    app.task(name=SCORE_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)(
        run_score
    )

    @inspect_command()  # type: ignore[untyped-decorator]
    def scorebox_pools(state: Any) -> dict[str, Any]:
        """scorebox: this worker's warm sandbox pools and chunks in hand."""
        return pools()


def send(app: Celery, task: str, queue: str, message: dict[str, Any], **options: Any) -> None:
    """Publish ``message`` to ``task`` on ``queue`` (retrying a broken connection briefly)."""
    app.send_task(
        task,
        args=[message],
        queue=queue,
        retry=True,
        retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5},
        **options,
    )


def workers_seen(app: Celery, timeout_seconds: float = 2.0) -> dict[str, dict[str, Any]]:
    """Workers that answered ``ping``, with their Celery pool and scorebox's warm pools."""
    control = app.control
    pings = control.inspect(timeout=timeout_seconds).ping() or {}
    if not pings:
        return {}
    # the workers that answered ping are known: stop waiting once each has answered
    stats = control.inspect(timeout=timeout_seconds, limit=len(pings)).stats() or {}
    pools = (
        control.broadcast("scorebox_pools", reply=True, timeout=timeout_seconds, limit=len(pings))
        or []
    )
    extra: dict[str, Any] = {}
    for reply in pools:
        extra.update(reply)
    out: dict[str, dict[str, Any]] = {}
    for name in pings:
        pool = (stats.get(name) or {}).get("pool") or {}
        out[name] = {
            "celery_pool": str(pool.get("implementation", "?")).rsplit(".", 1)[-1].split(":")[0],
            "concurrency": pool.get("max-concurrency"),
            "scorebox": extra.get(name, {}),
        }
    return out
