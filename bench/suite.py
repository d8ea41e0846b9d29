"""Every measurement of ``python -m bench``, in one process, in a fixed order."""

from __future__ import annotations

import atexit
import os
import platform
import shutil
import statistics
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import workload
from bench.measure import Figure, load_average

LATENCY = "latency"
THROUGHPUT = "throughput"
RUNTIMES = "runtimes"
DISTRIBUTED = "distributed"
SERVICE = "service"

IN_PROCESS = "in-process loop"
REUSE_CHECK = "scorebox REUSE=check"
SCORE_TABLE = "scorebox score_table"
REUSE_NEVER = "scorebox REUSE=never"
EPICBOX_BATCH = "epicbox, one call"
LLM_SANDBOX_BATCH = "llm-sandbox, one run"
SERVICE_RUN = "POST /v1/runs, trivial check"

LAT_IN_PROCESS = "in-process call"
LAT_RUN_CHECK = "engine.run_check, warm"
LAT_SCORE = "POST /v1/score, warm (HTTP)"
LAT_SCORE_CONCURRENT = "POST /v1/score, 8 concurrent clients"
LAT_ECHO = "bare FastAPI POST /echo (HTTP, same uvicorn: the floor)"
LAT_HEALTHZ = "GET /healthz (HTTP)"
LAT_SCORE_BUILTIN = "POST /v1/score, built-in is_json (HTTP)"
LAT_FRESH = "fresh hardened container per call"
LAT_EPICBOX = "epicbox 1.1.0, container per call"
LAT_LLM_SANDBOX = "llm-sandbox 0.3.46, warm session"
LAT_GATEWAY = "model gateway: a check's call to its reply (openai SDK)"
LAT_GATEWAY_DIRECT = "direct HTTP to the same scripted server (openai SDK, host)"


@dataclass
class Config:
    """What to measure and how often (``python -m bench --help`` sets these)."""

    calls: int = 200
    sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    kinds: tuple[str, ...] = ("trivial", "realistic")
    clients: int = 8
    per_client: int = 50
    peers: bool = True
    runsc: str = "auto"  # auto: when Docker offers it; yes: required; no: skipped
    runsc_calls: int = 50
    runsc_rows: int = 100_000
    distributed: bool = True  # bench_distributed's table: PostgreSQL, Redis, workers
    distributed_rows: int = 100_000
    distributed_requests: int = 60
    http: bool = True
    service_rows: int = 100_000  # one run through POST /v1/runs (needs http)
    never_max_rows: int | None = None  # REUSE=never is skipped above this many rows
    profile: bool = True  # a sampling profile of scorebox's host side on the trivial check
    online: bool = True  # OTLP ingestion, online scoring's freshness and backfill
    ingest_batches: int = 200  # batches of 512 spans through POST /v1/traces
    online_rate: int = 200  # spans per second for the freshness figure
    online_seconds: int = 30
    strict: bool = False  # raise on the first failed measurement (tests) instead of noting it
    repeats_override: int | None = None

    def repeats(self, size: int) -> int:
        """Repeats of one throughput figure: more for small sizes, one for a million rows."""
        if self.repeats_override is not None:
            return self.repeats_override
        if size <= 10_000:
            return 5
        if size <= 100_000:
            return 3
        return 1


QUICK = Config(
    distributed=False,
    calls=30,
    sizes=(1_000, 10_000),
    per_client=15,
    runsc_calls=10,
    runsc_rows=10_000,
    distributed_rows=5_000,
    distributed_requests=20,
    service_rows=10_000,
    repeats_override=2,
    ingest_batches=20,
    online_rate=50,
    online_seconds=5,
)


@dataclass
class Results:
    """Figures, failures and the conditions they were measured under."""

    config: Config
    figures: list[Figure] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    distributed: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    online: dict[str, Any] = field(default_factory=dict)
    #: The run before this one (its ``latest.json``: ``machine`` and ``figures``), if any.
    previous: dict[str, Any] | None = None

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def find(self, section: str, name: str, **extra: Any) -> Figure | None:
        for figure in self.figures:
            if (
                figure.section == section
                and figure.name == name
                and all(figure.extra.get(k) == v for k, v in extra.items())
            ):
                return figure
        return None


class Bench:
    """Runs the suite, recording each figure or why it could not be measured."""

    def __init__(self, config: Config, log: Callable[[str], None] = print) -> None:
        self.config = config
        self.results = Results(config)
        self.log = log

    def attempt(self, label: str, fn: Callable[[], None]) -> None:
        from bench.scorebox_side import BenchError

        self.log(f"bench: {label} ...")
        started = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            if self.config.strict:
                raise
            self.results.failures[label] = f"{type(exc).__name__}: {exc}"[:600]
            trace = "" if isinstance(exc, BenchError) else "\n" + traceback.format_exc(limit=4)
            self.log(f"bench: {label} FAILED: {exc}{trace}")
            return
        self.log(f"bench: {label} done in {time.perf_counter() - started:.1f} s")

    # -- the run -------------------------------------------------------------------------

    def run(self) -> Results:
        from bench import scorebox_side as sb

        self.results.machine = machine_facts()
        self.results.machine["load_start"] = load_average()
        # after engine's own exit hooks (registered later, so run earlier): what is left
        atexit.register(sb.remove_own_containers)
        started = time.perf_counter()
        sections = [self.latency_section, self.throughput_section, self.runtimes_section]
        if self.config.http:
            sections.append(lambda: self.attempt("service path", self.service_section))
        if self.config.distributed:
            sections.append(lambda: self.attempt("distributed", self.distributed_section))
        if self.config.online:
            sections.append(lambda: self.attempt("OTLP ingestion", self.ingest_section))
            sections.append(lambda: self.attempt("online scoring", self.online_section))
        if self.config.profile:
            sections.append(lambda: self.attempt("host-side profile", self.profile_section))
        try:
            for section in sections:
                section()
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: keep what was measured, say the rest was not
            self.results.failures["the rest of the run"] = "interrupted"
            self.log("bench: interrupted; writing what was measured")
        self.results.machine["load_end"] = load_average()
        self.results.machine["seconds"] = time.perf_counter() - started
        return self.results

    def latency_section(self) -> None:
        from bench import http_side, peers
        from bench import scorebox_side as sb

        cfg = self.config
        add = self.results.add

        def in_process() -> None:
            add(Figure(LATENCY, LAT_IN_PROCESS, "ms", "latency", sb.in_process_latency(cfg.calls)))

        def run_check() -> None:
            samples = sb.run_check_latency(cfg.calls)
            add(Figure(LATENCY, LAT_RUN_CHECK, "ms", "latency", samples))

        def score() -> None:
            with (
                http_side.EchoServer() as echo,
                http_side.Server(concurrent_jobs=cfg.clients) as server,
            ):
                lines = http_side.sequential_latencies(echo, server, cfg.calls)
                add(Figure(LATENCY, LAT_ECHO, "ms", "latency", lines[http_side.ECHO]))
                add(Figure(LATENCY, LAT_HEALTHZ, "ms", "latency", lines[http_side.HEALTHZ]))
                add(Figure(LATENCY, LAT_SCORE_BUILTIN, "ms", "latency", lines[http_side.BUILTIN]))
                add(Figure(LATENCY, LAT_SCORE, "ms", "latency", lines[http_side.CODE]))
                rate, each = http_side.concurrent_score(server, cfg.clients, cfg.per_client)
                add(
                    Figure(
                        LATENCY,
                        LAT_SCORE_CONCURRENT,
                        "ms",
                        "latency",
                        each,
                        {"rate_per_s": rate, "clients": cfg.clients},
                    )
                )

        def fresh() -> None:
            settings = sb.make_settings(pool_size=0, **sb.reuse_never())
            samples = sb.runner_latency(settings, cfg.calls, warmup=1)
            add(Figure(LATENCY, LAT_FRESH, "ms", "latency", samples))

        self.attempt("in-process call", in_process)
        self.attempt("engine.run_check warm", run_check)
        if cfg.http:
            self.attempt("POST /v1/score", score)
        self.attempt("fresh container per call", fresh)
        self.attempt("model gateway round trip", self.gateway_latency)
        if cfg.peers:
            self.attempt("peers' latency", lambda: self.peers_latency(peers))

    def gateway_latency(self) -> None:
        from bench import bench_gateway

        through, direct = bench_gateway.gateway_latency(self.config.calls)
        extra = bench_gateway.summary(through, direct)
        self.results.add(Figure(LATENCY, LAT_GATEWAY, "ms", "latency", through, extra))
        self.results.add(Figure(LATENCY, LAT_GATEWAY_DIRECT, "ms", "latency", direct))
        self.log(f"bench: the gateway adds {extra['added_ms_p50']:.2f} ms a call (p50)")

    def peer_image(self) -> str:
        from bench import peers
        from bench import scorebox_side as sb

        problem = peers.available()
        if problem:
            raise RuntimeError(problem)
        return peers.peer_image(sb.make_settings().image)

    def peers_latency(self, peers: Any) -> None:
        image = self.peer_image()
        for peer, name in (("epicbox", LAT_EPICBOX), ("llm-sandbox", LAT_LLM_SANDBOX)):

            def one(peer: str = peer, name: str = name) -> None:
                out = peers.drive(peer, image, "latency", calls=self.config.calls)
                self.results.add(Figure(LATENCY, name, "ms", "latency", out["latency_ms"]))

            self.attempt(f"{peer} latency", one)

    def throughput_section(self) -> None:
        cfg = self.config
        image: str | None = None
        if cfg.peers:
            try:
                image = self.peer_image()
            except Exception as exc:
                if cfg.strict:
                    raise
                self.results.failures["peers' image"] = str(exc)
        for kind in cfg.kinds:
            for size in cfg.sizes:
                self.throughput_line(kind, size, image)

    def throughput_line(self, kind: str, size: int, image: str | None) -> None:
        """Every system on ``size`` rows of the ``kind`` check."""
        from bench import peers, table_once
        from bench import scorebox_side as sb

        repeats = self.config.repeats(size)

        def in_process() -> None:
            runs = [sb.in_process_throughput(kind, size) for _ in range(repeats)]
            self.throughput(IN_PROCESS, kind, size, runs)

        def scorebox(name: str, reuse: Callable[[], dict[str, Any]]) -> None:
            settings = sb.make_settings(**reuse())
            runs = [sb.runner_throughput_cpu(settings, kind, size) for _ in range(repeats)]
            self.throughput(name, kind, size, runs)

        def table() -> None:
            try:
                reuse = "check" if sb.reuse_check() else "default"
            except sb.BenchError:
                reuse = "default"
            # Each repeat in a fresh process: the peak RSS is score_table's, not the heap
            # the earlier lines left in this one.
            runs = [table_once.in_child(kind, size, reuse) for _ in range(repeats)]
            self.throughput(SCORE_TABLE, kind, size, runs)

        def batch(peer: str, name: str, img: str) -> None:
            out = peers.drive(peer, img, "batch", kind=kind, rows=size, repeats=repeats)
            self.throughput(name, kind, size, [(s, 0.0) for s in out["batch_seconds"]])

        self.attempt(f"{kind} {size:,} {IN_PROCESS}", in_process)
        self.attempt(
            f"{kind} {size:,} {REUSE_CHECK}", lambda: scorebox(REUSE_CHECK, sb.reuse_check)
        )
        self.attempt(f"{kind} {size:,} {SCORE_TABLE}", table)
        limit = self.config.never_max_rows
        if limit is not None and size > limit:
            skipped = f"{kind} {size:,} {REUSE_NEVER}"
            self.results.failures[skipped] = f"skipped: --never-max-rows {limit:,}"
        else:
            self.attempt(
                f"{kind} {size:,} {REUSE_NEVER}", lambda: scorebox(REUSE_NEVER, sb.reuse_never)
            )
        if image is not None:
            img = image
            self.attempt(
                f"{kind} {size:,} {EPICBOX_BATCH}", lambda: batch("epicbox", EPICBOX_BATCH, img)
            )
            self.attempt(
                f"{kind} {size:,} {LLM_SANDBOX_BATCH}",
                lambda: batch("llm-sandbox", LLM_SANDBOX_BATCH, img),
            )

    def throughput(
        self,
        system: str,
        kind: str,
        size: int,
        runs: list[tuple[float, float]] | list[tuple[float, float, float]],
    ) -> None:
        """One throughput figure from repeats of (seconds, peak RSS MB[, host CPU seconds])."""
        seconds = [run[0] for run in runs]
        peak = max(run[1] for run in runs)
        extra: dict[str, Any] = {"kind": kind, "rows": size}
        if peak:
            extra["peak_rss_mb"] = peak
        cpu = [run[2] for run in runs if len(run) > 2]
        if cpu:
            # the host process's CPU per row, median over the repeats
            extra["host_cpu_us_per_row"] = statistics.median(cpu) / size * 1e6
        self.results.add(Figure(THROUGHPUT, system, "s", "rate", seconds, extra))

    def service_section(self) -> None:
        """One run of the trivial check through ``POST /v1/runs`` on a real ``scorebox serve``:
        rows/s from submit to succeeded, and the server process's CPU per row."""
        from bench import http_side

        rows = self.config.service_rows
        with http_side.Server(concurrent_jobs=self.config.clients) as server:
            seconds, cpu = http_side.service_run(server, rows)
        extra = {"kind": "trivial", "rows": rows, "server_cpu_us_per_row": cpu / rows * 1e6}
        self.results.add(Figure(SERVICE, SERVICE_RUN, "s", "rate", [seconds], extra))

    def runtimes_section(self) -> None:
        from bench import scorebox_side as sb

        cfg = self.config
        offered = sb.docker_runtimes()
        self.results.machine["docker_runtimes"] = offered
        if cfg.runsc == "no":
            return
        if "runsc" not in offered:
            message = "Docker offers no runsc runtime: run scripts/gvisor.sh"
            if cfg.runsc == "yes":
                raise RuntimeError(message)
            self.results.failures["runsc"] = message
            return
        for runtime in ("runc", "runsc"):
            self.runtime_lines(runtime)

    def runtime_lines(self, runtime: str) -> None:
        """Cold start, warm single row and throughput under one OCI runtime."""
        from bench import scorebox_side as sb

        cfg = self.config
        tag: dict[str, Any] = {"runtime": runtime}
        add = self.results.add
        try:
            reuse = sb.reuse_check()
        except sb.BenchError:
            reuse = {}  # before SCOREBOX_REUSE: the default (warm pool) is what there is

        def cold() -> None:
            settings = sb.make_settings(pool_size=0, runtime=runtime, **sb.reuse_never())
            samples = sb.runner_latency(settings, cfg.runsc_calls, warmup=1)
            add(Figure(RUNTIMES, "cold start, 1 row", "ms", "latency", samples, dict(tag)))

        def warm() -> None:
            settings = sb.make_settings(runtime=runtime, **reuse)
            samples = sb.runner_latency(settings, cfg.runsc_calls)
            add(Figure(RUNTIMES, "warm, 1 row", "ms", "latency", samples, dict(tag)))

        def rows() -> None:
            settings = sb.make_settings(runtime=runtime, **reuse)
            count = cfg.runsc_rows
            runs = [
                sb.runner_throughput(settings, "trivial", count) for _ in range(cfg.repeats(count))
            ]
            extra = {**tag, "kind": "trivial", "rows": count}
            add(Figure(RUNTIMES, "trivial rows", "s", "rate", [s for s, _ in runs], extra))

        self.attempt(f"{runtime} cold start", cold)
        self.attempt(f"{runtime} warm 1 row", warm)
        self.attempt(f"{runtime} {cfg.runsc_rows:,} rows", rows)

    def profile_section(self) -> None:
        """Where this process spends the smallest size of the trivial check (REUSE=check)."""
        from bench import scorebox_side as sb
        from bench.sampler import Sampler

        size = min(self.config.sizes)
        try:
            reuse = sb.reuse_check()
        except sb.BenchError:
            reuse = {}
        settings = sb.make_settings(**reuse)
        with Sampler() as sampler:
            seconds, _ = sb.runner_throughput(settings, "trivial", size)
        self.results.profile = {
            "rows": size,
            "settings": reuse or "defaults",
            "seconds": seconds,
            "samples": sampler.profile.samples,
            "idle": sampler.profile.idle,
            "top": sampler.profile.top(15),
        }

    def ingest_section(self) -> None:
        import tempfile

        from bench import bench_ingest

        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            self.results.online["ingest"] = bench_ingest.measure(
                None, self.config.ingest_batches, 512, 4, Path(tmp)
            )

    def online_section(self) -> None:
        from bench import bench_online

        cfg = self.config
        self.results.online["scoring"] = bench_online.measure(cfg.online_rate, cfg.online_seconds)

    def distributed_section(self) -> None:
        from bench import bench_distributed

        cfg = self.config
        self.results.distributed = bench_distributed.run_all(
            rows=cfg.distributed_rows,
            score_requests=cfg.distributed_requests,
            per_core_rows=cfg.distributed_rows,
        )


def machine_facts() -> dict[str, Any]:
    """Where and when: cores, memory, load, Docker, the commit."""
    facts: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    try:
        meminfo = Path("/proc/meminfo").read_text().split()
        facts["memory_gb"] = round(int(meminfo[1]) / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    if shutil.which("git"):
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
        facts["commit"] = rev.stdout.strip() or None
    facts["rows_per_check"] = "1,000 distinct rows of about 80 characters, cycled"
    facts["checks"] = {k: v.strip().splitlines()[-1].strip() for k, v in workload.CHECKS.items()}
    return facts
