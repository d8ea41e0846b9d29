"""Distributed mode against the embedded mode, measured side by side in one run.

    python -m bench.bench_distributed [--rows 100000] [--score-requests 60]
    python -m bench.bench_distributed --per-core-only [--per-core-rows 100000] [--kinds trivial]
    python -m bench.bench_distributed --start-only [--start-runs 20]

Starts a throwaway PostgreSQL and Redis (``scripts/postgres.sh``,
``scripts/redis.sh``; or uses ``SCOREBOX_TEST_POSTGRES_URL`` and
``SCOREBOX_TEST_REDIS_URL``), then for each setup (embedded ``scorebox serve``;
one API node with 1 and with 2 ``scorebox worker`` processes) on a fresh
database:

- ``/v1/score`` latency of one row of a warm code check, and of a built-in (which runs
  in process, so it shows what the queue itself adds), sequential requests after a warm-up;
- rows/s of one run of ``--rows`` rows of a trivial check, from the submit to the run's
  ``finished_at`` (the server's stamp, on this machine's clock: no poll interval in it);

and rows/s per worker core (one worker, one slot) for a trivial and a realistic check,
beside the same rows embedded with one slot (``SCOREBOX_MAX_PARALLEL_JOBS=1``): the two
alternate :data:`PER_CORE_ROUNDS` times and the figures are medians.
Prints a Markdown table; ``run_all()`` returns the figures for ``python -m bench``.
``--per-core-only`` measures only the per-core lines. ``--start-only`` measures only how
soon a small run is done: ``--start-runs`` runs of one 100-row chunk each, one worker with
one slot beside embedded with one slot, from the submit to ``finished_at`` (and to the
``202``), medians; what a worker adds there is the way a run's first chunk goes to it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from engine.cli import main; main()"]
LABEL = "scorebox.bench"

TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"
REALISTIC = (
    "import difflib, json, re\n\n"
    "def evaluate(model_output: str, scenario_result: str) -> float:\n"
    "    words = re.findall(r'\\w+', model_output.lower())\n"
    "    expected = re.findall(r'\\w+', scenario_result.lower())\n"
    "    ratio = difflib.SequenceMatcher(None, words, expected).ratio()\n"
    "    json.dumps({'w': words[:20]})\n"
    "    return round(ratio, 4)\n"
)
SENTENCE = "the quick brown fox jumps over the lazy dog while the model answers the question "


@dataclass
class Setup:
    name: str
    workers: int  # 0: embedded
    slots: int = 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _service(script: str, env_name: str) -> Iterator[str]:
    given = os.environ.get(env_name)
    if given:
        yield given
        return
    url = subprocess.run(
        [str(ROOT / "scripts" / script), "start"], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([str(ROOT / "scripts" / script), "stop", url], check=False)


@contextmanager
def _database(base: str) -> Iterator[str]:
    url = make_url(base).set(drivername="postgresql+psycopg")
    name = f"bench_{secrets.token_hex(5)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class Nodes:
    """The processes of one setup; all stopped (and their containers removed) at exit."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, name: str, args: list[str], extra: dict[str, str] | None = None) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.procs.append(
            subprocess.Popen(
                [*CLI, *args],
                env={**self.env, **(extra or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )

    def worker(self, name: str, slots: int) -> None:
        extra = {"SCOREBOX_MAX_PARALLEL_JOBS": str(slots)}
        self.spawn(name, ["worker", "-c", str(slots), "-n", f"{name}@%h"], extra)
        path = self.logs / f"{name}.log"
        deadline = time.monotonic() + 120
        while " ready." not in path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker {name} did not start: see {path}")
            time.sleep(0.2)

    def serve(self, port: int, broker: str | None) -> None:
        extra = {} if broker else {"SCOREBOX_BROKER_URL": ""}
        self.spawn("api", ["serve", "--port", str(port), "--log-level", "warning"], extra)
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the API node did not start")
            time.sleep(0.2)

    def close(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        host = socket.gethostname()
        for proc in self.procs:
            ids = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label=scorebox.owner={host}:{proc.pid}"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            if ids:
                subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=False)


def _tenant(database_url: str) -> dict[str, str]:
    from engine.storage import open_store
    from engine.tenancy import auth

    store = open_store(database_url)
    try:
        key = auth.create_tenant(store, "bench", {"concurrent_jobs": 16}).secret
    finally:
        store.engine.dispose()
    return {"Authorization": f"Bearer {key}"}


def _run_rate(client: httpx.Client, check: str, rows: list[dict[str, Any]]) -> float:
    """rows/s of one run: from the submit to the run's ``finished_at`` (the server's clock,
    this machine's: a poll's interval does not round the time up)."""
    started = time.time()
    reply = client.post("/v1/runs", json={"checks": [check], "rows": rows})
    reply.raise_for_status()
    body = _finished(client, reply.json()["id"])
    return len(rows) / (datetime.fromisoformat(body["finished_at"]).timestamp() - started)


def _finished(client: httpx.Client, run_id: str, poll_seconds: float = 0.2) -> dict[str, Any]:
    """The run once it has ended (RuntimeError unless it succeeded)."""
    while True:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if body["status"] not in ("queued", "running"):
            break
        time.sleep(poll_seconds)
    if body["status"] != "succeeded":
        raise RuntimeError(f"run {run_id} ended {body['status']}: {body.get('error')}")
    return body


def _latencies(client: httpx.Client, count: int, check: str) -> list[float]:
    payload = {"checks": [check], "rows": [{"model_output": "{}"}]}
    for _ in range(5):  # warm-up: the check's first containers
        client.post("/v1/score", json=payload).raise_for_status()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        client.post("/v1/score", json=payload).raise_for_status()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


@contextmanager
def _cluster(setup: Setup, pg: str, redis_url: str) -> Iterator[httpx.Client]:
    """``setup``'s nodes on a fresh database, and a client of its API node (the bench's
    tenant, both checks pushed); every node stopped at exit."""
    with _database(pg) as database_url, tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "SCOREBOX_DATABASE_URL": database_url,
            "SCOREBOX_DATA_DIR": tmp,
            "SCOREBOX_POOL_SIZE": "2",
            "SCOREBOX_MAX_PARALLEL_JOBS": str(setup.slots),
            "SCOREBOX_RUN_CHUNK_ROWS": "500",
            "SCOREBOX_JOB_MAX_ROWS": "500",
            # 100,000 rows of this data are a JSON body of about 50 MB, past the 32 MB default
            "SCOREBOX_MAX_BODY_MB": "256",
            "SCOREBOX_CONTAINER_LABELS": json.dumps({LABEL: "1"}),
        }
        broker = redis_url if setup.workers else None
        if broker:
            import redis

            redis.Redis.from_url(broker).flushdb()
            env["SCOREBOX_BROKER_URL"] = broker
        from engine.storage import open_store

        open_store(database_url).engine.dispose()  # migrate once
        headers = _tenant(database_url)
        nodes = Nodes(env, Path(tmp))
        try:
            for n in range(setup.workers):
                nodes.worker(f"w{n + 1}", setup.slots)
            port = _free_port()
            nodes.serve(port, broker)
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=600
            ) as client:
                for name, source in (("trivial", TRIVIAL), ("realistic", REALISTIC)):
                    client.post("/v1/checks", json={"name": name, "source": source})
                yield client
        finally:
            nodes.close()


def measure(
    setup: Setup,
    pg: str,
    redis_url: str,
    rows: int,
    score_requests: int,
    realistic: bool = False,
) -> dict[str, Any]:
    with _cluster(setup, pg, redis_url) as client:
        out: dict[str, Any] = {"setup": setup.name}
        if score_requests:
            samples = _latencies(client, score_requests, "trivial")
            out["score_p50_ms"] = statistics.median(samples)
            out["score_p90_ms"] = statistics.quantiles(samples, n=10)[-1]
            # a built-in runs in process: what the queue itself costs
            samples = _latencies(client, score_requests, "is_json")
            out["builtin_p50_ms"] = statistics.median(samples)
            out["builtin_p90_ms"] = statistics.quantiles(samples, n=10)[-1]
        data = [
            {
                "model_output": (SENTENCE * 3) + ("yes" if i % 2 else "no"),
                "scenario_result": SENTENCE * 2,
            }
            for i in range(rows)
        ]
        out["rows_per_s"] = _run_rate(client, "realistic" if realistic else "trivial", data)
        return out


#: Rows of each run ``--start-only`` times: one chunk (``SCOREBOX_RUN_CHUNK_ROWS``).
START_ROWS = 100


def _start_latencies(setup: Setup, pg: str, redis_url: str, runs: int) -> dict[str, float]:
    """Medians of ``runs`` small runs of ``setup`` (after three to warm up), in ms: from
    the submit to the ``202`` and to the run's ``finished_at``."""
    rows = [{"model_output": SENTENCE + ("yes" if i % 2 else "no")} for i in range(START_ROWS)]
    accepted: list[float] = []
    finished: list[float] = []
    with _cluster(setup, pg, redis_url) as client:
        for n in range(runs + 3):
            started = time.time()
            reply = client.post("/v1/runs", json={"checks": ["trivial"], "rows": rows})
            reply.raise_for_status()
            answered = time.time()
            body = _finished(client, reply.json()["id"], poll_seconds=0.02)
            done = datetime.fromisoformat(body["finished_at"]).timestamp()
            if n >= 3:
                accepted.append((answered - started) * 1000)
                finished.append((done - started) * 1000)
            time.sleep(0.3)  # the slot idle again, as for a run that comes on its own
    return {"accepted_ms": statistics.median(accepted), "finished_ms": statistics.median(finished)}


def start_only(runs: int = 20) -> dict[str, Any]:
    """``--start-only``: small runs' submit-to-finish, one worker's and embedded's with one
    slot each, the two setups in turn twice (medians of each setup's runs)."""
    out: dict[str, list[dict[str, float]]] = {"worker": [], "embedded": []}
    with (
        _service("postgres.sh", "SCOREBOX_TEST_POSTGRES_URL") as pg,
        _service("redis.sh", "SCOREBOX_TEST_REDIS_URL") as redis_url,
    ):
        for _ in range(2):
            out["worker"].append(_start_latencies(Setup("1 worker", 1, 1), pg, redis_url, runs))
            out["embedded"].append(_start_latencies(Setup("embedded", 0, 1), pg, redis_url, runs))
    return {"start_runs": runs, "start_rounds": out}


def render_start(figures: dict[str, Any]) -> str:
    lines = [
        f"a run of {START_ROWS} rows (one chunk), one slot, medians of "
        f"{figures['start_runs']} runs a round:",
        "",
        "| setup | round | submit to 202 | submit to finished_at |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, rounds in figures["start_rounds"].items():
        for n, found in enumerate(rounds, 1):
            lines.append(
                f"| {name} | {n} | {found['accepted_ms']:.1f} ms | {found['finished_ms']:.1f} ms |"
            )
    return "\n".join(lines)


#: Worker and embedded runs alternate this many times for each check kind, and the figures
#: are their medians: on a 2-core machine shared with PostgreSQL, Redis and the API node,
#: one pair of runs put the worker anywhere between 68 % and 86 % of embedded.
PER_CORE_ROUNDS = 3


@dataclass(frozen=True)
class PerCore:
    """rows/s with one slot: each round's pair, and their medians for a worker and embedded."""

    rounds: dict[str, list[list[float]]]  # kind -> [[worker, embedded], ...] in run order

    def median(self, side: int) -> dict[str, float]:
        """Each kind's median rows/s of one side (0: the worker, 1: embedded)."""
        return {k: statistics.median(p[side] for p in v) for k, v in self.rounds.items()}

    def figures(self) -> dict[str, Any]:
        return {
            "per_core_rows_per_s": self.median(0),
            "embedded_per_core_rows_per_s": self.median(1),
            "per_core_rounds": self.rounds,
        }


def _per_core(
    pg: str,
    redis_url: str,
    rows: int,
    kinds: tuple[str, ...] = ("trivial", "realistic"),
    rounds: int = PER_CORE_ROUNDS,
) -> PerCore:
    """rows/s of each check kind with one slot, one worker's and embedded's, alternating."""

    def one_slot(name: str, workers: int, kind: str) -> float:
        """rows/s of ``kind`` with one slot, on ``workers`` workers (0: embedded)."""
        setup = Setup(f"{name}, 1 slot, {kind}", workers, slots=1)
        found = measure(setup, pg, redis_url, rows, 0, realistic=(kind == "realistic"))
        return float(found["rows_per_s"])

    pairs: dict[str, list[list[float]]] = {}
    for kind in kinds:
        pairs[kind] = [
            [one_slot("1 worker", 1, kind), one_slot("embedded", 0, kind)] for _ in range(rounds)
        ]
    return PerCore(pairs)


def per_core_only(
    rows: int = 100_000, kinds: tuple[str, ...] = ("trivial", "realistic")
) -> dict[str, Any]:
    """Only the rows/s per worker core beside embedded with one slot (``--per-core-only``)."""
    with (
        _service("postgres.sh", "SCOREBOX_TEST_POSTGRES_URL") as pg,
        _service("redis.sh", "SCOREBOX_TEST_REDIS_URL") as redis_url,
    ):
        per_core = _per_core(pg, redis_url, rows, kinds)
    return {**per_core.figures(), "per_core_rows": rows}


def run_all(
    rows: int = 100_000, score_requests: int = 60, per_core_rows: int = 100_000
) -> dict[str, Any]:
    """Every figure of the distributed benchmark (for ``python -m bench``)."""
    with (
        _service("postgres.sh", "SCOREBOX_TEST_POSTGRES_URL") as pg,
        _service("redis.sh", "SCOREBOX_TEST_REDIS_URL") as redis_url,
    ):
        setups = [
            Setup("embedded", 0),
            Setup("distributed, 1 worker", 1),
            Setup("distributed, 2 workers", 2),
        ]
        table = [measure(s, pg, redis_url, rows, score_requests) for s in setups]

        per_core = _per_core(pg, redis_url, per_core_rows)
    return {
        "rows": rows,
        "table": table,
        **per_core.figures(),
        "per_core_rows": per_core_rows,
        "cores": os.cpu_count(),
    }


def render(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['rows']:,}-row run of a trivial check, {figures['cores']} cores, PostgreSQL "
        "for every setup:",
        "",
        "| setup | rows/s | /v1/score code check p50 / p90 | /v1/score built-in p50 / p90 |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in figures["table"]:
        lines.append(
            f"| {row['setup']} | {row['rows_per_s']:,.0f} | {row['score_p50_ms']:.1f} / "
            f"{row['score_p90_ms']:.1f} ms | {row['builtin_p50_ms']:.1f} / "
            f"{row['builtin_p90_ms']:.1f} ms |"
        )
    return "\n".join([*lines, "", render_per_core(figures)])


def render_per_core(figures: dict[str, Any]) -> str:
    """The lines of rows/s per worker core beside embedded with one slot."""
    rounds = figures.get("per_core_rounds") or {}
    count = max((len(v) for v in rounds.values()), default=1)
    head = "rows/s per worker core (one worker, one slot"
    head += f"; medians of {count} alternating runs):" if count > 1 else "):"
    lines = [head, ""]
    embedded = figures.get("embedded_per_core_rows_per_s") or {}
    for kind, rate in figures["per_core_rows_per_s"].items():
        line = f"- {kind} check: {rate:,.0f} rows/s"
        if kind in embedded:
            line += (
                f"; embedded with one slot {embedded[kind]:,.0f} rows/s "
                f"({rate / embedded[kind]:.0%} of it)"
            )
        shares = [w / e for w, e in rounds.get(kind, []) if e]
        if len(shares) > 1:
            line += f"; each run's ratio {min(shares):.0%} to {max(shares):.0%}"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--score-requests", type=int, default=60)
    parser.add_argument("--per-core-rows", type=int, default=100_000)
    parser.add_argument(
        "--per-core-only",
        action="store_true",
        help="only the rows/s per worker core beside embedded with one slot",
    )
    parser.add_argument(
        "--kinds",
        default="trivial,realistic",
        help="with --per-core-only: the check kinds to measure (comma list)",
    )
    parser.add_argument(
        "--start-only",
        action="store_true",
        help="only small runs' submit-to-finish, one worker beside embedded (one slot each)",
    )
    parser.add_argument("--start-runs", type=int, default=20)
    args = parser.parse_args()
    if args.start_only:
        print(render_start(start_only(args.start_runs)))
        return
    if args.per_core_only:
        kinds = tuple(k for k in args.kinds.split(",") if k)
        print(render_per_core(per_core_only(args.per_core_rows, kinds)))
        return
    print(render(run_all(args.rows, args.score_requests, args.per_core_rows)))


if __name__ == "__main__":
    main()
