"""Prometheus metrics of the service, on a registry of its own (one per app)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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

    def watch(
        self,
        depth: Callable[[], int],
        pools: Callable[[], Mapping[str, int]],
        inflight: Callable[[], int],
    ) -> None:
        """Register the scrape-time gauges."""
        self.registry.register(_Callbacks(depth, pools, inflight))

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))
