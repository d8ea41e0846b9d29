"""``latest.png``: the chart of one run."""

from __future__ import annotations

from pathlib import Path

from bench.cells import (
    COMMAND,
    LATENCY_ORDER,
    SYSTEMS,
    figure_of,
    rate,
    us_per_row,
)
from bench.suite import (
    IN_PROCESS,
    LATENCY,
    REUSE_CHECK,
    REUSE_NEVER,
    RUNTIMES,
    SCORE_TABLE,
    THROUGHPUT,
    Results,
)


def chart(results: Results, path: Path) -> None:
    """latest.png: latency bars, throughput and cost per row as rows grow, peak memory."""
    import matplotlib  # type: ignore[import-not-found, unused-ignore]

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]

    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    ax = axes[0][0]
    present = [f for f in (figure_of(results, LATENCY, n) for n in LATENCY_ORDER) if f is not None]
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
            for ax, value in ((axes[0][1], rate), (axes[1][0], us_per_row)):
                ax.plot(
                    xs,
                    [value(f) for _, f in points],
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
