"""Distributed mode: stateless API nodes and sandbox workers on Celery, Redis and PostgreSQL.

Set ``SCOREBOX_BROKER_URL`` to turn it on (docs/deploy.md). The pieces:

- :mod:`engine.distributed.preflight`: refuses SQLite or an unreachable broker;
- :mod:`engine.distributed.ledger`: the chunk ledger in PostgreSQL, fair dispatch, leases;
- :mod:`engine.distributed.celery_app`: the Celery app and queues (the only ``import celery``);
- :mod:`engine.distributed.replies`: the reply channel of ``/v1/score`` (Redis lists);
- :mod:`engine.distributed.celery_dispatch`: the API node's dispatch of runs and requests (no
  sandbox work here);
- :mod:`engine.distributed.worker`: ``scorebox worker``'s runtime (its own warm pool).

Below the queue both modes run :func:`engine.runs.work.execute_chunk` and
:func:`engine.runs.work.score_batch` on plain-data units.
"""
