"""The targets of ``python -m bench``: each met, missed or not measured in one run."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.cells import (
    PEER_BATCHES,
    TIMES,
    batch_line,
    figure_of,
    ms,
    rate,
)
from bench.measure import Figure
from bench.suite import (
    EPICBOX_BATCH,
    IN_PROCESS,
    LAT_ECHO,
    LAT_EPICBOX,
    LAT_GATEWAY_DIRECT,
    LAT_IN_PROCESS,
    LAT_LLM_SANDBOX,
    LAT_RUN_CHECK,
    LAT_SCORE,
    LAT_SCORE_BUILTIN,
    LAT_SCORE_CONCURRENT,
    LATENCY,
    LLM_SANDBOX_BATCH,
    SCORE_TABLE,
    SERVICE,
    SERVICE_RUN,
    THROUGHPUT,
    Results,
)

SERVICE_CPU_US = 5.0  # host CPU per row on the service path, at most
DISTRIBUTED_SHARE = 0.9  # a worker's rows/s per core, at least this share of embedded's


@dataclass
class Target:
    """One target and what this run measured for it."""

    name: str
    measured: str
    met: bool | None  # None: not measured in this run


def request_path_targets(results: Results) -> list[Target]:
    """The request path's targets, as the p50 over the bare FastAPI echo's of the same run
    (only when the echo was measured: older results have no such line)."""
    echo = figure_of(results, LATENCY, LAT_ECHO)
    if echo is None:
        return []
    out: list[Target] = []
    for name, line, allowed in (
        ("built-in", LAT_SCORE_BUILTIN, 1.0),
        ("warm code check", LAT_SCORE, 3.0),
    ):
        title = f"/v1/score {name}, 1 row: p50 ≤ bare FastAPI echo + {allowed:g} ms"
        figure = figure_of(results, LATENCY, line)
        if figure is None:
            out.append(Target(title, "not measured", None))
            continue
        added = figure.median - echo.median
        measured = f"echo + {added:.2f} ms ({ms(figure.median)} against {ms(echo.median)})"
        out.append(Target(title, measured, added <= allowed))
    many = figure_of(results, LATENCY, LAT_SCORE_CONCURRENT)
    title = "/v1/score, 8 concurrent clients: ≥ 300 requests/s (request path)"
    if many is None:
        out.append(Target(title, "not measured", None))
    else:
        per_s = float(many.extra["rate_per_s"])
        out.append(Target(title, f"{per_s:,.0f} req/s", per_s >= 300))
    return out


def _missing(name: str) -> Target:
    return Target(name, "not measured", None)


def peer_targets(results: Results) -> list[Target]:
    """Trivial check, 100,000 and 1,000,000 rows: score_table ≥ the faster peer's one call."""
    out: list[Target] = []
    for size in (100_000, 1_000_000):
        name = f"trivial, {size:,} rows: {SCORE_TABLE} rows/s ≥ the faster peer's one-call loop"
        own = figure_of(results, THROUGHPUT, SCORE_TABLE, kind="trivial", rows=size)
        peers = [
            f
            for f in (
                figure_of(results, THROUGHPUT, p, kind="trivial", rows=size) for p in PEER_BATCHES
            )
            if f is not None
        ]
        if own is None or not peers:
            out.append(_missing(name))
            continue
        best = max(peers, key=rate)
        out.append(
            Target(
                name,
                f"{rate(own):,.0f} rows/s against {rate(best):,.0f} ({best.name})",
                rate(own) >= rate(best),
            )
        )
    return out


def service_target(results: Results) -> Target:
    name = f"host CPU per row on the service path (POST /v1/runs) ≤ {SERVICE_CPU_US:g} µs"
    run = figure_of(results, SERVICE, SERVICE_RUN)
    if run is None:
        return _missing(name)
    cpu = float(run.extra["server_cpu_us_per_row"])
    measured = f"{cpu:.1f} µs/row (server process, {int(run.extra['rows']):,} rows)"
    return Target(name, measured, cpu <= SERVICE_CPU_US)


def distributed_target(results: Results) -> Target:
    """A worker's rows/s per core within 10% of embedded's (one slot each), every kind."""
    name = (
        f"distributed: a worker's rows/s per core within {1 - DISTRIBUTED_SHARE:.0%} "
        "of embedded (one slot each)"
    )
    found = results.distributed or {}
    worker = found.get("per_core_rows_per_s") or {}
    embedded = found.get("embedded_per_core_rows_per_s") or {}
    kinds = [k for k in worker if embedded.get(k)]
    if not kinds:
        return _missing(name)
    shares = {k: float(worker[k]) / float(embedded[k]) for k in kinds}
    measured = "; ".join(
        f"{k}: {float(worker[k]):,.0f} against {float(embedded[k]):,.0f} rows/s ({shares[k]:.0%})"
        for k in kinds
    )
    return Target(name, measured, all(v >= DISTRIBUTED_SHARE for v in shares.values()))


def targets(results: Results) -> list[Target]:
    """The targets, each met, missed or not measured, from the figures of this run."""
    out = peer_targets(results)
    out.append(service_target(results))
    name = f"realistic, 100,000 rows: {SCORE_TABLE} ≥ 1.5{TIMES} the in-process loop"
    base = figure_of(results, THROUGHPUT, IN_PROCESS, kind="realistic", rows=100_000)
    own = figure_of(results, THROUGHPUT, SCORE_TABLE, kind="realistic", rows=100_000)
    if base and own:
        ratio = rate(own) / rate(base)
        out.append(Target(name, f"{ratio:.2f}{TIMES}", ratio >= 1.5))
    else:
        out.append(_missing(name))
    name = "trivial, 1,000,000 rows through engine.score_table: < 10 s, peak RSS < 300 MB"
    million = figure_of(results, THROUGHPUT, SCORE_TABLE, kind="trivial", rows=1_000_000)
    if million:
        peak = float(million.extra.get("peak_rss_mb", 0))
        out.append(
            Target(
                name,
                f"{million.median:.1f} s, peak RSS {peak:,.0f} MB",
                million.median < 10 and 0 < peak < 300,
            )
        )
    else:
        out.append(_missing(name))
    out += request_path_targets(results)
    out.append(distributed_target(results))
    out.append(beats_peers(results))
    out.append(not_slower(results))
    return out


def beats_peers(results: Results) -> Target:
    """scorebox faster than both peers on every comparable line of the table (batch rows:
    score_table where measured)."""
    name = "faster than both peers on every line"
    losses: list[str] = []
    compared = 0
    mine = [figure_of(results, LATENCY, LAT_RUN_CHECK), figure_of(results, LATENCY, LAT_SCORE)]
    for peer_name in (LAT_EPICBOX, LAT_LLM_SANDBOX):
        peer = figure_of(results, LATENCY, peer_name)
        for own in mine:
            if peer is None or own is None:
                continue
            compared += 1
            if own.median >= peer.median:
                losses.append(f"{own.name} vs {peer_name}")
    for figure in results.figures:
        if figure.section != THROUGHPUT or figure.name not in (EPICBOX_BATCH, LLM_SANDBOX_BATCH):
            continue
        own = figure_of(
            results,
            THROUGHPUT,
            batch_line(results),
            kind=figure.extra["kind"],
            rows=figure.extra["rows"],
        )
        if own is None:
            continue
        compared += 1
        if own.median >= figure.median:
            losses.append(f"{figure.extra['kind']} {figure.extra['rows']:,} rows vs {figure.name}")
    if not compared:
        return Target(name, "not measured", None)
    if losses:
        return Target(
            name,
            f"{compared - len(losses)} of {compared} lines; behind on: " + "; ".join(losses),
            False,
        )
    return Target(name, f"all {compared} lines", True)


#: A line is slower than before when its median passed the last run's by more than this
#: share (single figures on a shared 2-core machine swing by tens of percent).
SLOWER_SHARE = 0.10
#: A line of at least this many repeats in both runs is slower only when, besides, all its
#: repeats are: its fastest slower than the last run's slowest. A median that moved less
#: than the repeats of either run spread is noise (10,000 rows through ``score_table`` run
#: in 60-100 ms, and repeats of one image spread from 92,000 to 174,000 rows/s).
SPREAD_REPEATS = 3
#: What makes two figures the same line across runs, besides section and name.
SAME_LINE_KEYS = ("kind", "rows", "runtime")


#: Lines that are not scorebox's own (the peers, the in-process floor, a bare FastAPI
#: echo, direct HTTP to the scripted model): their change between runs is the machine's.
REFERENCE_LINES = frozenset(
    {
        IN_PROCESS,
        LAT_IN_PROCESS,
        LAT_ECHO,
        LAT_GATEWAY_DIRECT,
        LAT_EPICBOX,
        LAT_LLM_SANDBOX,
        *PEER_BATCHES,
    }
)


def line_moves(results: Results) -> list[tuple[Figure, float, bool]]:
    """Each figure with its median's change against the same line of ``results.previous``
    (0.1 is 10% slower: every figure is a time, ms a call or s a run) and whether the change
    stands out of the repeats' spread: always for a latency line (its median is of many
    calls) or one of fewer than SPREAD_REPEATS repeats; otherwise only when every repeat of
    this run took longer than every repeat of the last."""
    before = (results.previous or {}).get("figures") or []

    def line(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f.get("section"), f.get("name"), *(f.get(k) for k in SAME_LINE_KEYS))

    index = {line(f): f for f in before}
    out: list[tuple[Figure, float, bool]] = []
    for figure in results.figures:
        old = index.get(line(figure.to_dict()))
        if old is not None and old.get("median"):
            change = figure.median / float(old["median"]) - 1
            repeats = (
                figure.kind != "latency"
                and min(len(figure.samples), int(old.get("n") or 0)) >= SPREAD_REPEATS
            )
            clear = not repeats or figure.low > float(old.get("max") or 0)
            out.append((figure, change, clear))
    return out


def line_label(figure: Figure) -> str:
    """A figure's name with what tells its line apart (check, rows, runtime)."""
    where = ", ".join(
        f"{figure.extra[k]:,}" if isinstance(figure.extra[k], int) else str(figure.extra[k])
        for k in SAME_LINE_KEYS
        if k in figure.extra
    )
    return f"{figure.name} ({where})" if where else figure.name


def not_slower(results: Results) -> Target:
    """No line of scorebox's slower than the same line of the run before (by SLOWER_SHARE,
    and out of its repeats' spread: :func:`line_moves`); the reference lines' median change
    beside it says how much the machine moved, and the lines slower in the median alone
    are named as well."""
    commit = ((results.previous or {}).get("machine") or {}).get("commit") or "?"
    name = (
        f"no line of scorebox's slower than before (the last run, commit {commit}; "
        f"by > {SLOWER_SHARE:.0%} in the median and, for a line of repeats, in every repeat)"
    )
    moves = line_moves(results)
    own = [(f, c, clear) for f, c, clear in moves if f.name not in REFERENCE_LINES]
    if not own:
        return Target("no line of scorebox's slower than before", "no earlier run to compare", None)
    slower = [f"{line_label(f)} +{c:.0%}" for f, c, clear in own if c > SLOWER_SHARE and clear]
    noise = [f"{line_label(f)} +{c:.0%}" for f, c, clear in own if c > SLOWER_SHARE and not clear]
    reference = [c for f, c, _ in moves if f.name in REFERENCE_LINES]
    machine = (
        f" (the reference lines, peers and floors, moved by a median of "
        f"{statistics.median(reference):+.0%})"
        if reference
        else ""
    )
    within = (
        f"; slower in the median but not in every repeat, within the spread: {'; '.join(noise)}"
        if noise
        else ""
    )
    if slower:
        measured = f"{len(slower)} of {len(own)} lines slower{machine}: " + "; ".join(slower)
        return Target(name, measured + within, False)
    return Target(name, f"none of {len(own)} lines{machine}{within}", True)
