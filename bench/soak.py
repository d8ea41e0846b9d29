"""A soak: one API node and one worker under mixed, partly hostile load for N minutes.

    .venv/bin/python -m bench.soak --minutes 30        # writes results/soak.{md,json,png}
    .venv/bin/python -m bench.soak --minutes 3 --warmup-minutes 1   # a quick look

Distributed mode on this machine (a throwaway PostgreSQL and Redis from
``scripts/postgres.sh`` and ``scripts/redis.sh``, or ``SCOREBOX_TEST_POSTGRES_URL`` /
``SCOREBOX_TEST_REDIS_URL``): one ``scorebox serve`` API node and one ``scorebox worker``.
Two tenants submit durable runs in turn, each run a mix of ordinary checks and hostile
ones (a row that hangs past its timeout, a crash, an output flood, a memory bomb), while
a second client sends ``/v1/score`` requests at a bounded rate. Every loop is bounded and
talks to loopback only.

Sampled every ``--sample-seconds``: the RSS and open file descriptors of the API node and
of the worker (each with its child processes), the running sandbox containers, and the
rows scored per second. After the load stops, the worker's check workers retire on their
idle limit and the counts are read again.

Pass: RSS grows by less than 10 % from the end of the warm-up to the end; file
descriptors and containers come back to their baseline (read after the warm-up, between
two runs, within a small slack) once the load stops; no row is lost (every run ends
``succeeded`` with a result per row and check).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.bench_distributed import Nodes, _database, _free_port, _service

RESULTS = Path(__file__).resolve().parent / "results"
LABEL = "scorebox.managed=1"

CHECKS = {
    "length": "def evaluate(model_output: str) -> int:\n    return len(model_output)\n",
    "words": (
        "import re\n\ndef evaluate(model_output: str, scenario_result: str) -> float:\n"
        "    a = set(re.findall(r'\\w+', model_output.lower()))\n"
        "    b = set(re.findall(r'\\w+', scenario_result.lower()))\n"
        "    return len(a & b) / max(1, len(a | b))\n"
    ),
    # hostile, each on some rows only: the rest of the run must carry on
    "hangs": (
        "import time\n\ndef evaluate(model_output: str) -> bool:\n"
        "    if model_output.endswith('7'):\n        time.sleep(60)\n    return True\n"
    ),
    "crashes": (
        "import os\n\ndef evaluate(model_output: str) -> bool:\n"
        "    if model_output.endswith('3'):\n        os._exit(3)\n    return True\n"
    ),
    "floods": (
        "import sys\n\ndef evaluate(model_output: str) -> bool:\n"
        "    if model_output.endswith('5'):\n        sys.stdout.write('x' * 50_000_000)\n"
        "    return True\n"
    ),
    "eats_memory": (
        "def evaluate(model_output: str) -> bool:\n"
        "    if model_output.endswith('9'):\n        b = bytearray(2 * 1024 ** 3)\n"
        "        return len(b) > 0\n    return True\n"
    ),
}
LIMITS = {"row_timeout_seconds": 1.0, "memory_mb": 128}


@dataclass
class Sample:
    t: float
    api_rss_mb: float
    worker_rss_mb: float
    api_fds: int
    worker_fds: int
    containers: int
    rows_per_second: float


@dataclass
class Outcome:
    minutes: float
    warmup_minutes: float
    runs: int = 0
    rows_expected: int = 0
    rows_stored: int = 0
    runs_not_succeeded: list[str] = field(default_factory=list)
    score_requests: int = 0
    score_errors: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    baseline: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out = [pid]
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        for text in child.read_text().split():
            out += _tree(int(text))
    return out


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _fds(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += sum(1 for _ in Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
    return total


def _containers(pids: list[int]) -> int:
    """Running sandbox containers made by ``pids`` (their ``scorebox.owner`` label), so
    other users of the same Docker engine do not count."""
    out = subprocess.run(
        ["docker", "ps", "--filter", f"label={LABEL}", "--format", '{{.Label "scorebox.owner"}}'],
        capture_output=True,
        text=True,
        check=False,
    )
    owners = {f"{socket.gethostname()}:{pid}" for pid in pids}
    return sum(1 for owner in out.stdout.split() if owner in owners)


def _tenant(database_url: str, name: str) -> dict[str, str]:
    from engine.storage import open_store
    from engine.tenancy import auth

    store = open_store(database_url)
    try:
        key = auth.create_tenant(store, name, {"concurrent_jobs": 4}).secret
    finally:
        store.engine.dispose()
    return {"Authorization": f"Bearer {key}"}


def _rows(n: int, seed: int) -> list[dict[str, str]]:
    return [
        {
            "model_output": f"answer {seed} {i} the quick brown fox {i % 10}",
            "scenario_result": f"the quick {i % 7} fox",
        }
        for i in range(n)
    ]


def soak(minutes: float, warmup: float, sample_seconds: float, rows_per_run: int) -> Outcome:
    outcome = Outcome(minutes, warmup)
    with (
        _service("postgres.sh", "SCOREBOX_TEST_POSTGRES_URL") as pg,
        _service("redis.sh", "SCOREBOX_TEST_REDIS_URL") as redis,
        _database(pg) as database,
        tempfile.TemporaryDirectory(prefix="scorebox-soak-") as tmp,
    ):
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SCOREBOX_")},
            "SCOREBOX_DATA_DIR": tmp,
            "SCOREBOX_DATABASE_URL": database,
            "SCOREBOX_BROKER_URL": redis,
            "SCOREBOX_REUSE_IDLE_SECONDS": "20",
            "SCOREBOX_POOL_SIZE": "1",
        }
        nodes = Nodes(env, Path(tmp))
        try:
            port = _free_port()
            nodes.worker("soak", 2)
            nodes.serve(port, redis)
            api, worker = nodes.procs[1].pid, nodes.procs[0].pid
            tenants = [_tenant(database, "soak-a"), _tenant(database, "soak-b")]
            base = f"http://127.0.0.1:{port}"
            for headers in tenants:
                for name, source in CHECKS.items():
                    check = {"name": name, "source": source, "limits": LIMITS}
                    httpx.post(f"{base}/v1/checks", json=check, headers=headers, timeout=60)

            stop = threading.Event()
            scored = {"rows": 0}

            def score_traffic() -> None:  # bounded: one request every 0.5 s at most
                with httpx.Client(base_url=base, headers=tenants[1], timeout=60) as c:
                    while not stop.is_set():
                        rows = _rows(3, outcome.score_requests)
                        answer = c.post("/v1/score", json={"checks": ["length"], "rows": rows})
                        outcome.score_requests += 1
                        if answer.status_code != 200:
                            outcome.score_errors += 1
                        stop.wait(0.5)

            def sampler() -> None:
                last_rows, last_t = 0, time.monotonic()
                start = last_t
                while not stop.wait(sample_seconds):
                    now = time.monotonic()
                    rate = (scored["rows"] - last_rows) / max(1e-6, now - last_t)
                    last_rows, last_t = scored["rows"], now
                    api_pids, worker_pids = _tree(api), _tree(worker)
                    outcome.samples.append(
                        Sample(
                            round(now - start, 1),
                            round(_rss_mb(api_pids), 1),
                            round(_rss_mb(worker_pids), 1),
                            _fds(api_pids),
                            _fds(worker_pids),
                            _containers(api_pids + worker_pids),
                            round(rate, 1),
                        )
                    )

            threads = [threading.Thread(target=score_traffic), threading.Thread(target=sampler)]
            for thread in threads:
                thread.start()
            started = time.monotonic()
            deadline = started + minutes * 60
            baseline_taken = False
            with httpx.Client(base_url=base, timeout=120) as c:
                while time.monotonic() < deadline:
                    headers = tenants[outcome.runs % 2]
                    rows = _rows(rows_per_run, outcome.runs)
                    submitted = c.post(
                        "/v1/runs",
                        json={"checks": list(CHECKS), "rows": rows},
                        headers=headers,
                    )
                    submitted.raise_for_status()
                    run_id = submitted.json()["id"]
                    body: dict[str, Any] = {}
                    run_deadline = time.monotonic() + 600
                    while time.monotonic() < run_deadline:
                        body = c.get(f"/v1/runs/{run_id}", headers=headers).json()
                        if body["status"] not in ("queued", "running"):
                            break
                        time.sleep(0.5)
                    outcome.runs += 1
                    outcome.rows_expected += rows_per_run * len(CHECKS)
                    outcome.rows_stored += int(body["progress"]["done"])
                    scored["rows"] += int(body["progress"]["done"])
                    if body.get("status") != "succeeded":
                        outcome.runs_not_succeeded.append(f"{run_id}: {body.get('status')}")
                    for summary in body.get("summary") or []:
                        for status, count in summary.get("counts", {}).items():
                            outcome.statuses[status] = outcome.statuses.get(status, 0) + count
                    if not baseline_taken and time.monotonic() - started >= warmup * 60:
                        baseline_taken = True
                        outcome.baseline = _state(api, worker)
            stop.set()
            for thread in threads:
                thread.join(120)
            time.sleep(30)  # kept containers retire after SCOREBOX_REUSE_IDLE_SECONDS=20
            outcome.after = _state(api, worker)
        finally:
            nodes.close()
    return outcome


def _state(api: int, worker: int) -> dict[str, float]:
    api_pids, worker_pids = _tree(api), _tree(worker)
    return {
        "api_rss_mb": round(_rss_mb(api_pids), 1),
        "worker_rss_mb": round(_rss_mb(worker_pids), 1),
        "api_fds": _fds(api_pids),
        "worker_fds": _fds(worker_pids),
        "containers": _containers(api_pids + worker_pids),
    }


def verdict(outcome: Outcome) -> dict[str, Any]:
    """The pass criteria, each with its figures."""
    after_warmup = [s for s in outcome.samples if s.t >= outcome.warmup_minutes * 60]
    window = max(1, len(after_warmup) // 5)
    first, last = after_warmup[:window] or outcome.samples[:1], after_warmup[-window:]
    growth = {}
    for part in ("api_rss_mb", "worker_rss_mb"):
        start = statistics.mean(getattr(s, part) for s in first)
        end = statistics.mean(getattr(s, part) for s in last) if last else start
        growth[part] = round(100 * (end - start) / start, 1) if start else 0.0
    base, after = outcome.baseline, outcome.after
    checks = {
        "rss_growth_under_10_percent": all(g < 10 for g in growth.values()),
        "fds_back_to_baseline": bool(base)
        and after["api_fds"] <= base["api_fds"] + 5
        and after["worker_fds"] <= base["worker_fds"] + 5,
        "containers_back_to_baseline": bool(base) and after["containers"] <= base["containers"],
        "no_row_lost": outcome.rows_stored == outcome.rows_expected
        and not outcome.runs_not_succeeded,
    }
    return {"growth_percent": growth, "checks": checks, "passed": all(checks.values())}


def render(outcome: Outcome, judged: dict[str, Any]) -> str:
    rates = [rate for rate in _smoothed_rate(outcome.samples) if rate > 0]
    median_rate = statistics.median(rates) if rates else 0.0
    lines = [
        f"# Soak: {outcome.minutes:g} minutes (warm-up {outcome.warmup_minutes:g})",
        "",
        f"Runs: {outcome.runs} ({outcome.rows_stored:,} of {outcome.rows_expected:,} results "
        f"stored; not succeeded: {len(outcome.runs_not_succeeded)}); /v1/score requests: "
        f"{outcome.score_requests} ({outcome.score_errors} not 200). Rows/s over "
        f"{RATE_WINDOW_SECONDS:.0f} s windows: median {median_rate:.0f}.",
        "",
        "Statuses: " + ", ".join(f"{k} {v:,}" for k, v in sorted(outcome.statuses.items())),
        "",
        "| | API node | worker |",
        "|---|---:|---:|",
        f"| RSS growth after warm-up | {judged['growth_percent']['api_rss_mb']} % | "
        f"{judged['growth_percent']['worker_rss_mb']} % |",
        f"| RSS at baseline / after (MB) | {outcome.baseline.get('api_rss_mb')} / "
        f"{outcome.after.get('api_rss_mb')} | {outcome.baseline.get('worker_rss_mb')} / "
        f"{outcome.after.get('worker_rss_mb')} |",
        f"| open fds at baseline / after | {outcome.baseline.get('api_fds')} / "
        f"{outcome.after.get('api_fds')} | {outcome.baseline.get('worker_fds')} / "
        f"{outcome.after.get('worker_fds')} |",
        "",
        f"Containers at baseline / after: {outcome.baseline.get('containers')} / "
        f"{outcome.after.get('containers')}.",
        "",
        "| criterion | met |",
        "|---|---|",
        *(f"| {name.replace('_', ' ')} | {'yes' if ok else 'NO'} |" for name, ok in
          judged["checks"].items()),
        "",
        f"Verdict: {'PASS' if judged['passed'] else 'FAIL'}",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


#: Runs are counted when they finish: the chart shows the rate over this window.
RATE_WINDOW_SECONDS = 60.0


def _smoothed_rate(samples: list[Sample]) -> list[float]:
    """Rows/s over the last ``RATE_WINDOW_SECONDS`` at each sample."""
    totals, total, previous = [], 0.0, 0.0
    for sample in samples:
        total += sample.rows_per_second * (sample.t - previous)
        previous = sample.t
        totals.append(total)
    rates = []
    for i, sample in enumerate(samples):
        j = i
        while j > 0 and sample.t - samples[j - 1].t <= RATE_WINDOW_SECONDS:
            j -= 1
        span = sample.t - (samples[j - 1].t if j > 0 else 0.0)
        before = totals[j - 1] if j > 0 else 0.0
        rates.append((totals[i] - before) / span if span > 0 else 0.0)
    return rates


def chart(outcome: Outcome, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t / 60 for s in outcome.samples]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    axes[0].plot(t, [s.api_rss_mb for s in outcome.samples], label="API node")
    axes[0].plot(t, [s.worker_rss_mb for s in outcome.samples], label="worker (with children)")
    axes[0].set_ylabel("RSS (MB)")
    axes[0].legend()
    axes[1].plot(t, [s.api_fds for s in outcome.samples], label="API node fds")
    axes[1].plot(t, [s.worker_fds for s in outcome.samples], label="worker fds")
    axes[1].plot(t, [s.containers for s in outcome.samples], label="containers")
    axes[1].set_ylabel("count")
    axes[1].legend()
    axes[2].plot(t, _smoothed_rate(outcome.samples))
    axes[2].set_ylabel(f"rows/s (over {RATE_WINDOW_SECONDS:.0f} s)")
    axes[2].set_xlabel("minutes")
    for ax in axes:
        ax.axvline(outcome.warmup_minutes, color="grey", linestyle=":")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def replot(path: Path) -> None:
    """Redraw ``soak.png`` and ``soak.md`` beside ``path`` (a soak.json) without running."""
    data = json.loads(path.read_text())["outcome"]
    data["samples"] = [Sample(**sample) for sample in data["samples"]]
    outcome = Outcome(**data)
    judged = verdict(outcome)
    (path.parent / "soak.md").write_text(render(outcome, judged))
    chart(outcome, path.parent / "soak.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warmup-minutes", type=float, default=None)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--rows-per-run", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--replot", type=Path, metavar="SOAK_JSON", help="redraw, do not run")
    args = parser.parse_args()
    if args.replot:
        replot(args.replot)
        return
    warmup = args.warmup_minutes if args.warmup_minutes is not None else min(5, args.minutes / 5)
    outcome = soak(args.minutes, warmup, args.sample_seconds, args.rows_per_run)
    judged = verdict(outcome)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "soak.json").write_text(
        json.dumps({"outcome": asdict(outcome), "verdict": judged}, indent=1)
    )
    (args.out / "soak.md").write_text(render(outcome, judged))
    chart(outcome, args.out / "soak.png")
    print(render(outcome, judged))


if __name__ == "__main__":
    main()
