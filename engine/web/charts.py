"""Server-side SVG charts: no JavaScript, nothing fetched, readable by screen readers.

Every chart has axes with counts; every bar carries a ``<title>`` (the browser shows it on
hover: a bin's edges and its count). A run's page draws, per check, the scores of its ok
rows (a histogram, or pass/fail bars with counts and percentages for a bool check) and,
apart, its results per status. The compare page overlays two runs in one chart per check.
Pure functions of the summary: strings in, strings out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 380
HEIGHT = 190
STATUS_COLOURS = {"ok": "#2f855a", "skipped": "#a0aec0"}
FAIL_COLOUR = "#c53030"
SCORE_COLOUR = "#3182ce"
#: The two runs of a comparison: A (baseline), B (candidate).
RUN_COLOURS = ("#3182ce", "#dd6b20")
AXIS_COLOUR = "#4a5568"
GRID_COLOUR = "#e2e8f0"
FONT = 'font-size="10" fill="#2d3748"'

# The plot area inside a chart: room on the left for the count axis, below for labels.
LEFT = 40
RIGHT = 10
TOP = 18
BOTTOM = 34
#: A legend gets a band of its own above the plot, so a bar's label never runs under it.
LEGEND_BAND = 16


def fmt(value: float) -> str:
    """A score for a label: three significant digits."""
    return f"{value:.3g}"


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def nice_ticks(top: int, most: int = 5) -> list[int]:
    """Count-axis ticks from 0 to at least ``top``, in steps of 1, 2 or 5 times a power of 10."""
    top = max(top, 1)
    raw = top / (most - 1)
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(int(step), 1)
    count = math.ceil(top / step)
    return [i * step for i in range(count + 1)]


@dataclass(frozen=True)
class Bar:
    """One bar: where it starts and ends on the x axis (0..1), its height, colour, hover text."""

    x0: float
    x1: float
    count: int
    colour: str
    title: str
    label: str | None = None  # drawn above the bar
    outline: bool = False  # drawn as an outline (the second run of an overlay)


def _open(title: str, width: int, height: int) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" class="chart">',
        f"<title>{escape(title)}</title>",
    ]


def _count_axis(
    top: int, width: int, height: int, label: str, margin: int = TOP
) -> tuple[list[str], int]:
    """Gridlines and tick labels of the count (y) axis; returns them and the axis's top.
    ``margin``: the plot's top edge (room for the bars' labels, and the legend's band)."""
    ticks = nice_ticks(top)
    high = ticks[-1]
    plot_h = height - margin - BOTTOM
    parts = []
    for tick in ticks:
        y = margin + plot_h * (1 - tick / high)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{width - RIGHT}" y2="{y:.1f}" '
            f'stroke="{GRID_COLOUR}"/>'
            f'<text x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end" {FONT} '
            f'class="tick-y">{tick}</text>'
        )
    parts.append(
        f'<line x1="{LEFT}" y1="{margin}" x2="{LEFT}" y2="{height - BOTTOM}" '
        f'stroke="{AXIS_COLOUR}"/>'
        f'<line x1="{LEFT}" y1="{height - BOTTOM}" x2="{width - RIGHT}" y2="{height - BOTTOM}" '
        f'stroke="{AXIS_COLOUR}"/>'
        f'<text x="10" y="{margin + plot_h / 2:.1f}" {FONT} text-anchor="middle" '
        f'transform="rotate(-90 10 {margin + plot_h / 2:.1f})">{escape(label)}</text>'
    )
    return parts, high


def _bars(bars: Sequence[Bar], high: int, width: int, height: int, margin: int = TOP) -> list[str]:
    plot_w = width - LEFT - RIGHT
    plot_h = height - margin - BOTTOM
    parts = []
    for bar in bars:
        x = LEFT + plot_w * bar.x0
        w = max(plot_w * (bar.x1 - bar.x0) - 1, 1)
        h = plot_h * bar.count / high
        y = margin + plot_h - h
        paint = (
            f'fill="none" stroke="{bar.colour}" stroke-width="2"'
            if bar.outline
            else f'fill="{bar.colour}"'
        )
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f"{paint}><title>{escape(bar.title)}</title></rect>"
        )
        if bar.label is not None:
            parts.append(
                f'<text x="{x + w / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" {FONT} '
                f'class="bar-label">{escape(bar.label)}</text>'
            )
    return parts


def _x_labels(labels: Sequence[tuple[float, str]], width: int, height: int) -> list[str]:
    """Labels under the x axis at positions 0..1, each with a tick mark."""
    plot_w = width - LEFT - RIGHT
    base = height - BOTTOM
    parts = []
    for at, text in labels:
        x = LEFT + plot_w * at
        anchor = "start" if at <= 0.02 else "end" if at >= 0.98 else "middle"
        parts.append(
            f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="{AXIS_COLOUR}"/>'
            f'<text x="{x:.1f}" y="{base + 15}" text-anchor="{anchor}" {FONT} '
            f'class="tick-x">{escape(text)}</text>'
        )
    return parts


def _legend(items: Sequence[tuple[str, str, bool]], width: int) -> list[str]:
    """Swatches (filled, or outlined) with their text, left to right above the plot."""
    parts = []
    x = float(LEFT)
    for colour, text, outline in items:
        paint = f'fill="none" stroke="{colour}" stroke-width="2"' if outline else f'fill="{colour}"'
        parts.append(
            f'<rect x="{x:.1f}" y="4" width="9" height="9" {paint} class="legend"/>'
            f'<text x="{x + 12:.1f}" y="12" {FONT} class="legend">{escape(text)}</text>'
        )
        x += 16 + 6 * len(text)
    return parts


def chart(
    title: str,
    bars: Sequence[Bar],
    x_labels: Sequence[tuple[float, str]],
    *,
    x_title: str,
    y_title: str = "rows",
    legend: Sequence[tuple[str, str, bool]] = (),
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """A bar chart with a count axis, x labels, an x-axis title and an optional legend (in
    a band of its own above the plot: the chart grows by :data:`LEGEND_BAND`)."""
    top = max((bar.count for bar in bars), default=0)
    margin = TOP + (LEGEND_BAND if legend else 0)
    height += margin - TOP
    parts = _open(title, width, height)
    axis, high = _count_axis(top, width, height, y_title, margin)
    parts += axis
    parts += _bars(bars, high, width, height, margin)
    parts += _x_labels(x_labels, width, height)
    parts.append(
        f'<text x="{LEFT + (width - LEFT - RIGHT) / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle" {FONT}>{escape(x_title)}</text>'
    )
    parts += _legend(legend, width)
    parts.append("</svg>")
    return "".join(parts)


# ---- the run page ------------------------------------------------------------------------


def bin_edges(bins: Sequence[tuple[float, int]], high: float | None) -> list[tuple[float, float]]:
    """Each bin's (lower, upper) edge: the next bin's lower edge; the last one's is ``high``."""
    lows = [low for low, _ in bins]
    if not lows:
        return []  # no ok score: a check whose every row erred has no bins
    uppers = [*lows[1:], high if high is not None else lows[-1]]
    return list(zip(lows, uppers, strict=True))


def _edge_labels(edges: Sequence[tuple[float, float]]) -> list[tuple[float, str]]:
    """Value labels at the ends and quarter points of a histogram's bins."""
    n = len(edges)
    if n == 0:
        return []
    if n == 1 or edges[0][0] == edges[-1][1]:
        return [(0.5, fmt(edges[0][0]))]
    picks = sorted({0, n // 4, n // 2, 3 * n // 4})
    labels = [(i / n, fmt(edges[i][0])) for i in picks]
    return [*labels, (1.0, fmt(edges[-1][1]))]


def _bin_title(lower: float, upper: float, last: bool, count: int, what: str = "") -> str:
    rows = "row" if count == 1 else "rows"
    if lower == upper:
        return f"{what}score {fmt(lower)}: {count} {rows}"
    close = "]" if last else ")"
    return f"{what}scores [{fmt(lower)}, {fmt(upper)}{close}: {count} {rows}"


def histogram_svg(check: str, bins: Sequence[tuple[float, int]], high: float | None) -> str:
    """The distribution of a check's ok numeric scores: ``bins`` are (lower edge, count)."""
    edges = bin_edges(bins, high)
    n = max(len(bins), 1)
    bars = [
        Bar(i / n, (i + 1) / n, count, SCORE_COLOUR, _bin_title(lo, up, i == n - 1, count))
        for i, ((lo, up), (_, count)) in enumerate(zip(edges, bins, strict=True))
    ]
    return chart(
        f"score distribution of {check}", bars, _edge_labels(edges), x_title="score (ok rows)"
    )


def pass_fail_svg(check: str, passed: int, failed: int) -> str:
    """A bool check's ok rows: pass and fail bars, each with its count and share."""
    ok = passed + failed
    bars = [
        Bar(
            0.15,
            0.45,
            passed,
            STATUS_COLOURS["ok"],
            f"pass: {passed} of {ok} ok rows ({pct(passed, ok)})",
            f"{passed} ({pct(passed, ok)})",
        ),
        Bar(
            0.55,
            0.85,
            failed,
            FAIL_COLOUR,
            f"fail: {failed} of {ok} ok rows ({pct(failed, ok)})",
            f"{failed} ({pct(failed, ok)})",
        ),
    ]
    return chart(
        f"pass and fail of {check}",
        bars,
        [(0.3, "pass"), (0.7, "fail")],
        x_title="score (ok rows)",
        width=260,
    )


def status_svg(check: str, counts: dict[str, int]) -> str:
    """Results per status, ok first: a chart of its own, apart from the scores."""
    ordered = sorted(counts.items(), key=lambda kv: (kv[0] != "ok", kv[0]))
    total = sum(counts.values())
    n = max(len(ordered), 1)
    bars = [
        Bar(
            (i + 0.15) / n,
            (i + 0.85) / n,
            count,
            STATUS_COLOURS.get(status, FAIL_COLOUR),
            f"{status}: {count} of {total} results ({pct(count, total)})",
            str(count),
        )
        for i, (status, count) in enumerate(ordered)
    ]
    labels = [((i + 0.5) / n, status) for i, (status, _) in enumerate(ordered)]
    width = max(200, min(WIDTH, 80 + 60 * n))
    return chart(f"statuses of {check}", bars, labels, x_title="status", width=width)


# ---- the compare page: two runs in one chart ---------------------------------------------


@dataclass(frozen=True)
class RunScores:
    """What the compare chart needs of one run's check: its summary's numbers."""

    name: str  # "A" or "B"
    passed: int | None  # bool checks: ok rows that pass (None: not a bool check)
    ok: int
    bins: Sequence[tuple[float, int]]
    high: float | None


def compare_svg(check: str, a: RunScores, b: RunScores) -> str:
    """Both runs' scores of one check, overlaid: pass/fail pairs, or two histograms on one
    value axis (A filled, B drawn over it as an outline)."""
    legend = [(RUN_COLOURS[0], f"A ({a.ok} ok)", False), (RUN_COLOURS[1], f"B ({b.ok} ok)", False)]
    if a.passed is not None or b.passed is not None:
        bars = []
        for side, (run, colour) in enumerate(((a, RUN_COLOURS[0]), (b, RUN_COLOURS[1]))):
            passed = run.passed or 0
            for group, (what, count) in enumerate((("pass", passed), ("fail", run.ok - passed))):
                x0 = 0.1 + group * 0.45 + side * 0.17
                bars.append(
                    Bar(
                        x0,
                        x0 + 0.16,
                        count,
                        colour,
                        f"{run.name} {what}: {count} of {run.ok} ok rows ({pct(count, run.ok)})",
                        pct(count, run.ok),
                    )
                )
        return chart(
            f"pass and fail of {check}, A and B",
            bars,
            [(0.265, "pass"), (0.715, "fail")],
            x_title="score (ok rows)",
            legend=legend,
        )
    spans = [(run, bin_edges(run.bins, run.high)) for run in (a, b) if run.bins]
    if not spans:
        return chart(f"score distribution of {check}, A and B", [], [], x_title="score")
    low = min(edges[0][0] for _, edges in spans)
    high = max(edges[-1][1] for _, edges in spans)
    span = (high - low) or 1.0
    bars = []
    for run, edges in spans:
        colour = RUN_COLOURS[0] if run is a else RUN_COLOURS[1]
        last = len(edges) - 1
        for i, ((lo, up), (_, count)) in enumerate(zip(edges, run.bins, strict=True)):
            x0 = (lo - low) / span
            x1 = max((up - low) / span, x0 + 0.01)
            title = _bin_title(lo, up, i == last, count, f"{run.name} ")
            bars.append(Bar(x0, x1, count, colour, title, outline=run is b))
    labels = [(i / 4, fmt(low + span * i / 4)) for i in range(5)]
    if high == low:
        labels = [(0.5, fmt(low))]
    return chart(
        f"score distribution of {check}, A and B",
        bars,
        labels,
        x_title="score (ok rows)",
        legend=[legend[0], (RUN_COLOURS[1], f"B ({b.ok} ok)", True)],
    )
