"""Prometheus metrics of the service, on a registry of its own (one per app)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Callbacks:
    """Gauges read at scrape time."""

    def __init__(
        self,
        depth: Callable[[], int],
        pools: Callable[[], Mapping[str, int]],
        inflight: Callable[[], int],
    ) -> None:
        self._depth = depth
        self._pools = pools
        self._inflight = inflight

    def collect(self) -> Iterator[Any]:
        yield GaugeMetricFamily(
            "scorebox_queue_depth", "Work items waiting for a worker.", value=self._depth()
        )
        yield GaugeMetricFamily(
            "scorebox_jobs_in_flight", "Work items being scored.", value=self._inflight()
        )
        pool = GaugeMetricFamily(
            "scorebox_pool_size", "Warm sandbox containers per profile.", labels=["profile"]
        )
        for profile, size in self._pools().items():
            pool.add_metric([profile[:200]], size)
        yield pool


@dataclass(frozen=True)
class ClusterView:
    """What an API node of distributed mode reads at scrape time (ledger and broker)."""

    #: Chunks per (tenant id, state) for the states pending, queued and running.
    chunks: Mapping[tuple[str, str], int]
    #: Age of the chunk that has waited longest in the broker (state queued); 0 when none.
    oldest_queued_seconds: float
    #: Workers that announced themselves lately, per sandbox runtime; None: broker unreachable.
    workers: Mapping[str, int] | None


class _ClusterCallbacks:
    """Scrape-time gauges of distributed mode (on API nodes)."""

    def __init__(self, view: Callable[[], ClusterView | None]) -> None:
        self._view = view

    def collect(self) -> Iterator[Any]:
        view = self._view()
        if view is None:  # the database is away: no figures rather than wrong ones
            return
        chunks = GaugeMetricFamily(
            "scorebox_tenant_chunks",
            "Chunks of active runs per tenant and state (pending: not yet sent to the broker; "
            "queued: in the broker; running: on a worker).",
            labels=["tenant", "state"],
        )
        for (tenant, state), n in sorted(view.chunks.items()):
            chunks.add_metric([tenant, state], n)
        yield chunks
        yield GaugeMetricFamily(
            "scorebox_oldest_queued_chunk_age_seconds",
            "How long the chunk waiting longest in the broker has waited (0: none waiting).",
            value=view.oldest_queued_seconds,
        )
        if view.workers is not None:
            workers = GaugeMetricFamily(
                "scorebox_workers_seen",
                "Workers that announced themselves in the last 30 s, per sandbox runtime.",
                labels=["runtime"],
            )
            for runtime, n in sorted(view.workers.items()):
                workers.add_metric([runtime], n)
            yield workers


class _WorkerCallbacks:
    """Scrape-time gauges of one ``scorebox worker``."""

    def __init__(self, in_hand: Callable[[], int], pools: Callable[[], Mapping[str, int]]) -> None:
        self._in_hand = in_hand
        self._pools = pools

    def collect(self) -> Iterator[Any]:
        yield GaugeMetricFamily(
            "scorebox_worker_chunks_in_hand",
            "Chunks this worker is scoring now.",
            value=self._in_hand(),
        )
        pool = GaugeMetricFamily(
            "scorebox_pool_size", "Warm sandbox containers per profile.", labels=["profile"]
        )
        for profile, size in self._pools().items():
            pool.add_metric([profile[:200]], size)
        yield pool


class Metrics:
    """Counters and histograms the runs service updates."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.jobs = Counter(
            "scorebox_jobs",
            "Sandbox work items run, by kind and outcome.",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.rows = Counter(
            "scorebox_rows_scored",
            "Row results produced, by status.",
            ["status"],
            registry=self.registry,
        )
        self.runs = Counter(
            "scorebox_runs", "Runs that reached a final status.", ["status"], registry=self.registry
        )
        self.job_seconds = Histogram(
            "scorebox_job_seconds",
            "Wall clock of one work item.",
            ["kind"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.score_seconds = Histogram(
            "scorebox_score_request_seconds",
            "Wall clock of POST /v1/score (answered or refused).",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.score_requests = Counter(
            "scorebox_score_requests",
            "Synchronous scoring requests (/v1/score, the generator's self-tests) by outcome: "
            "ok, error, no_worker_free, tenant_busy, broker_unreachable.",
            ["outcome"],
            registry=self.registry,
        )

        self.broker_restarts = Counter(
            "scorebox_broker_restarts",
            "Times this node found the broker had lost the chunks queued in it (restart "
            "without persistence, flush) and sent them again.",
            registry=self.registry,
        )
        self.chunks_requeued = Counter(
            "scorebox_chunks_requeued",
            "Chunks made pending again, by reason: lease_expired, broker_restarted, send_failed.",
            ["reason"],
            registry=self.registry,
        )

        self.http_requests = Counter(
            "scorebox_http_requests",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_seconds = Histogram(
            "scorebox_http_request_seconds",
            "Wall clock of HTTP requests, by method and route template.",
            ["method", "route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )

    def watch(
        self,
        depth: Callable[[], int],
        pools: Callable[[], Mapping[str, int]],
        inflight: Callable[[], int],
    ) -> None:
        """Register the scrape-time gauges."""
        self.registry.register(_Callbacks(depth, pools, inflight))

    def watch_cluster(self, view: Callable[[], ClusterView | None]) -> None:
        """Register distributed mode's gauges (an API node)."""
        self.registry.register(_ClusterCallbacks(view))

    def watch_worker(
        self, in_hand: Callable[[], int], pools: Callable[[], Mapping[str, int]]
    ) -> None:
        """Register a worker's gauges."""
        self.registry.register(_WorkerCallbacks(in_hand, pools))

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))
