"""A server-side SVG line chart over time, with axes: a rule's pass rate and mean score
per time bucket, one line per check version (pure: values in, a string out).

The y axis runs 0 to 1 for rates, or over the values' range for means; the x axis is
labelled with the buckets' UTC times. Every point carries a ``<title>`` with its bucket,
value and count, so the figure reads on hover and to a screen reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from engine.web.charts import AXIS_COLOUR, FONT, GRID_COLOUR, fmt

WIDTH = 640
HEIGHT = 220
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 22, 34
COLOURS = ("#3182ce", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795")


@dataclass(frozen=True)
class Line:
    """One line: its name and its points (bucket start in ns, value or None, count)."""

    name: str
    points: Sequence[tuple[int, float | None, int]]


def _time(ns: int, width_ns: int) -> str:
    moment = datetime.fromtimestamp(ns / 1e9, UTC)
    return moment.strftime("%H:%M" if width_ns < 86_400 * 10**9 else "%m-%d")


def line_svg(
    title: str,
    lines: Sequence[Line],
    start_ns: int,
    end_ns: int,
    bucket_ns: int,
    *,
    rate: bool,
) -> str:
    """The chart: ``rate`` fixes the y axis to 0..1 and labels it in percent."""
    values = [v for line in lines for _, v, _ in line.points if v is not None]
    low, high = (0.0, 1.0) if rate else (min(values, default=0.0), max(values, default=1.0))
    if high == low:
        low, high = low - 0.5, high + 0.5
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = max(end_ns - start_ns, 1)

    def x(ns: int) -> float:
        return LEFT + plot_w * (ns - start_ns) / span

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - low) / (high - low))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{LEFT}" y="14" {FONT}>{escape(title)}</text>',
    ]
    for i in range(5):  # y grid and labels
        v = low + (high - low) * i / 4
        label = f"{v * 100:.0f}%" if rate else fmt(v)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'stroke="{GRID_COLOUR}"/>'
            f'<text x="{LEFT - 4}" y="{y(v) + 3:.1f}" text-anchor="end" {FONT}>{label}</text>'
        )
    ticks = 6
    for i in range(ticks + 1):  # x labels
        ns = start_ns + span * i // ticks
        parts.append(
            f'<text x="{x(ns):.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" {FONT}>'
            f"{_time(ns, span)}</text>"
        )
    parts.append(
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}" '
        f'stroke="{AXIS_COLOUR}"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" '
        f'y2="{TOP + plot_h}" stroke="{AXIS_COLOUR}"/>'
    )
    for n, line in enumerate(lines):
        colour = COLOURS[n % len(COLOURS)]
        shown = [(ns, v, c) for ns, v, c in line.points if v is not None]
        centre = bucket_ns // 2
        if len(shown) > 1:
            path = " ".join(f"{x(ns + centre):.1f},{y(v):.1f}" for ns, v, _ in shown)
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>'
            )
        for ns, v, count in shown:
            value = f"{v * 100:.1f}%" if rate else fmt(v)
            when = datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M")
            parts.append(
                f'<circle cx="{x(ns + centre):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(line.name)}, {when} UTC: {value} of {count}</title></circle>"
            )
        parts.append(
            f'<text x="{LEFT + 8 + 150 * n}" y="{HEIGHT - 4}" fill="{colour}" font-size="10">'
            f"■ {escape(line.name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
