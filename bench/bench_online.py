"""Online scoring: freshness (a span's arrival to its scores being readable) at a steady
rate, and backfill against a durable run of the same check over the same rows.

    .venv/bin/python -m bench.bench_online                    # 200 spans/s for 30 s
    .venv/bin/python -m bench.bench_online --rate 50 --seconds 10   # a quick look

A fresh ``scorebox serve`` (embedded, SQLite, the sandbox image of ``SCOREBOX_IMAGE``)
with a rule over two checks at a sample rate of 100 %: the workload's trivial code check
and a check that declares a package (``textstat``, built into an environment before the
clock starts). Spans (openai-v2 chat spans, one trace each) are sent over OTLP/HTTP in
batches of 10 every 50 ms. Freshness per span is from the server's ``received_at`` to
the later of its two scores' ``scored_at``, both stamped by the server: p50 and p95.
Then a second, disabled rule with the trivial check alone backfills the same window,
and ``POST /v1/runs`` scores the same rows with the same check: rows per second each.
Writes ``bench/results/online.md`` and ``online.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bench import workload
from bench.bench_ingest import batch
from bench.http_side import Server
from bench.measure import write_result
from engine.settings import Settings
from engine.storage.database import create_db_engine
from engine.storage.rule_tables import RuleRow, SpanScoreRow
from engine.storage.tables import SpanRow

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGE_CHECK = (
    '# /// script\n# dependencies = ["textstat==0.7.4"]\n# ///\n'
    "import textstat\n\n\ndef evaluate(model_output: str) -> float:\n"
    "    return float(textstat.lexicon_count(model_output))\n"
)
OTLP = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}
BATCH, EVERY = 10, 0.05


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _wait(what: str, done: Any, timeout: float) -> float:
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"{what}: not done in {timeout:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - started


def measure(rate: int, seconds: int) -> dict[str, Any]:
    with Server() as server, server.client() as http:
        db = create_db_engine(
            Settings(data_dir=Path(server.env["SCOREBOX_DATA_DIR"])).effective_database_url
        )
        pushed = http.post("/v1/checks", json={"name": "words", "source": PACKAGE_CHECK})
        pushed.raise_for_status()
        rule = {"name": "live", "checks": ["trivial", "words"], "sample_rate": 1.0}
        http.post("/v1/rules", json=rule).raise_for_status()

        def scored(rule_name: str, n: int) -> Any:
            def check() -> bool:
                with db.connect() as conn:
                    got = conn.scalar(
                        select(func.count())
                        .select_from(SpanScoreRow)
                        .join(RuleRow, RuleRow.id == SpanScoreRow.rule_id)
                        .where(RuleRow.name == rule_name, SpanScoreRow.status == "scored")
                    )
                return int(got or 0) >= n

            return check

        # warm-up: the package's environment is built, the warm containers started
        http.post("/v1/traces", content=batch(BATCH, -1), headers=OTLP).raise_for_status()
        _wait("warm-up", scored("live", 2 * BATCH), 900)
        window_start = datetime.now(UTC) - timedelta(seconds=5)
        bodies = [batch(BATCH, n) for n in range(rate * seconds // BATCH)]
        pause = BATCH / rate
        started = time.monotonic()
        for n, body in enumerate(bodies):  # steady: batch n leaves at n * pause
            delay = started + n * pause - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            http.post("/v1/traces", content=body, headers=OTLP).raise_for_status()
        sent = len(bodies) * BATCH
        _wait("live scoring", scored("live", 2 * (sent + BATCH)), 900)
        with db.connect() as conn:
            rows = conn.execute(
                select(SpanRow.received_at, func.max(SpanScoreRow.scored_at))
                .join(
                    SpanScoreRow,
                    (SpanScoreRow.trace_id == SpanRow.trace_id)
                    & (SpanScoreRow.span_id == SpanRow.span_id),
                )
                .where(SpanRow.received_at >= window_start + timedelta(seconds=5))
                .group_by(SpanRow.id, SpanRow.received_at)
            ).all()
        fresh = [(done - got).total_seconds() for got, done in rows if done is not None]

        # backfill with the trivial check alone, against a durable run of the same rows
        back = {"name": "again", "checks": ["trivial"], "sample_rate": 1.0, "enabled": False}
        http.post("/v1/rules", json=back).raise_for_status()
        t0 = time.monotonic()
        http.post(
            "/v1/rules/again/backfill",
            json={"since": window_start.isoformat(), "row_cap": 1_000_000},
        ).raise_for_status()
        _wait("backfill", scored("again", sent), 900)
        backfill_s = time.monotonic() - t0
        with db.connect() as conn:
            outputs = list(
                conn.scalars(select(SpanRow.row).where(SpanRow.received_at >= window_start))
            )
        run_rows = [{"model_output": r.get("model_output") or ""} for r in outputs]
        t0 = time.monotonic()
        run = http.post("/v1/runs", json={"checks": ["trivial"], "rows": run_rows})
        run.raise_for_status()
        run_id = run.json()["id"]
        _wait(
            "durable run",
            lambda: http.get(f"/v1/runs/{run_id}").json()["status"] not in ("queued", "running"),
            900,
        )
        run_s = time.monotonic() - t0
        db.dispose()
    return {
        "rate": rate,
        "seconds": seconds,
        "spans": sent,
        "freshness_p50_s": statistics.median(fresh),
        "freshness_p95_s": _pct(fresh, 0.95),
        "freshness_max_s": max(fresh),
        "measured_spans": len(fresh),
        "backfill_rows": sent,
        "backfill_rows_per_s": sent / backfill_s,
        "run_rows": len(run_rows),
        "run_rows_per_s": len(run_rows) / run_s,
        "cores": os.cpu_count(),
        "load_average_1m_at_end": os.getloadavg()[0],
        "checks": {"code": workload.TRIVIAL, "declared package": PACKAGE_CHECK},
    }


def report(r: dict[str, Any]) -> str:
    ratio = r["backfill_rows_per_s"] / r["run_rows_per_s"]
    return (
        "# Online scoring\n\n"
        f"`python -m bench.bench_online`: one `scorebox serve` (embedded, SQLite), a rule "
        f"over a code check and a declared-package check at 100 %, {r['rate']} spans/s for "
        f"{r['seconds']} s ({r['spans']:,} spans, batches of {BATCH}).\n\n"
        "| figure | measured | goal |\n| --- | ---: | ---: |\n"
        "| freshness p50 (arrival to both scores readable) "
        f"| {r['freshness_p50_s']:.2f} s | ≤ 1 s |\n"
        f"| freshness p95 | {r['freshness_p95_s']:.2f} s | ≤ 3 s |\n"
        f"| backfill, trivial check | {r['backfill_rows_per_s']:,.0f} rows/s | — |\n"
        f"| durable run, same check, same rows | {r['run_rows_per_s']:,.0f} rows/s | — |\n"
        f"| backfill / run | {ratio:.2f}x | — |\n\n"
        f"{r['measured_spans']:,} spans measured; slowest {r['freshness_max_s']:.2f} s. "
        f"Machine: {r['cores']} cores, 1-minute load average "
        f"{r['load_average_1m_at_end']:.1f} at the end (a shared machine).\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_online")
    parser.add_argument("--rate", type=int, default=200, help="spans per second")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    result = measure(args.rate, args.seconds)
    write_result(args.out, "online", result, report(result))


if __name__ == "__main__":
    main()
