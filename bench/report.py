"""``latest.md`` (tables, targets), ``latest.png`` (chart) and ``latest.json`` from one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.cells import (
    COMMAND,
    DASH,
    HOST_CPU_SYSTEMS,
    LATENCY_ORDER,
    SYSTEMS,
    TIMES,
    batch_line,
    figure_of,
    ms,
    rate,
    rate_cell,
    us_per_row,
)
from bench.chart import chart
from bench.suite import (
    IN_PROCESS,
    LAT_FRESH,
    LAT_GATEWAY,
    LAT_SCORE_CONCURRENT,
    LATENCY,
    REUSE_CHECK,
    RUNTIMES,
    SCORE_TABLE,
    SERVICE,
    SERVICE_RUN,
    THROUGHPUT,
    Results,
)
from bench.targets import targets


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
    fresh = figure_of(results, LATENCY, LAT_FRESH)
    for name in LATENCY_ORDER:
        figure = figure_of(results, LATENCY, name)
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
        "Cost per row (µs of wall time, median) as rows grow; the CPU the host process that "
        f"scored spent per row (µs, user and system, every thread: `time.process_time()`) for "
        f"{' and '.join(HOST_CPU_SYSTEMS)}; and the peak resident memory of that process "
        f"while scoring (each {SCORE_TABLE} run is a fresh process of its own; the others "
        "run in the bench's process):",
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
    run = figure_of(results, SERVICE, SERVICE_RUN)
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


def read_previous(out_dir: Path) -> dict[str, Any] | None:
    """The last run's ``latest.json`` in ``out_dir`` (None: none, or not readable)."""
    try:
        found = json.loads((out_dir / "latest.json").read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("figures"), list) else None


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
