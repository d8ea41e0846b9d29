"""``latest.md`` (tables, targets), ``latest.png`` (chart) and ``latest.json`` from one run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.measure import Figure
from bench.suite import (
    EPICBOX_BATCH,
    IN_PROCESS,
    LAT_ECHO,
    LAT_EPICBOX,
    LAT_FRESH,
    LAT_GATEWAY,
    LAT_GATEWAY_DIRECT,
    LAT_HEALTHZ,
    LAT_IN_PROCESS,
    LAT_LLM_SANDBOX,
    LAT_RUN_CHECK,
    LAT_SCORE,
    LAT_SCORE_BUILTIN,
    LAT_SCORE_CONCURRENT,
    LATENCY,
    LLM_SANDBOX_BATCH,
    REUSE_CHECK,
    REUSE_NEVER,
    RUNTIMES,
    SCORE_TABLE,
    SERVICE,
    SERVICE_RUN,
    THROUGHPUT,
    Results,
)

SYSTEMS = (IN_PROCESS, REUSE_CHECK, SCORE_TABLE, REUSE_NEVER, EPICBOX_BATCH, LLM_SANDBOX_BATCH)
PEER_BATCHES = (EPICBOX_BATCH, LLM_SANDBOX_BATCH)
#: the lines whose host CPU per row is reported
HOST_CPU_SYSTEMS = (REUSE_CHECK, SCORE_TABLE)
SERVICE_CPU_US = 5.0  # host CPU per row on the service path, at most
DISTRIBUTED_SHARE = 0.9  # a worker's rows/s per core, at least this share of embedded's
LATENCY_ORDER = (
    LAT_IN_PROCESS,
    LAT_RUN_CHECK,
    LAT_ECHO,
    LAT_HEALTHZ,
    LAT_SCORE_BUILTIN,
    LAT_SCORE,
    LAT_SCORE_CONCURRENT,
    LAT_FRESH,
    LAT_EPICBOX,
    LAT_LLM_SANDBOX,
    LAT_GATEWAY,
    LAT_GATEWAY_DIRECT,
)
COMMAND = "python -m bench"
TIMES = "\u00d7"  # the multiplication sign
DASH = "\u2013"  # an en dash, for ranges and empty cells


def ms(value: float) -> str:
    if value < 0.1:
        return f"{value * 1000:.1f} µs"
    if value < 10:
        return f"{value:.2f} ms"
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def rate(figure: Figure) -> float:
    """Rows per second at the median of a throughput figure."""
    return float(figure.extra["rows"]) / figure.median


def rate_cell(figure: Figure | None) -> str:
    if figure is None:
        return DASH
    rows = float(figure.extra["rows"])
    cell = f"{rate(figure):,.0f}"
    if len(figure.samples) > 1:
        cell += f" ({rows / figure.high:,.0f}{DASH}{rows / figure.low:,.0f})"
    return cell


def us_per_row(figure: Figure) -> float:
    return figure.median / float(figure.extra["rows"]) * 1e6


@dataclass
class Target:
    """One target and what this run measured for it."""

    name: str
    measured: str
    met: bool | None  # None: not measured in this run


def _figure(results: Results, section: str, name: str, **extra: Any) -> Figure | None:
    return results.find(section, name, **extra)


def scorebox_line(results: Results) -> str:
    """The throughput line targets are judged on: REUSE=check, or the only one there is."""
    if any(f.section == THROUGHPUT and f.name == REUSE_CHECK for f in results.figures):
        return REUSE_CHECK
    return REUSE_NEVER


def request_path_targets(results: Results) -> list[Target]:
    """The request path's targets, as the p50 over the bare FastAPI echo's of the same run
    (only when the echo was measured: older results have no such line)."""
    echo = _figure(results, LATENCY, LAT_ECHO)
    if echo is None:
        return []
    out: list[Target] = []
    for name, line, allowed in (
        ("built-in", LAT_SCORE_BUILTIN, 1.0),
        ("warm code check", LAT_SCORE, 3.0),
    ):
        title = f"/v1/score {name}, 1 row: p50 ≤ bare FastAPI echo + {allowed:g} ms"
        figure = _figure(results, LATENCY, line)
        if figure is None:
            out.append(Target(title, "not measured", None))
            continue
        added = figure.median - echo.median
        measured = f"echo + {added:.2f} ms ({ms(figure.median)} against {ms(echo.median)})"
        out.append(Target(title, measured, added <= allowed))
    many = _figure(results, LATENCY, LAT_SCORE_CONCURRENT)
    title = "/v1/score, 8 concurrent clients: ≥ 300 requests/s (request path)"
    if many is None:
        out.append(Target(title, "not measured", None))
    else:
        per_s = float(many.extra["rate_per_s"])
        out.append(Target(title, f"{per_s:,.0f} req/s", per_s >= 300))
    return out


def batch_line(results: Results) -> str:
    """scorebox's line for many rows: score_table where measured, else :func:`scorebox_line`."""
    if any(f.section == THROUGHPUT and f.name == SCORE_TABLE for f in results.figures):
        return SCORE_TABLE
    return scorebox_line(results)


def _missing(name: str) -> Target:
    return Target(name, "not measured", None)


def peer_targets(results: Results) -> list[Target]:
    """Trivial check, 100,000 and 1,000,000 rows: score_table ≥ the faster peer's one call."""
    out: list[Target] = []
    for size in (100_000, 1_000_000):
        name = f"trivial, {size:,} rows: {SCORE_TABLE} rows/s ≥ the faster peer's one-call loop"
        own = _figure(results, THROUGHPUT, SCORE_TABLE, kind="trivial", rows=size)
        peers = [
            f
            for f in (
                _figure(results, THROUGHPUT, p, kind="trivial", rows=size) for p in PEER_BATCHES
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
    run = _figure(results, SERVICE, SERVICE_RUN)
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
    base = _figure(results, THROUGHPUT, IN_PROCESS, kind="realistic", rows=100_000)
    own = _figure(results, THROUGHPUT, SCORE_TABLE, kind="realistic", rows=100_000)
    if base and own:
        ratio = rate(own) / rate(base)
        out.append(Target(name, f"{ratio:.2f}{TIMES}", ratio >= 1.5))
    else:
        out.append(_missing(name))
    name = "trivial, 1,000,000 rows through engine.score_table: < 10 s, peak RSS < 300 MB"
    million = _figure(results, THROUGHPUT, SCORE_TABLE, kind="trivial", rows=1_000_000)
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
    return out


def beats_peers(results: Results) -> Target:
    """scorebox faster than both peers on every comparable line of the table (batch rows:
    score_table where measured)."""
    name = "faster than both peers on every line"
    losses: list[str] = []
    compared = 0
    mine = [_figure(results, LATENCY, LAT_RUN_CHECK), _figure(results, LATENCY, LAT_SCORE)]
    for peer_name in (LAT_EPICBOX, LAT_LLM_SANDBOX):
        peer = _figure(results, LATENCY, peer_name)
        for own in mine:
            if peer is None or own is None:
                continue
            compared += 1
            if own.median >= peer.median:
                losses.append(f"{own.name} vs {peer_name}")
    for figure in results.figures:
        if figure.section != THROUGHPUT or figure.name not in (EPICBOX_BATCH, LLM_SANDBOX_BATCH):
            continue
        own = _figure(
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


def render(results: Results) -> str:
    """The whole ``latest.md``."""
    m = results.machine
    load_start = m.get("load_start", (0, 0, 0))
    load_end = m.get("load_end", (0, 0, 0))
    lines = [
        "# scorebox benchmark",
        "",
        f"`{COMMAND}` on {m.get('date', '?')}, commit {m.get('commit') or '?'}: "
        f"{m.get('cores', '?')} cores, {m.get('memory_gb', '?')} GB, "
        f"Python {m.get('python', '?')}, "
        f"load average {load_start[0]:.1f} at the start and {load_end[0]:.1f} at the end "
        f"(the machine is shared), {m.get('seconds', 0) / 60:.0f} minutes in all. Every figure "
        "below comes from this one run.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "| --- | --- | --- |",
    ]
    for target in targets(results):
        met = {True: "yes", False: "**no**", None: "not measured"}[target.met]
        lines.append(f"| {target.name} | {target.measured} | {met} |")
    if batch_line(results) != SCORE_TABLE and any(f.section == THROUGHPUT for f in results.figures):
        lines += [
            "",
            f"The peers are compared with {batch_line(results)} on batch rows: this run has "
            f"no {SCORE_TABLE} line.",
        ]
    lines += [
        "",
        "## Single-row latency",
        "",
        f"One row of the trivial check (`{m.get('checks', {}).get('trivial', '')}`), "
        f"{results.config.calls} sequential calls after a warm-up unless said otherwise.",
        "",
        "| path | p50 | p95 | calls | vs a container per call (p50) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    fresh = _figure(results, LATENCY, LAT_FRESH)
    for name in LATENCY_ORDER:
        figure = _figure(results, LATENCY, name)
        if figure is None:
            continue
        label = name
        if name == LAT_SCORE_CONCURRENT:
            label += f": **{float(figure.extra['rate_per_s']):,.0f} requests/s**"
        if name == LAT_GATEWAY:
            label += f": **{float(figure.extra['added_ms_p50']):.2f} ms added a call**"
        speed = f"{fresh.median / figure.median:,.1f}{TIMES}" if fresh else DASH
        cells = [label, ms(figure.median), ms(figure.p95), str(len(figure.samples)), speed]
        lines.append("| " + " | ".join(cells) + " |")
    lines += throughput_tables(results)
    lines += service_table(results)
    lines += runtime_table(results)
    if results.distributed:
        from bench import bench_distributed

        lines += ["", "## Distributed mode (Celery on Redis, PostgreSQL)", ""]
        lines.append(bench_distributed.render(results.distributed))
    lines += online_tables(results)
    lines += profile_table(results)
    lines += notes(results)
    return "\n".join(lines) + "\n"


def online_tables(results: Results) -> list[str]:
    """OTLP ingestion and online scoring, each as its own bench module words it."""
    from bench import bench_ingest, bench_online

    out: list[str] = []
    for key, module in (("ingest", bench_ingest), ("scoring", bench_online)):
        found = results.online.get(key)
        if found:
            text = module.report(found)
            out += ["", "#" + text.lstrip()]  # its heading one level down
    return out


def throughput_tables(results: Results) -> list[str]:
    lines: list[str] = []
    kinds = list(dict.fromkeys(f.extra["kind"] for f in results.figures if f.section == THROUGHPUT))
    sizes = sorted({int(f.extra["rows"]) for f in results.figures if f.section == THROUGHPUT})
    if not kinds:
        return lines
    lines += [
        "",
        "## Throughput",
        "",
        f"Rows per second, median of the repeats (min{DASH}max in brackets); the peers run the "
        "same check as a loop inside one call (no per-row isolation, status or limit). "
        f"Repeats: {', '.join(f'{results.config.repeats(s)} at {s:,}' for s in sizes)}.",
    ]
    checks = results.machine.get("checks", {})
    for kind in kinds:
        present = [
            s for s in SYSTEMS if any(results.find(THROUGHPUT, s, kind=kind, rows=n) for n in sizes)
        ]
        lines += ["", f"**{kind}** (`{checks.get(kind, '')}`)", ""]
        lines.append("| rows | " + " | ".join(present) + " |")
        lines.append("| ---: |" + " ---: |" * len(present))
        for size in sizes:
            cells = [rate_cell(results.find(THROUGHPUT, s, kind=kind, rows=size)) for s in present]
            lines.append(f"| {size:,} | " + " | ".join(cells) + " |")
    memory_systems = (REUSE_CHECK, SCORE_TABLE, IN_PROCESS)
    lines += [
        "",
        "Cost per row (µs of wall time, median) as rows grow; the CPU this (the host) process "
        f"spent per row (µs, user and system, every thread: `time.process_time()`) for "
        f"{' and '.join(HOST_CPU_SYSTEMS)}; and the peak resident memory of the host process "
        "while scoring:",
        "",
        "| check | rows | "
        + " | ".join(SYSTEMS)
        + " | "
        + " | ".join(f"host CPU µs/row, {s}" for s in HOST_CPU_SYSTEMS)
        + " | "
        + " | ".join(f"peak RSS, {s}" for s in memory_systems)
        + " |",
        "| --- | ---: |" + " ---: |" * (len(SYSTEMS) + len(HOST_CPU_SYSTEMS) + len(memory_systems)),
    ]
    for kind in kinds:
        for size in sizes:
            cells = []
            for system in SYSTEMS:
                figure = results.find(THROUGHPUT, system, kind=kind, rows=size)
                cells.append(f"{us_per_row(figure):,.1f}" if figure else DASH)
            for system in HOST_CPU_SYSTEMS:
                figure = results.find(THROUGHPUT, system, kind=kind, rows=size)
                cpu = figure.extra.get("host_cpu_us_per_row") if figure else None
                cells.append(f"{cpu:,.2f}" if cpu is not None else DASH)
            for system in memory_systems:
                figure = results.find(THROUGHPUT, system, kind=kind, rows=size)
                peak = figure.extra.get("peak_rss_mb") if figure else None
                cells.append(f"{peak:,.0f} MB" if peak else DASH)
            lines.append(f"| {kind} | {size:,} | " + " | ".join(cells) + " |")
    return lines


def service_table(results: Results) -> list[str]:
    """The service path: one run of the trivial check through ``POST /v1/runs``."""
    run = _figure(results, SERVICE, SERVICE_RUN)
    if run is None:
        return []
    rows = int(run.extra["rows"])
    cpu = float(run.extra["server_cpu_us_per_row"])
    return [
        "",
        f"## Service path: {rows:,} rows through POST /v1/runs",
        "",
        "One run of the trivial check on a real `scorebox serve` (loopback port, SQLite in a "
        "temporary data directory), after a one-row run; rows/s from the submit until "
        "`GET /v1/runs/{id}` says succeeded, and the CPU of the server process (utime + stime "
        "from `/proc/<pid>/stat`, before the submit and after it succeeded) per row.",
        "",
        "| rows | seconds | rows/s | server CPU µs/row |",
        "| ---: | ---: | ---: | ---: |",
        f"| {rows:,} | {run.median:.2f} | {rate(run):,.0f} | {cpu:.2f} |",
    ]


def runtime_table(results: Results) -> list[str]:
    figures = [f for f in results.figures if f.section == RUNTIMES]
    offered = ", ".join(results.machine.get("docker_runtimes", [])) or "none seen"
    if not figures:
        reason = results.failures.get("runsc", "not run")
        return [
            "",
            "## runc and runsc (gVisor)",
            "",
            f"Not measured: {reason} (Docker offers: {offered}).",
        ]
    lines = [
        "",
        "## runc and runsc (gVisor)",
        "",
        "The same measurements under each OCI runtime, side by side.",
        "",
        "| measure | runc | runsc |",
        "| --- | ---: | ---: |",
    ]
    for name in ("cold start, 1 row", "warm, 1 row"):
        cells = []
        for runtime in ("runc", "runsc"):
            figure = results.find(RUNTIMES, name, runtime=runtime)
            cells.append(f"p50 {ms(figure.median)}, p95 {ms(figure.p95)}" if figure else DASH)
        label = (
            "cold start, 1 row (a fresh container)"
            if name.startswith("cold")
            else "warm, 1 row (one open runner, REUSE=check where the build has it)"
        )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    rows = results.config.runsc_rows
    for runtime in ("runc", "runsc"):
        figure = results.find(RUNTIMES, "trivial rows", runtime=runtime)
        cells.append(f"{rate_cell(figure)} rows/s" if figure else DASH)
    lines.append(f"| trivial check, {rows:,} rows | " + " | ".join(cells) + " |")
    return lines


def profile_table(results: Results) -> list[str]:
    found = results.profile
    if not found:
        return []
    lines = [
        "",
        "## Where the host's time goes",
        "",
        f"A sampling profile (every thread, 5 ms) of this process while scorebox scored "
        f"{found['rows']:,} rows of the trivial check ({found['seconds']:.2f} s, "
        f"{found['samples']:,} busy thread samples; {found.get('idle', 0):,} more of threads "
        "parked on a lock or queue are left out). *Self*: the function was on top of a "
        "thread's stack (a thread waiting on a container shows the call it waits in); "
        "*total*: anywhere on it.",
        "",
        "| function | self | total |",
        "| --- | ---: | ---: |",
    ]
    for name, own, total in found["top"]:
        lines.append(f"| `{name}` | {own:.0%} | {total:.0%} |")
    return lines


def notes(results: Results) -> list[str]:
    lines = [
        "",
        "## How it was measured",
        "",
        "- One process runs everything in turn; `POST /v1/score` goes to a real `scorebox serve` "
        "on a loopback port (SQLite in a temporary data directory, tenant quota "
        f"`concurrent_jobs={results.config.clients}`).",
        "- Throughput: the rows exist before the clock starts; scorebox's runner is opened and has "
        "scored one row first, so the figure is the cost of scoring, results included. "
        "REUSE=never keeps one container per job (the model before warm per-check workers). "
        f"{SCORE_TABLE} gets the same rows as columns (one list per field the check takes) "
        "and returns numpy columns; every row must come back ok.",
        "- A fresh hardened container per call: scorebox with `pool_size=0` and `REUSE=never`.",
        "- Peers (their own virtualenv, `bench/setup_peers.sh`; a subprocess) use an image "
        "made from the sandbox image plus `python-is-python3` and `python3-venv` "
        "(llm-sandbox runs `python` and makes a venv when a session opens) and "
        "`sleep infinity` as its command (llm-sandbox execs into a running container). "
        "epicbox 1.1.0 needs `urllib3<2` and a writable root (it copies its files into "
        "`/sandbox`); it runs as uid 10001, llm-sandbox as root (its default); both "
        "without network. Their batch ships the rows as a JSON-lines file and loops over "
        "them in one call, returning every score.",
    ]
    for note in results.notes:
        lines.append(f"- {note}")
    if results.failures:
        lines += ["", "## Not measured in this run", ""]
        for label, why in results.failures.items():
            lines.append(f"- {label}: {why}")
    return lines


def chart(results: Results, path: Path) -> None:
    """latest.png: latency bars, throughput and cost per row as rows grow, peak memory."""
    import matplotlib  # type: ignore[import-not-found, unused-ignore]

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]

    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    ax = axes[0][0]
    present = [f for f in (_figure(results, LATENCY, n) for n in LATENCY_ORDER) if f is not None]
    present += [f for f in results.figures if f.section == RUNTIMES and f.kind == "latency"]
    labels = [
        f.name if f.section == LATENCY else f"{f.extra['runtime']}: {f.name}" for f in present
    ]
    p50 = [f.median for f in present]
    p95 = [f.p95 for f in present]
    y = list(range(len(present)))
    ax.barh(y, p50, color="tab:blue", label="p50")
    ax.scatter(p95, y, color="tab:red", marker="|", s=200, label="p95", zorder=3)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms per single-row call (log)")
    ax.set_title("Single-row latency")
    ax.legend(loc="lower right")
    styles = {"trivial": "-", "realistic": "--"}
    colors = dict(
        zip(
            SYSTEMS,
            ("black", "tab:green", "tab:blue", "tab:olive", "tab:orange", "tab:purple"),
            strict=True,
        )
    )
    for kind, style in styles.items():
        for system in SYSTEMS:
            points = sorted(
                (int(f.extra["rows"]), f)
                for f in results.figures
                if f.section == THROUGHPUT and f.name == system and f.extra["kind"] == kind
            )
            if not points:
                continue
            xs = [n for n, _ in points]
            axes[0][1].plot(
                xs,
                [rate(f) for _, f in points],
                style,
                marker="o",
                color=colors[system],
                label=f"{system} ({kind})",
            )
            axes[1][0].plot(
                xs,
                [us_per_row(f) for _, f in points],
                style,
                marker="o",
                color=colors[system],
                label=f"{system} ({kind})",
            )
    for ax, title, unit in (
        (axes[0][1], "Throughput", "rows/s (log)"),
        (axes[1][0], "Cost per row as rows grow", "µs per row (log)"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows (log)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    ax = axes[1][1]
    for system in (REUSE_CHECK, SCORE_TABLE, REUSE_NEVER, IN_PROCESS):
        for kind, style in styles.items():
            memory = sorted(
                (int(f.extra["rows"]), float(f.extra["peak_rss_mb"]))
                for f in results.figures
                if f.section == THROUGHPUT
                and f.name == system
                and f.extra["kind"] == kind
                and "peak_rss_mb" in f.extra
            )
            if memory:
                ax.plot(
                    [n for n, _ in memory],
                    [mb for _, mb in memory],
                    style,
                    marker="o",
                    color=colors[system],
                    label=f"{system} ({kind})",
                )
    ax.set_xscale("log")
    ax.set_xlabel("rows (log)")
    ax.set_ylabel("peak RSS of the host process, MB")
    ax.set_title("Host memory")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    date = results.machine.get("date", "")
    fig.suptitle(
        f"scorebox `{COMMAND}`, {date}, {results.machine.get('cores', '?')} cores (shared)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(results: Results, out_dir: Path, with_chart: bool = True) -> list[Path]:
    """Write latest.md, latest.json and (with matplotlib) latest.png into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    md = out_dir / "latest.md"
    md.write_text(render(results))
    written.append(md)
    raw = out_dir / "latest.json"
    raw.write_text(
        json.dumps(
            {
                "machine": results.machine,
                "figures": [f.to_dict() for f in results.figures],
                "failures": results.failures,
                "distributed": results.distributed,
                "online": results.online,
                "profile": results.profile,
                "targets": [t.__dict__ for t in targets(results)],
            },
            indent=1,
            default=str,
        )
    )
    written.append(raw)
    if with_chart:
        png = out_dir / "latest.png"
        chart(results, png)
        written.append(png)
    return written
