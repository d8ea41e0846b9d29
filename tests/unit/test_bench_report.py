"""The benchmark's statistics, command line, targets and report, on made-up figures; the
report with its chart (matplotlib) is in tests/integration/test_bench_report_chart.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bench import workload
from bench.__main__ import parse
from bench.measure import Figure, PeakRSS, percentile
from bench.report import render
from bench.sampler import Sampler
from bench.suite import (
    EPICBOX_BATCH,
    IN_PROCESS,
    LAT_ECHO,
    LAT_EPICBOX,
    LAT_FRESH,
    LAT_HEALTHZ,
    LAT_LLM_SANDBOX,
    LAT_RUN_CHECK,
    LAT_SCORE,
    LAT_SCORE_BUILTIN,
    LAT_SCORE_CONCURRENT,
    LATENCY,
    QUICK,
    REUSE_CHECK,
    RUNTIMES,
    SCORE_TABLE,
    SERVICE,
    SERVICE_RUN,
    THROUGHPUT,
    Config,
    Results,
)
from bench.targets import targets


@pytest.mark.parametrize(
    ("samples", "q", "expected"),
    [([1.0], 95, 1.0), ([1.0, 2.0, 3.0, 4.0, 5.0], 50, 3.0), ([0.0, 10.0], 95, 9.5)],
)
def test_percentile(samples: list[float], q: float, expected: float) -> None:
    assert percentile(samples, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)


def test_peak_rss_sees_an_allocation() -> None:
    with PeakRSS() as memory:
        block = bytearray(64 * 1024 * 1024)
        block[::4096] = b"x" * len(block[::4096])
        del block
    assert memory.peak_mb >= memory.before_mb + 50


def test_workload_is_deterministic_and_checks_run_in_process() -> None:
    assert workload.rows(2500) == workload.rows(2500)
    assert len({id(r) for r in workload.rows(2500)}) == workload.DISTINCT_ROWS
    for kind, source in workload.CHECKS.items():
        evaluate = workload.load(source)
        row = workload.distinct_rows()[0]
        score = evaluate(**{p: row[p] for p in workload.PARAMS[kind]})
        assert isinstance(score, bool | float)


def test_quick_flag_and_overrides() -> None:
    config, out, chart = parse(["--quick", "--sizes", "100:1_000", "--no-peers", "--out", "x"])
    assert config.sizes == (100, 1000)
    assert config.calls == QUICK.calls
    assert not config.peers
    assert not config.distributed
    assert out == Path("x")
    assert chart
    full, _, _ = parse([])
    assert full.calls >= 200
    assert full.sizes == (10_000, 100_000, 1_000_000)
    assert [full.repeats(n) for n in full.sizes] == [5, 3, 1]
    assert full.distributed
    assert not parse(["--no-distributed"])[0].distributed
    assert parse(["--never-max-rows", "10000"])[0].never_max_rows == 10_000


def test_bad_sizes_name_the_form(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--sizes", "ten"])
    assert "give row counts like 10000:100000" in capsys.readouterr().err


def _results(fast: bool) -> Results:
    """Figures shaped like a real run; ``fast`` makes scorebox meet every target."""
    results = Results(Config(sizes=(100_000, 1_000_000)))
    k = 1.0 if fast else 20.0
    add = results.add
    add(Figure(LATENCY, LAT_RUN_CHECK, "ms", "latency", [5.0 * k] * 199 + [9.0 * k]))
    add(Figure(LATENCY, LAT_ECHO, "ms", "latency", [1.0] * 200))
    add(Figure(LATENCY, LAT_SCORE_BUILTIN, "ms", "latency", [1.5 * k] * 200))
    add(Figure(LATENCY, LAT_SCORE, "ms", "latency", [3.0 * k] * 190 + [20.0 * k] * 10))
    add(
        Figure(
            LATENCY, LAT_SCORE_CONCURRENT, "ms", "latency", [30.0] * 400, {"rate_per_s": 300 / k}
        )
    )
    add(Figure(LATENCY, LAT_FRESH, "ms", "latency", [250.0] * 200))
    add(Figure(LATENCY, LAT_EPICBOX, "ms", "latency", [200.0] * 200))
    add(Figure(LATENCY, LAT_LLM_SANDBOX, "ms", "latency", [90.0] * 200))
    for kind, base_s, own_s, peer_s in (
        ("trivial", 0.1, 0.3 * k, 3.0),
        ("realistic", 10.0, 6.0 * k, 15.0),
    ):
        for rows, scale in ((100_000, 1), (1_000_000, 10)):
            extra = {"kind": kind, "rows": rows}
            add(
                Figure(
                    THROUGHPUT,
                    IN_PROCESS,
                    "s",
                    "rate",
                    [base_s * scale] * 3,
                    extra | {"peak_rss_mb": 80.0},
                )
            )
            own = [own_s * scale * f for f in (0.9, 1.0, 1.1)]
            cpu = {"host_cpu_us_per_row": 2.0 * k}
            add(
                Figure(
                    THROUGHPUT, REUSE_CHECK, "s", "rate", own, extra | {"peak_rss_mb": 300.0} | cpu
                )
            )
            table = [s * (0.5 if fast else 1.0) for s in own]
            add(
                Figure(
                    THROUGHPUT,
                    SCORE_TABLE,
                    "s",
                    "rate",
                    table,
                    extra | {"peak_rss_mb": 150.0 * k} | cpu,
                )
            )
            add(Figure(THROUGHPUT, EPICBOX_BATCH, "s", "rate", [peer_s * scale] * 3, extra))
    service = {"kind": "trivial", "rows": 100_000, "server_cpu_us_per_row": 4.0 * k}
    add(Figure(SERVICE, SERVICE_RUN, "s", "rate", [0.5 * k], service))
    results.distributed = {
        "rows": 100_000,
        "cores": 2,
        "table": [],
        "per_core_rows_per_s": {"trivial": 20_000.0 / k, "realistic": 5_000.0},
        "embedded_per_core_rows_per_s": {"trivial": 21_000.0, "realistic": 5_200.0},
    }
    for runtime, cold in (("runc", 250.0), ("runsc", 450.0)):
        add(
            Figure(
                RUNTIMES, "cold start, 1 row", "ms", "latency", [cold] * 50, {"runtime": runtime}
            )
        )
    results.machine = {
        "date": "today",
        "cores": 2,
        "load_start": (1.0, 1.0, 1.0),
        "load_end": (2.0, 1.0, 1.0),
    }
    return results


def _as_previous(results: Results, commit: str) -> dict[str, object]:
    """``results`` as the run before reads it back from its latest.json."""
    return {"machine": {"commit": commit}, "figures": [f.to_dict() for f in results.figures]}


def test_targets_met_when_scorebox_is_fast() -> None:
    results = _results(fast=True)
    results.previous = _as_previous(_results(fast=True), "abc1234")
    met = {t.name: t.met for t in targets(results)}
    assert all(met.values()), met


def test_a_line_slower_than_the_run_before_is_named_with_how_much() -> None:
    results = _results(fast=False)
    results.previous = _as_previous(_results(fast=True), "abc1234")
    found = next(t for t in targets(results) if t.name.startswith("no line of scorebox"))
    assert found.met is False
    assert "commit abc1234" in found.name
    assert f"{LAT_RUN_CHECK} +1900%" in found.measured
    assert f"{SCORE_TABLE} (trivial, 100,000) +3900%" in found.measured
    assert EPICBOX_BATCH not in found.measured  # the peers' lines did not move
    assert "moved by a median of +0%" in found.measured
    # within the tolerance is not slower
    again = _results(fast=True)
    again.previous = _as_previous(_results(fast=True), "abc1234")
    for figure in again.figures:
        slower = 1.5 if figure.name in (EPICBOX_BATCH, LAT_EPICBOX, LAT_ECHO) else 1.05
        figure.samples[:] = [v * slower for v in figure.samples]
    found = next(t for t in targets(again) if t.name.startswith("no line of scorebox"))
    assert found.met is True  # the peers and the floor are the machine's, not scorebox's
    assert found.measured.startswith("none of ")
    assert "moved by a median of +50%" in found.measured
    assert "within the spread" not in found.measured


def _repeats(results: Results, samples: list[float]) -> Figure:
    """The score_table line of 100,000 trivial rows of ``results``, its repeats set."""
    figure = next(
        f
        for f in results.figures
        if f.name == SCORE_TABLE and f.extra.get("kind") == "trivial" and f.extra["rows"] == 100_000
    )
    figure.samples[:] = samples
    return figure


def test_a_median_slower_within_the_repeats_spread_is_named_but_not_counted() -> None:
    before = _results(fast=True)
    _repeats(before, [1.0, 0.6, 1.4])
    results = _results(fast=True)
    _repeats(results, [1.3, 0.9, 1.6])  # the median 30% slower, the fastest repeat not
    results.previous = _as_previous(before, "abc1234")
    found = next(t for t in targets(results) if t.name.startswith("no line of scorebox"))
    assert found.met is True
    assert found.measured.startswith("none of ")
    assert f"within the spread: {SCORE_TABLE} (trivial, 100,000) +30%" in found.measured
    # every repeat slower than every one before is slower, however wide the spread
    _repeats(results, [1.5, 1.45, 2.4])
    found = next(t for t in targets(results) if t.name.startswith("no line of scorebox"))
    assert found.met is False
    assert f"{SCORE_TABLE} (trivial, 100,000) +50%" in found.measured
    assert "within the spread" not in found.measured
    # a latency line's median is of many calls: its spread is not the run's noise
    latency = next(f for f in results.figures if f.kind == "latency" and f.name == LAT_RUN_CHECK)
    latency.samples[:] = [v * 1.2 for v in latency.samples]
    _repeats(results, [1.0, 0.6, 1.4])
    found = next(t for t in targets(results) if t.name.startswith("no line of scorebox"))
    assert found.met is False
    assert f"{LAT_RUN_CHECK} +20%" in found.measured


def test_targets_missed_when_scorebox_is_slow() -> None:
    found = targets(_results(fast=False))
    missed = [t.name for t in found if t.met is False]
    assert any("/v1/score warm code check, 1 row" in name for name in missed)
    assert any("faster peer's one-call loop" in name for name in missed)
    assert any("service path" in name for name in missed)
    assert any("1,000,000 rows through engine.score_table" in name for name in missed)
    assert any("distributed" in name for name in missed)
    peers = next(t for t in found if "peers" in t.name)
    assert peers.met is False
    assert "behind on" in peers.measured


def test_targets_not_measured_say_so() -> None:
    assert all(t.met is None for t in targets(Results(Config())))


def _spin(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


def test_sampler_sees_a_busy_thread_and_not_an_idle_one() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=_spin, args=(stop,))
    idle = threading.Thread(target=stop.wait)
    with Sampler(interval=0.002) as sampler:
        busy.start()
        idle.start()
        time.sleep(0.3)
        stop.set()
        busy.join()
        idle.join()
    names = [name for name, _, _ in sampler.profile.top(50)]
    assert any(name.startswith("_spin ") for name in names), names
    assert sampler.profile.idle > 0
    assert not any("threading.py" in name for name in sampler.profile.self_counts)


def test_request_path_targets_are_judged_against_the_echo_of_the_same_run() -> None:
    results = Results(Config())
    add = results.add
    add(Figure(LATENCY, LAT_ECHO, "ms", "latency", [1.0] * 100))
    add(Figure(LATENCY, LAT_HEALTHZ, "ms", "latency", [0.8] * 100))
    add(Figure(LATENCY, LAT_SCORE_BUILTIN, "ms", "latency", [1.5] * 100))
    add(Figure(LATENCY, LAT_SCORE, "ms", "latency", [4.5] * 100))
    add(Figure(LATENCY, LAT_SCORE_CONCURRENT, "ms", "latency", [30.0], {"rate_per_s": 320.0}))
    met = {t.name: (t.met, t.measured) for t in targets(results)}
    builtin = met["/v1/score built-in, 1 row: p50 ≤ bare FastAPI echo + 1 ms"]
    assert builtin == (True, "echo + 0.50 ms (1.50 ms against 1.00 ms)")
    code = met["/v1/score warm code check, 1 row: p50 ≤ bare FastAPI echo + 3 ms"]
    assert code[0] is False
    assert met["/v1/score, 8 concurrent clients: ≥ 300 requests/s (request path)"][0] is True
    assert "| GET /healthz (HTTP) |" in render(results)


def test_the_online_figures_have_their_section_with_goals() -> None:
    results = _results(fast=True)
    results.online["ingest"] = {
        "database": "sqlite",
        "clients": 4,
        "batches": 200,
        "batch_spans": 512,
        "gzip_bytes_per_batch": 40_000,
        "sent_spans": 102_400,
        "stored_spans": 102_400,
        "seconds": 18.3,
        "spans_per_s": 5_601,
        "batch_ms_p50": 330,
        "batch_ms_p95": 610,
        "cores": 2,
        "load_average_1m_at_end": 1.9,
    }
    results.online["scoring"] = {
        "rate": 200,
        "seconds": 30,
        "spans": 6000,
        "freshness_p50_s": 0.8,
        "freshness_p95_s": 2.4,
        "freshness_max_s": 3.1,
        "measured_spans": 6000,
        "backfill_rows_per_s": 900,
        "run_rows_per_s": 1200,
        "cores": 2,
        "load_average_1m_at_end": 1.5,
    }
    text = render(results)
    assert "## OTLP ingestion" in text and "| 102,400 | 102,400 | 18.3 | 5,601 |" in text
    assert "| 610 ms | — |" in text  # a result from before the server's CPU was measured
    results.online["ingest"]["server_cpu_us_per_span"] = 203.4
    assert "| 610 ms | 203 µs |" in render(results)
    assert "## Online scoring" in text
    assert "| freshness p50 (arrival to both scores readable) | 0.80 s | ≤ 1 s |" in text
    assert "| backfill / run | 0.75x | — |" in text
    assert "## Online scoring" not in render(_results(fast=True))  # not measured: no section


def test_the_per_core_lines_give_medians_and_each_runs_ratio() -> None:
    from bench.bench_distributed import PerCore, render_per_core

    rounds = {"trivial": [[9_000.0, 10_000.0], [7_000.0, 10_000.0], [9_500.0, 10_000.0]]}
    figures = PerCore(rounds).figures()
    assert figures == {
        "per_core_rows_per_s": {"trivial": 9_000.0},
        "embedded_per_core_rows_per_s": {"trivial": 10_000.0},
        "per_core_rounds": rounds,
    }
    text = render_per_core(figures)
    assert "medians of 3 alternating runs" in text
    assert "9,000 rows/s; embedded with one slot 10,000 rows/s (90% of it)" in text
    assert "each run's ratio 70% to 95%" in text
    # figures of one run each (an older report) read as before
    del figures["per_core_rounds"]
    assert "alternating" not in render_per_core(figures)
